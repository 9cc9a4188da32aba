"""The checks: one module per lesson, `lesson_NN_slug.py` (the manifest's `Lesson.checks_module`),
each with a dict `CHECKS = {exercise name: check function}` in the order the lesson teaches
them (tests/course/test_course_manifest.py holds CHECKS to the manifest's exercises), and what
they are written with: `check_api` (calling the learner's code, failing with a message) and the
shared pieces beside it (tensors, handles, hooks left behind, seeds, trained models).
The grader (hooked.grader) finds and runs them; nothing here imports the grader."""
