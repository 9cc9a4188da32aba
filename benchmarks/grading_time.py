"""How long grading takes, next to the floor: `python -c "import torch"`; and what each
lesson costs to grade, against the budget a lesson must meet.

    python benchmarks/grading_time.py              # grading times, cost table, budget check
    python benchmarks/grading_time.py --notebooks  # also execute every notebook
    python benchmarks/grading_time.py --against ../old  # each command also on another checkout, side by side

Each command runs --repeat times (default 5) after one run not counted, the commands taking
turns, with Python's bytecode files kept as on a learner's machine, and the median counts. Goals (ratios to the floor): the whole course solved with `pytest --solutions` at
most 1.5x, fresh at most 1.5x; one lesson at most 1.3x; `hooked status` on a fresh copy at
most 1.3x; each notebook under 30 s. Then the cost of each lesson (load plus checks) and of
each exercise, in CPU time on one core, cold (the first grading in a fresh worker, as a run
pays it) and warm (hooked.grader.cost), and the lessons and checks whose cold cost is over
their budget; then each exercise's first check(...) in a fresh kernel (goal under
100 ms). Exit status 1 when a goal or a budget is missed.
"""

import argparse
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

from hooked.grader import cost as grading_cost
from hooked.course import ROOT, SOLUTIONS_DIR, lessons
from hooked.grader.plan import WORKERS_VARIABLE, usable_cores


def learners_environment(extra):
    """The environment of a learner's run: Python keeps its bytecode files (a machine that
    sets PYTHONDONTWRITEBYTECODE would otherwise compile the course at every run, in pytest's
    process and in each worker; the grader still keeps them out of the lessons folder)."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, **extra)


def checkout_environment(checkout):
    """What runs a command on the course in the folder `checkout` (None: this one): its folder and,
    for another checkout, the environment that imports its hooked before the installed one."""
    if checkout is None:
        return ROOT, {}
    return checkout, {"PYTHONPATH": str(checkout)}


def run_seconds(commands, repeat):
    """The times of each (command, extra environment, folder), after one run of each that is
    not counted (it writes the bytecode files). The commands take turns, so that a machine
    that gets busier or quieter during the run weighs on all of them alike."""
    times = [[] for _ in commands]
    for round_ in range(repeat + 1):
        for (command, env, folder), spent in zip(commands, times):
            started = time.perf_counter()
            subprocess.run(command, cwd=folder, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=learners_environment(env))
            if round_:
                spent.append(time.perf_counter() - started)
    return times


NOTEBOOK_CHECK_GOAL_MS = 100

# A fresh kernel, as far as check(...) can tell: a Python process that imports hooked.notebook,
# runs a lesson's exercise cells from solutions/, then calls check(...) once on each exercise.
# torch is imported first, as every lesson's first cells do (lesson 09's exercise cells alone do
# not import it, and its first check(...) would time torch's import, 0.7 s).
_KERNEL_SCRIPT = """
import torch
import contextlib, io, json, sys, time
from hooked.course import SOLUTIONS_DIR, lesson_named
from hooked.lesson_files.learner_lesson import compile_cell, load_lesson_source
from hooked.notebook import check
namespace = {"__name__": "__main__"}
with contextlib.redirect_stdout(io.StringIO()):
    for cell in load_lesson_source(SOLUTIONS_DIR, sys.argv[1]).cells:
        exec(compile_cell(cell), namespace)
spent = {}
for exercise in lesson_named(sys.argv[1]).exercise_names():
    shown = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(shown):
        check(namespace[exercise])
    spent[exercise] = (1000 * (time.perf_counter() - started), "passed." in shown.getvalue())
