"""What grading tells people: the verdict on an exercise, the feedback line, progress table and JSON report
(progress), the hints of each exercise, Gradescope's results.json, and the learner's part of a traceback."""
