"""Grades lesson 13, "Hooks in distributed training": one test per exercise, in the course manifest's
order. Written by `python -m hooked generate` from solutions/13_distributed_hooks.py; change that,
not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("13_distributed_hooks"))
