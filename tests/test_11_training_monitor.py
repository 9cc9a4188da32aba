"""Grades lesson 11, "Capstone: a training monitor": one test per exercise, in the course manifest's
order. Written by `python -m hooked generate` from solutions/11_training_monitor.py; change that,
not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("11_training_monitor"))
