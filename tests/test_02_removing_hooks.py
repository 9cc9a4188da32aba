"""Grades lesson 02, "Removing hooks and keeping them tidy": one test per exercise, in the course
manifest's order. Written by `python -m hooked generate` from solutions/02_removing_hooks.py; change
that, not this file."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("02_removing_hooks"))
