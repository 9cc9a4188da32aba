"""Reading the course's lesson files, below the manifest (hooked.course, which reads solutions/ with
them): the lesson format in one place (lesson_format: cells, tags, exercise headings, the names a cell
defines), solution markers turned into stubs, the learner's own lesson (.py or paired .ipynb) read
without running it, and how a lesson file and line are named in messages (display_paths). Nothing here
imports the manifest."""
