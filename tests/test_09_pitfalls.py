"""Grades lesson 09, "Pitfalls and debugging": one test per exercise, in the course manifest's order.
Written by `python -m hooked generate` from solutions/09_pitfalls.py; change that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("09_pitfalls"))
