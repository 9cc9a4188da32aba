"""Grades lesson 03, forward pre-hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("03_forward_pre_hooks"))
