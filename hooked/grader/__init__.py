"""The grading engine: how many workers and which lessons each grades (plan), the worker processes that
run learner code with a time limit (engine, worker) and how they start (worker_processes, zygote), which
check grades which exercise (check_registry), one check turned into a verdict (check_runner), what
learner code must not change (tamper_guard), the named mistakes (named_mistakes), and what each lesson's
grading costs (cost). Never imported by the checks."""
