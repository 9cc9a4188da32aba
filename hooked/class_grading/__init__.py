"""Grading a whole class: every learner's lessons graded in one run, its results files and its report."""
