"""Grades lesson 10, "State-dict and optimizer hooks": one test per exercise, in the course manifest's
order. Written by `python -m hooked generate` from solutions/10_state_dict_and_optimizer_hooks.py;
change that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("10_state_dict_and_optimizer_hooks"))
