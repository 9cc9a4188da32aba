"""How many grading workers to start, and which lessons each one grades, so that
they finish together. Never imports torch."""

import functools
import importlib.util
import os
import pathlib

from hooked import course

WORKERS_VARIABLE = "HOOKED_GRADING_WORKERS"  # a whole number: that many workers, whatever the load

# What a lesson costs to grade, in ms on one core: loading its cells, then each check (15 ms,
# or, for a check allowed more than the budget of hooked.grader.cost, such as the first
# DistributedDataParallel of a run, the budget_ms its check_of gives). benchmarks/grading_time.py
# measures the real costs.
_LOAD_MS = 5
_CHECK_MS = 15


def usable_cores():
    """The cores this process may run on (a container or `taskset` may allow fewer than the machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def busy_cores():
    """How many cores other work keeps busy (Linux; elsewhere 0): the processes running at this
    moment besides this one, but no more than the load average of the last minute says, since
    a single moment may catch a short job, and no fewer than 0."""
    try:
        with open("/proc/loadavg", encoding="ascii") as file:
            fields = file.read().split()
        running, last_minute = int(fields[3].split("/")[0]) - 1, float(fields[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, min(running, round(last_minute)))


def worker_count(lesson_count):
    """One worker per idle core, at least one, never more than there are lessons to grade (a
    lesson's exercises share the namespace its cells ran in, so one worker grades all of
    them). Each worker imports torch, a second of CPU: on cores that other work keeps busy, a
    second worker waits for a core and the run takes longer than with one (measured with
    benchmarks/grading_time.py at load average 4 on 2 cores: 3.05 s with 2 workers, 2.42 s with 1)."""
    text = os.environ.get(WORKERS_VARIABLE, "")
    wanted = int(text) if text.strip().isdigit() and int(text) > 0 else usable_cores() - busy_cores()
    return max(1, min(wanted, lesson_count))


def estimated_cost(lesson, exercises):
    """ms to grade `exercises` (names) of the lesson named `lesson`, so that a lesson with a
    costly check weighs what it costs."""
    budgets = declared_budgets_of(lesson)
    return _LOAD_MS + sum(budgets.get(exercise, _CHECK_MS) for exercise in exercises)


@functools.lru_cache(maxsize=None)
def declared_budgets_of(lesson):
    """{exercise: ms} of the checks of the lesson named `lesson` allowed more than the budget, read from
    the text of its checks module: importing it would import torch."""
    from hooked.checks.check_api import declared_budgets
    spec = importlib.util.find_spec(course.checks_module_name(lesson))
    if spec is None or not spec.origin:
        return {}
    return declared_budgets(pathlib.Path(spec.origin).read_text(encoding="utf-8"))


def assign(plan, workers):
    """[[(lesson, exercise), ...] per worker]: the (lesson, exercise) pairs of `plan`, each
    lesson whole on one worker, the costliest lessons placed first on the least loaded
    worker, and each worker's pairs in the order of `plan`."""
    exercises = {}
    for lesson, exercise in plan:
        exercises.setdefault(lesson, []).append(exercise)
    costs = {lesson: estimated_cost(lesson, names) for lesson, names in exercises.items()}
    loads = [0.0] * workers
    worker_of = {}
    for lesson in sorted(costs, key=lambda name: -costs[name]):
        emptiest = loads.index(min(loads))
        worker_of[lesson] = emptiest
        loads[emptiest] += costs[lesson]
    shares = [[] for _ in range(workers)]
    for lesson, exercise in plan:
        shares[worker_of[lesson]].append((lesson, exercise))
    return shares
