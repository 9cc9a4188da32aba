"""Grades lesson 02, removing hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("02_removing_hooks"))
