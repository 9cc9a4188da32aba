"""Grades lesson 05, "Backward hooks on modules": one test per exercise, in the course manifest's
order. Written by `python -m hooked generate` from solutions/05_backward_hooks.py; change that, not
this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("05_backward_hooks"))
