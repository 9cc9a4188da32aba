"""Grades lesson 01, tensor hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_double_grad = exercise_test("01_tensor_hooks", "double_grad")
test_make_scale_hook = exercise_test("01_tensor_hooks", "make_scale_hook")
test_make_clip_hook = exercise_test("01_tensor_hooks", "make_clip_hook")
test_record_grads = exercise_test("01_tensor_hooks", "record_grads")
