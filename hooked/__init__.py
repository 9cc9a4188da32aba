"""Hooked: the machinery of a hands-on course on PyTorch hooks.

At the top, what other code names: the lessons' imports (notebook, digits, two_ranks,
distributed_workers), the entry points (__main__ for `hooked` and `python -m hooked`,
pytest_plugin) and the course manifest (course). The packages, by job:
  lesson_files  reading and generating the lesson files
  checks        each lesson's checks and what they are written with
  grader        running learner code and checks in worker processes
  feedback      verdicts, progress, reports and Gradescope's file
  command       the `hooked` command

Kept free of heavy imports: pytest's main process imports this package and must
stay fast, while torch is imported only where checks run.
"""

__version__ = "0.1.0"
