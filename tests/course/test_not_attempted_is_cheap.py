"""A fresh lesson is graded without paying for what only a written answer needs: lesson 13's
checks tell its stubs apart before building a DistributedDataParallel, whose constructor
imports torch._dynamo (0.73 s of a run that has nothing to grade)."""

import subprocess
import sys

from hooked.course import ROOT

_GRADE_THE_STUBS = """
import sys
import torch
from hooked.grader.check_runner import run_exercise_check
from hooked.course import lesson_named
from hooked.lesson_files.learner_lesson import load_lesson_source
lesson = lesson_named("13_distributed_hooks")
namespace = {}
for cell in load_lesson_source(lesson.lesson_path.parent, lesson.name).cells:
    exec(compile(cell.source, cell.filename, "exec"), namespace)
for name in lesson.exercise_names():
    print(name, run_exercise_check(lesson.name, name, namespace[name]).status)
print("dynamo imported:", "torch._dynamo" in sys.modules)
"""


def test_lesson_13_stubs_are_not_attempted_without_building_ddp():
    completed = subprocess.run([sys.executable, "-c", _GRADE_THE_STUBS], cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines == ["mean_allreduce_hook not_attempted", "record_buckets not_attempted",
                     "topk_error_feedback_hook not_attempted", "dynamo imported: False"], completed.stdout
