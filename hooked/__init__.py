"""Hooked: the machinery of a hands-on course on PyTorch hooks.

At the top, what other code names: the lessons' imports (notebook, digits, two_ranks,
distributed_workers), the entry points (__main__ for `hooked` and `python -m hooked`,
pytest_plugin) and the course manifest (course). The packages, by job:
  lesson_files  reading the lesson files (the manifest, course, is built on it)
  feedback      verdicts, hints, progress, reports and Gradescope's file
  checks        each lesson's checks and what they are written with
  grader        running learner code and checks in worker processes
  class_grading grading a whole class: its submissions, one run, its results and report
  command       the `hooked` command, and generating lessons/ from solutions/
Each imports only the manifest and the packages above it in this list, never one below it.

Kept free of heavy imports: pytest's main process imports this package and must
stay fast, while torch is imported only where checks run.
"""

__version__ = "0.1.0"
