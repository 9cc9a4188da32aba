"""Grades lesson 06, a CNN's feature maps and Grad-CAM: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("06_cnn_activations"))
