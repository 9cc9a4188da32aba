"""The checks: one module per lesson, `lesson_NN_slug.py` (the manifest's `Lesson.checks_module`),
in which each check is registered as the check of one exercise, by the name the exercise's heading
in solutions/ gives it: `@check_of("double_grad")` above the function, with `budget_ms=` and `why=`
for a check allowed more than the grading budget; a prediction exercise's check is registered by
`prediction_check(...)`. The manifest gives the order (tests/course/test_course_manifest.py fails
when an exercise has no check, a check names no exercise of its lesson, or an exercise has two).
Beside them, what checks are written with: `check_api` (registering a check, calling the learner's
code, failing with a message) and the shared pieces (tensors, handles, hooks left behind, seeds,
trained models). The grader (hooked.grader) finds and runs them."""
