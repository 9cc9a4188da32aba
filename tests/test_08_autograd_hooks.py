"""Grades lesson 08, autograd-level hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_fuse_sgd_into_backward = exercise_test("08_autograd_hooks", "fuse_sgd_into_backward")
test_call_when_all_grads_ready = exercise_test("08_autograd_hooks", "call_when_all_grads_ready")
test_HalfPrecisionSaver = exercise_test("08_autograd_hooks", "HalfPrecisionSaver")
