"""Grades lesson 09, pitfalls and debugging: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_grad_before_inplace_relu = exercise_test("09_pitfalls", "grad_before_inplace_relu")
test_find_registered_hooks = exercise_test("09_pitfalls", "find_registered_hooks")
test_remove_all_hooks = exercise_test("09_pitfalls", "remove_all_hooks")
