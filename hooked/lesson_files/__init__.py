"""The course's lesson files: the percent format and exercise headings read from solutions/, solution
markers turned into stubs, hints, the learner's own lesson (.py or paired .ipynb) read without running it,
and lessons/ generated from solutions/ with backups of anything replaced."""
