"""Grades lesson 07, "Hooks everywhere: global hooks, keyword arguments, `prepend`, `always_call`": one
test per exercise, in the course manifest's order. Written by `python -m hooked generate` from
solutions/07_global_and_kwargs_hooks.py; change that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("07_global_and_kwargs_hooks"))
