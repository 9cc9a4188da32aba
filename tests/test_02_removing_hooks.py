"""Grades lesson 02, removing hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_grad_with_temporary_hook = exercise_test("02_removing_hooks", "grad_with_temporary_hook")
test_HookGroup = exercise_test("02_removing_hooks", "HookGroup")
test_register_named_hook = exercise_test("02_removing_hooks", "register_named_hook")
