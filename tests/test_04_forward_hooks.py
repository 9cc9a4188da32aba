"""Grades lesson 04, forward hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_capture_activations = exercise_test("04_forward_hooks", "capture_activations")
test_track_relu_stats = exercise_test("04_forward_hooks", "track_relu_stats")
test_clamp_output = exercise_test("04_forward_hooks", "clamp_output")
