"""Grades lesson 03, "Forward pre-hooks": one test per exercise, in the course manifest's order.
Written by `python -m hooked generate` from solutions/03_forward_pre_hooks.py; change that, not this
file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("03_forward_pre_hooks"))
