"""Grades lesson 10, state-dict and optimizer hooks: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("10_state_dict_and_optimizer_hooks"))
