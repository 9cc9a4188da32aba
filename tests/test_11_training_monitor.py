"""Grades lesson 11, the capstone training monitor: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("11_training_monitor"))
