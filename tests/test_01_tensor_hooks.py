"""Grades lesson 01, tensor hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("01_tensor_hooks"))
