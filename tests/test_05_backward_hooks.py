"""Grades lesson 05, backward hooks on modules: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("05_backward_hooks"))
