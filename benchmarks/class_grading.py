"""How long grading a class takes, next to the floor, `python -c "import torch"`: a made-up
class of learners who each hand in the whole course, every exercise at random (fixed seed) the
reference solution, a wrong or a right-but-different submission from the mistake catalogue
(tests/course/mistakes/), or the untouched stub.

    python benchmarks/class_grading.py                  # a class of 40
    python benchmarks/class_grading.py --learners 10 --alone 3

It prints: the class graded with `hooked grade-class` (goal: at most 20x the floor for 40
learners), what each further learner costs (the class against half of it; goal: at most 0.4x
the floor), the same class graded one learner at a time with `pytest --lessons-dir` (for
`--alone` learners, all by default, and the whole class's time reckoned from them), whether
every status in results.csv is the one grading that learner alone gives, and the share of
failed exercises that carry a named mistake (goal: at least 85%). Exit status 1 when a goal
is missed."""

import argparse
import csv
import importlib.util
import json
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

from hooked.course import ROOT, lessons
from hooked.lesson_files.solution_markers import lesson_text_from_solution

CATALOGUE = ROOT / "tests" / "course" / "mistakes"
SHARES = {"reference": 0.55, "wrong": 0.30, "right": 0.10, "stub": 0.05}


def catalogue_entries(lesson):
    """The lesson's catalogue entries, {exercise: {"wrong": [source, ...], "right": [...]}}."""
    sys.path.insert(0, str(CATALOGUE.parent))  # its files import the `mistakes` package
    spec = importlib.util.spec_from_file_location(f"catalogue_{lesson}", CATALOGUE / f"lesson_{lesson}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = {}
    for entry in module.ENTRIES:
        found.setdefault(entry["exercise"], {"wrong": [], "right": []})[entry["kind"]].append(entry["source"])
    return found


def learner_lesson(lesson, entries, chooser):
    """The text of a learner's lesson: each exercise's cell drawn by `chooser`."""
    text = lesson.solution_path.read_text(encoding="utf-8")
    for exercise in lesson.exercises:
        kind = chooser.choices(list(SHARES), weights=list(SHARES.values()))[0]
        sources = entries.get(exercise.name, {}).get(kind, [])
        if kind == "reference" or (kind in ("wrong", "right") and not sources):
            text = text.replace(exercise.solution_cell, exercise.reference)
        elif kind != "stub":
            text = text.replace(exercise.solution_cell, chooser.choice(sources))
    return lesson_text_from_solution(text)


def make_class(folder, count, seed=0):
    chooser = random.Random(seed)
    course = [(lesson, catalogue_entries(lesson.name)) for lesson in lessons()]
    for number in range(count):
        learner = folder / f"learner{number:03d}"
        learner.mkdir(parents=True)
        for lesson, entries in course:
            (learner / f"{lesson.name}.py").write_text(learner_lesson(lesson, entries, chooser), encoding="utf-8")
    return folder


def seconds(command, **options):
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               **options)
    spent = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{completed.stdout[-3000:]}")
    return spent


def import_torch_floor(repeat=3):
    return statistics.median(seconds([sys.executable, "-c", "import torch"]) for _ in range(repeat))


def grade_class(submissions, out, shard=None):
    command = [sys.executable, "-m", "hooked", "grade-class", submissions, "--out", out]
    return seconds(command + (["--shard", shard] if shard else []))


def graded_alone(learner, report):
    return seconds([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--lessons-dir", learner,
                    "--report", report])


def statuses_of_class(out):
    with open(out / "results.csv", encoding="utf-8-sig", newline="") as file:
        return {(row["learner"], row["exercise"]): (row["status"], row["mistake"]) for row in csv.DictReader(file)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=40)
    parser.add_argument("--alone", type=int, default=None, help="how many learners to grade alone (default: all)")
    arguments = parser.parse_args()
    count = arguments.learners
    with tempfile.TemporaryDirectory(prefix="hooked-class-benchmark-") as scratch:
        scratch = pathlib.Path(scratch)
        submissions = make_class(scratch / "class", count)
        floor = import_torch_floor()
        whole = grade_class(submissions, scratch / "out")
        half = grade_class(submissions, scratch / "half", shard=f"1/2")
        further = (whole - half) / (count - count // 2)
        class_statuses = statuses_of_class(scratch / "out")
        alone_count = count if arguments.alone is None else min(arguments.alone, count)
        alone_seconds, differences = [], []
        for number in range(alone_count):
            learner = f"learner{number:03d}"
            report = scratch / f"{learner}.json"
            alone_seconds.append(graded_alone(submissions / learner, report))
            with open(report, encoding="utf-8") as file:
                for entry in json.load(file)["exercises"]:
                    if class_statuses[(learner, entry["exercise"])] != (entry["status"], entry["mistake"] or ""):
                        differences.append((learner, entry["exercise"]))
    failed = [mistake for status, mistake in class_statuses.values() if status == "failed"]
    named = sum(bool(mistake) for mistake in failed) / max(1, len(failed))
    alone_total = sum(alone_seconds) * count / alone_count
    goals = [
        (f"{count} learners x the whole course with grade-class: {whole:.1f} s = {whole / floor:.1f}x the floor",
         whole <= 20 * floor or count != 40, "at most 20x for 40 learners"),
        (f"each further learner: {further:.2f} s = {further / floor:.2f}x the floor "
         f"(the class against its first half, {half:.1f} s)", further <= 0.4 * floor, "at most 0.4x"),
        (f"one learner at a time with pytest --lessons-dir: {alone_total:.1f} s = {alone_total / floor:.1f}x the "
         f"floor" + ("" if alone_count == count else f" (reckoned from {alone_count} learners)"), True, "for the record"),
        (f"statuses and mistakes in results.csv as when graded alone: {alone_count} learners, "
         f"{len(differences)} differences {differences[:5]}", not differences, "none"),
        (f"failed exercises with a named mistake: {named:.1%} of {len(failed)}", named >= 0.85, "at least 85%"),
    ]
    print(f"floor: python -c \"import torch\" {floor:.2f} s (median of 3)")
    for text, met, goal in goals:
        print(f"{'ok  ' if met else 'MISS'} {text} (goal: {goal})")
    return 0 if all(met for _, met, _ in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
