"""Grades lesson 06, "Inside a CNN: feature maps and Grad-CAM": one test per exercise, in the course
manifest's order. Written by `python -m hooked generate` from solutions/06_cnn_activations.py;
change that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("06_cnn_activations"))
