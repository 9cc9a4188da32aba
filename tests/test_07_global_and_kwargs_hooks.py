"""Grades lesson 07, global and keyword hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("07_global_and_kwargs_hooks"))
