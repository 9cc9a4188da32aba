"""Grades lesson 01, "Tensor hooks": one test per exercise, in the course manifest's order. Written by
`python -m hooked generate` from solutions/01_tensor_hooks.py; change that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("01_tensor_hooks"))
