"""How long grading takes, next to the floor: `python -c "import torch"`.

    python benchmarks/grading_time.py            # grading only
    python benchmarks/grading_time.py --notebooks  # also execute every notebook

Each command runs --repeat times (default 5), the commands taking turns, and the median
counts. Goals: one lesson at most 1.5x the floor, the whole course at most 2.0x
(`hooked status`, which grades the whole course too, at most 1.5x); each notebook under 30 s.
"""

import argparse
import statistics
import subprocess
import sys
import time

from hooked.course import ROOT, lessons


def median_seconds(commands, repeat):
    """The median time of each command. The commands take turns, so that a machine that
    gets busier or quieter during the run weighs on all of them alike."""
    times = [[] for _ in commands]
    for _ in range(repeat):
        for command, spent in zip(commands, times):
            started = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            spent.append(time.perf_counter() - started)
    return [statistics.median(spent) for spent in times]


def notebook_seconds(path):
    import jupytext
    import nbclient
    notebook = jupytext.read(path)
    started = time.perf_counter()
    nbclient.NotebookClient(notebook, kernel_name="python3", timeout=600,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--notebooks", action="store_true", help="also time each notebook's execution")
    arguments = parser.parse_args()
    if arguments.repeat < 1:
        parser.error(f"--repeat {arguments.repeat}: give a whole number of 1 or more")

    python = sys.executable
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    hooked = [python, "-m", "hooked"]
    first = lessons()[0].test_path.relative_to(ROOT).as_posix()  # tests/test_01_tensor_hooks.py
    commands = [
        ("floor: python -c 'import torch'", [python, "-c", "import torch"], None),
        (f"one lesson, fresh: pytest {first}", pytest + [first], 1.5),
        (f"one lesson, solved: pytest --solutions {first}", pytest + ["--solutions", first], 1.5),
        ("whole course, fresh: pytest", pytest, 2.0),
        ("whole course, solved: pytest --solutions", pytest + ["--solutions"], 2.0),
        ("whole course, fresh: hooked status", hooked + ["status"], 1.5),
        ("whole course, solved: hooked status --lessons-dir solutions",
         hooked + ["status", "--lessons-dir", "solutions"], 1.5),
    ]
    values = median_seconds([command for _, command, _ in commands], arguments.repeat)
    floor = values[0]
    rows = [(name, value, goal) for (name, _, goal), value in zip(commands, values)]
    print(f"median of {arguments.repeat} runs each, {python}")
    print(f"{'command':<72} {'seconds':>8} {'ratio':>6}  goal")
    failed = False
    for name, value, goal in rows:
        ratio = value / floor
        verdict = "" if goal is None else f"<= {goal:.1f} {'ok' if ratio <= goal else 'MISSED'}"
        failed |= goal is not None and ratio > goal
        print(f"{name:<72} {value:>8.2f} {ratio:>6.2f}  {verdict}")
    if arguments.notebooks:
        print(f"\n{'notebook (executed with nbclient)':<72} {'seconds':>8}  goal")
        for path in [lesson.lesson_path for lesson in lessons()] + [lesson.solution_path for lesson in lessons()]:
            value = notebook_seconds(path)
            failed |= value > 30
            print(f"{path.relative_to(ROOT).as_posix():<72} {value:>8.2f}  <= 30 {'ok' if value <= 30 else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
