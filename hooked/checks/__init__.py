"""The checks: one module per lesson, `lesson_NN_slug.py` (the manifest's `Lesson.checks_module`),
in which each check is registered as the check of one exercise, by the name the exercise's heading
in solutions/ gives it: `@check_of("double_grad", mistakes={...})` above the function, with the named
mistakes its diagnoses recognize, and `budget_ms=` and `why=` for a check allowed more than the grading
budget; a long lesson's checks keep parts in `lesson_NN_<job>.py` beside it; a prediction exercise's check is registered by
`prediction_check(...)`. The manifest gives the order (tests/course/test_course_manifest.py fails
when an exercise has no check, a check names no exercise of its lesson, or an exercise has two).
Beside them, what checks are written with, a module per job:
  check_api            registering a check, calling the learner's code (`calling`), failing (`fail`) with
                       the slug of a named mistake
  tensors              random tensors from fixed seeds; `describe` and where two tensors first differ
  seeding              `seeded(seed, build)`: a module built under a seed, torch's random state kept
  handles              the handle(s) a function must return; hooks still registered; `remove_handles`
  isolation            torch's global state saved and restored around each check (the grader uses it too)
  hooks_left           the hooks on a model's modules and parameters, and the global ones
  planted_exceptions   an exception the check plants (in a model, a loss) must reach the caller
  torch_error_hints    `calling_with_hints`: `calling` that says what a known torch error means
  noise                noise judged by its statistics
  gradient_transforms  a hook that returns a new gradient
  event_predictions    predict-the-event-log exercises; recorded_logs keeps the logs they record
  all_reduce_race      lesson 13's ranks kept in step, so that a hook skipping a bucket is named
  optimizers           an optimizer without torch.optim's start-up cost
  grad_cam_reference, trained_digits_cnn, trained_tiny_transformer, lesson_training: the models and
                       references lessons 06 and 12 grade against
The grader (hooked.grader) finds and runs them."""
