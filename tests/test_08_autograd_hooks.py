"""Grades lesson 08, autograd-level hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("08_autograd_hooks"))
