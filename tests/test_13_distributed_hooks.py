"""Grades lesson 13, hooks in distributed training: one test per exercise, in the course manifest's order."""

from hooked.pytest_plugin import lesson_tests

globals().update(lesson_tests("13_distributed_hooks"))
