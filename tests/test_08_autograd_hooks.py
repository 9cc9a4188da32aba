"""Grades lesson 08, "Autograd-level hooks": one test per exercise, in the course manifest's order.
Written by `python -m hooked generate` from solutions/08_autograd_hooks.py; change that, not this
file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("08_autograd_hooks"))
