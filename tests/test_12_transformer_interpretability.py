"""Grades lesson 12, a transformer looked at with hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("12_transformer_interpretability"))
