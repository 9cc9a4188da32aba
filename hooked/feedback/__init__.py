"""What grading tells people: the verdict on an exercise, the feedback line, progress table and JSON report
(progress), Gradescope's results.json, and how the learner's files, lines and tracebacks are named."""
