"""Grades lesson 03, forward pre-hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_add_input_noise = exercise_test("03_forward_pre_hooks", "add_input_noise")
test_normalize_input = exercise_test("03_forward_pre_hooks", "normalize_input")
test_flatten_images = exercise_test("03_forward_pre_hooks", "flatten_images")
test_force_kwarg = exercise_test("03_forward_pre_hooks", "force_kwarg")