print(json.dumps(spent))
"""


def notebook_check_ms(lesson, checkout=None):
    """{exercise: (ms of its first check(...) in a fresh kernel, wall clock; whether it passed)}, with the
    course in the folder `checkout` (None: this one)."""
    import json
    folder, env = checkout_environment(checkout)
    output = subprocess.run([sys.executable, "-c", _KERNEL_SCRIPT, lesson], cwd=folder, capture_output=True,
                            text=True, check=True, env=learners_environment(env)).stdout
    return {exercise: tuple(value) for exercise, value in json.loads(output.splitlines()[-1]).items()}


def notebook_seconds(path):
    """(seconds to execute the notebook of `path`, {the call of each cell that calls check(...): its ms})."""
    import jupytext
    import nbclient
    notebook = jupytext.read(path)
    started = time.perf_counter()
    nbclient.NotebookClient(notebook, kernel_name="python3", timeout=600, record_timing=True,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    spent = time.perf_counter() - started
    checks = {}
    for cell in notebook.cells:
        calls = [line.strip() for line in cell.source.splitlines() if line.strip().startswith("check(")]
        if cell.cell_type == "code" and calls:
            timing = cell.metadata["execution"]
            checks[calls[-1]] = 1000 * (_moment(timing["shell.execute_reply"]) - _moment(timing["iopub.execute_input"]))
    return spent, checks


def _moment(stamp):
    import datetime
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            model = next(line.split(":", 1)[1].strip() for line in file if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{usable_cores()} cores usable ({os.cpu_count()} on the machine), {model}"


def load_average():
    try:
        return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "load average unknown"


def timing_rows(repeat, against=None):
    python = sys.executable
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    hooked = [python, "-m", "hooked"]
    first = lessons()[0].test_path.relative_to(ROOT).as_posix()  # tests/test_01_tensor_hooks.py
    one_worker = {WORKERS_VARIABLE: "1"}
    commands = [  # (name, command, extra environment, goal)
        ("floor: python -c 'import torch'", [python, "-c", "import torch"], {}, None),
        (f"one lesson, fresh: pytest {first}", pytest + [first], {}, 1.3),
        (f"one lesson, solved: pytest --solutions {first}", pytest + ["--solutions", first], {}, 1.3),
        ("whole course, fresh: pytest", pytest, {}, 1.5),
        ("whole course, solved: pytest --solutions", pytest + ["--solutions"], {}, 1.5),
        ("  the same in 1 worker (as before issue 18; for comparison)", pytest + ["--solutions"], one_worker, None),
        (f"  the same in {usable_cores()} workers, one per core whatever the load (for comparison)",
         pytest + ["--solutions"], {WORKERS_VARIABLE: str(usable_cores())}, None),
        # No run that grades lesson 13 can end much before this: its worker imports torch, then its first
        # DistributedDataParallel imports torch._dynamo, one after the other in one process (the worker
        # imports with the cyclic collector off, as here).
        ("  for comparison: import torch, then what a DDP imports, collector off",
         [python, "-c", "import gc; gc.disable(); import torch; import torch.nn.parallel.distributed; "
                        "import torch._dynamo.utils"], {}, None),
        ("whole course, fresh copy: hooked status", hooked + ["status"], {}, 1.3),
        ("whole course, solved: hooked status --lessons-dir solutions",
         hooked + ["status", "--lessons-dir", "solutions"], {}, 1.5),
    ]
    rows = [(name, command, env, ROOT, goal) for name, command, env, goal in commands]
    if against is not None:  # each command of the course once more on the other checkout, right below it
        rows = [twin for row in rows for twin in _with_twin(row, against)]
    runs = run_seconds([(command, env, folder) for _, command, env, folder, _ in rows], repeat)
    return [(name, spent, goal) for (name, _, _, _, goal), spent in zip(rows, runs)]


def _with_twin(row, checkout):
    """`row`, and the same command on `checkout`, unless it runs no code of the course (the floor)."""
    name, command, env, _, goal = row
    if "import torch" in " ".join(command):
        return [row]
    folder, extra = checkout_environment(checkout)
    return [row, (f"  the same on {folder}", command, dict(env, **extra), folder, None)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--notebooks", action="store_true", help="also time each notebook's execution")
    parser.add_argument("--against", type=pathlib.Path, metavar="DIR",
                        help="another checkout of the course (e.g. a git worktree of main): each grading command "
                             "and each first check(...) also runs on it, taking turns, to compare")
    arguments = parser.parse_args()
    if arguments.repeat < 1:
        parser.error(f"--repeat {arguments.repeat}: give a whole number of 1 or more")
    if arguments.against is not None and not (arguments.against / "hooked" / "course.py").is_file():
        parser.error(f"--against {arguments.against}: give the folder of another checkout of the course "
                     "(it holds hooked/course.py)")

    print(f"{machine()}; before: {load_average()}")
    against = None if arguments.against is None else arguments.against.resolve()
    rows = timing_rows(arguments.repeat, against)
    print(f"median of {arguments.repeat} runs each (after one not counted), bytecode files kept as on a learner's "
          f"machine, {sys.executable}; after: {load_average()}")
    print(f"{'command':<72} {'seconds':>8} {'ratio':>6}  {'goal':<11} each run")
    floor = statistics.median(rows[0][1])
    failed = False
    for name, spent, goal in rows:
        value = statistics.median(spent)
        ratio = value / floor
        verdict = "" if goal is None else f"<= {goal:.1f} {'ok' if ratio <= goal else 'MISSED'}"
        failed |= goal is not None and ratio > goal
        print(f"{name:<72} {value:>8.2f} {ratio:>6.2f}  {verdict:<11} {' '.join(f'{run:.2f}' for run in spent)}")

    print(f"\ncost of grading each lesson of solutions/ (CPU ms on one core; cold: the first grading in a fresh "
          f"worker, the recorded prediction logs kept from an earlier run; 1st run: cold with none kept yet; warm: "
          f"median of 3 more; the budget judges cold:  {grading_cost.LOAD_BUDGET_MS} ms a load, {grading_cost.CHECK_BUDGET_MS} ms a check)")
    costs = grading_cost.measure()
    for line in grading_cost.table_lines(costs):
        print(line)
    over = grading_cost.over_budget(costs)
    for line in over:
        print(f"OVER BUDGET: {line}")
    print("budget: every lesson and check within it" if not over else f"budget: {len(over)} over")
    failed |= bool(over)

    print(f"\nthe first check(...) of each exercise in a fresh kernel (ms, wall clock; goal under "
          f"{NOTEBOOK_CHECK_GOAL_MS} ms)")
    slowest = (0.0, "")
    for lesson in lessons():
        other = {} if against is None else notebook_check_ms(lesson.name, against)
        for exercise, (spent, passed) in notebook_check_ms(lesson.name).items():
            slowest = max(slowest, (spent, exercise))
            missed = spent >= NOTEBOOK_CHECK_GOAL_MS or not passed
            failed |= missed
            twin = f"  (on {against}: {other[exercise][0]:.1f})" if exercise in other else ""
            print(f"  {lesson.name + ' ' + exercise:<70} {spent:>7.1f}{'  MISSED' if missed else ''}"
                  f"{'' if passed else ' (did not pass)'}{twin}")
    print(f"slowest check(...): {slowest[1]}, {slowest[0]:.1f} ms")

    if arguments.notebooks:
        print(f"\n{'notebook (executed with nbclient)':<72} {'seconds':>8}  goal")
        in_lessons = []
        for path in [lesson.lesson_path for lesson in lessons()] + [lesson.solution_path for lesson in lessons()]:
            value, checks = notebook_seconds(path)
            failed |= value > 30
            print(f"{path.relative_to(ROOT).as_posix():<72} {value:>8.2f}  <= 30 {'ok' if value <= 30 else 'MISSED'}")
            if path.is_relative_to(SOLUTIONS_DIR):
                in_lessons += [(path.stem, call, spent) for call, spent in checks.items()]
        # What a learner who runs the lesson from the top waits for: the cells above an exercise may
        # already have paid a one-time cost (lesson 13's first DDP) that a fresh kernel pays in check(...).
        print(f"\neach check(...) cell of the solution notebooks above, run from the top (ms, from the "
              f"notebook's timings; for comparison with the fresh kernel's)")
        for lesson, call, spent in in_lessons:
            print(f"  {lesson + ' ' + call:<70} {spent:>7.1f}")
        if in_lessons:
            print(f"slowest there: {max(in_lessons, key=lambda row: row[2])[1]}, "
                  f"{max(spent for _, _, spent in in_lessons):.1f} ms")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
