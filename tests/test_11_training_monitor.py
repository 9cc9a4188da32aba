"""Grades lesson 11, the capstone training monitor: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_record_activation_stats = exercise_test("11_training_monitor", "record_activation_stats")
test_track_grad_norms = exercise_test("11_training_monitor", "track_grad_norms")
test_TrainingMonitor = exercise_test("11_training_monitor", "TrainingMonitor")
