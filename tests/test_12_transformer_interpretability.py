"""Grades lesson 12, "Looking inside a transformer with hooks": one test per exercise, in the course
manifest's order. Written by `python -m hooked generate` from
solutions/12_transformer_interpretability.py; change that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("12_transformer_interpretability"))
