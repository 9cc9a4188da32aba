"""Grades lesson 04, forward hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("04_forward_hooks"))
