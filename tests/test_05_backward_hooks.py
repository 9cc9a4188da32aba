"""Grades lesson 05, backward hooks on modules: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_record_grad_output_norms = exercise_test("05_backward_hooks", "record_grad_output_norms")
test_clip_grad_input = exercise_test("05_backward_hooks", "clip_grad_input")
test_add_grad_noise = exercise_test("05_backward_hooks", "add_grad_noise")
