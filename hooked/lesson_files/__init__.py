"""The course's lesson files: the lesson format read in one place (lesson_format: cells, tags, exercise
headings, the names a cell defines), solution markers turned into stubs, hints, the learner's own lesson
(.py or paired .ipynb) read without running it, and lessons/ generated from solutions/ with backups of
anything replaced."""
