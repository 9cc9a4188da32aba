"""Grades lesson 09, pitfalls and debugging: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("09_pitfalls"))
