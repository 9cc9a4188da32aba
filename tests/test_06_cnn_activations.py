"""Grades lesson 06, a CNN's feature maps and Grad-CAM: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_get_activation = exercise_test("06_cnn_activations", "get_activation")
test_grad_cam = exercise_test("06_cnn_activations", "grad_cam")
