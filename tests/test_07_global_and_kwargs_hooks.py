"""Grades lesson 07, global and keyword hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_summarize_model = exercise_test("07_global_and_kwargs_hooks", "summarize_model")
test_find_first_nonfinite = exercise_test("07_global_and_kwargs_hooks", "find_first_nonfinite")
