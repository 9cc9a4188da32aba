"""Grading in several workers at once: the same report as with one, in the same order; a
hang in one lesson costs only that lesson; no worker outlives the run."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from hooked import course
from hooked.course import ROOT
from hooked.grader.engine import Grader
from hooked.grader.plan import WORKERS_VARIABLE, assign
from hooked.grader.worker_processes import START_VARIABLE

# These tests start pytest; a started pytest must never start them again.
if os.environ.get("HOOKED_INNER_RUN"):
    pytest.skip("inside a grading run started by these tests", allow_module_level=True)

from test_grading_robustness import _solution_cell, make_lessons  # noqa: E402  (after the skip above)

HANG = "def {name}(*args, **kwargs):\n    while True:\n        pass\n"


def _pytest(folder, workers, *arguments, **popen):
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--lessons-dir", str(folder), *arguments]
    env = dict(os.environ, HOOKED_INNER_RUN="1", **{WORKERS_VARIABLE: str(workers)})
    return command, env


def _run(folder, workers, report, *arguments):
    command, env = _pytest(folder, workers, "-v", "--report", str(report), *arguments)
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = re.sub(r" in [0-9.]+s(?: \([0-9:]+\))? =", " in (time) =", completed.stdout)
    with open(report, encoding="utf-8") as file:
        return completed.returncode, output, json.load(file)["exercises"]


def test_one_worker_and_three_give_the_same_report_in_the_same_order(tmp_path):
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"double_grad": _solution_cell("01_tensor_hooks", "double_grad"),
                            "make_clip_hook": HANG.format(name="make_clip_hook")},
        "02_removing_hooks": {"HookGroup": "import os\n\n\nclass HookGroup:\n    def __init__(self):\n"
                                           "        os._exit(3)\n",
                              "register_named_hook": _solution_cell("02_removing_hooks", "register_named_hook")},
        "04_forward_hooks": {"capture_activations": "def capture_activations(model x):\n    pass\n"},
        "06_cnn_activations": {"get_activation": "raise RuntimeError('at load time')\n"
                                                 + _solution_cell("06_cnn_activations", "get_activation")},
        "09_pitfalls": {name: _solution_cell("09_pitfalls", name)
                        for name in ("grad_before_inplace_relu", "find_registered_hooks", "remove_all_hooks")},
    })
    one = _run(lessons, 1, tmp_path / "one.json", "--time-limit", "3")
    three = _run(lessons, 3, tmp_path / "three.json", "--time-limit", "3")
    assert one[0] == three[0] == 1, one[1]
    assert one[2] == three[2]  # every exercise, in order, with its status, message and output
    assert one[1] == three[1]  # pytest's report: the tests in order, their failures, the progress table
    statuses = {entry["exercise"]: entry["status"] for entry in one[2]}
    assert [entry["exercise"] for entry in one[2]] == [
        exercise for lesson in course.lessons() for exercise in lesson.exercise_names()]
    assert statuses["double_grad"] == "passed" and statuses["make_clip_hook"] == "failed"
    assert statuses["HookGroup"] == "failed" and statuses["capture_activations"] == "error"
    assert statuses["get_activation"] == "error" and statuses["remove_all_hooks"] == "passed"


def test_the_lessons_are_shared_out_whole_and_each_workers_share_keeps_the_order():
    plan = [(lesson.name, exercise) for lesson in course.lessons() for exercise in lesson.exercise_names()]
    shares = assign(plan, 2)
    assert sorted(pair for share in shares for pair in share) == sorted(plan)
    assert all(share == [pair for pair in plan if pair in share] for share in shares)
    lessons_of = [{lesson for lesson, _ in share} for share in shares]
    assert not lessons_of[0] & lessons_of[1] and all(lessons_of)



def test_a_lesson_with_a_check_allowed_more_than_the_budget_weighs_what_it_is_allowed(monkeypatch):
    """The first DistributedDataParallel of a run imports torch._dynamo (lesson 13's
    mean_allreduce_hook, allowed 800 ms): its lesson gets a worker of its own, and the other
    lessons share the other one."""
    from hooked.grader import plan as grading_plan
    plan = [(lesson.name, exercise) for lesson in course.lessons() for exercise in lesson.exercise_names()]
    costly = ("02_removing_hooks", "HookGroup")
    declared = grading_plan.declared_budgets_of
    monkeypatch.setattr(grading_plan, "declared_budgets_of",  # a check made slow for this test
                        lambda lesson: {"HookGroup": 5000} if lesson == costly[0] else declared(lesson))
    shares = assign(plan, 2)
    alone = next(share for share in shares if costly in share)
    assert {lesson for lesson, _ in alone} == {"02_removing_hooks"}

def _worker_pids(grader):
    return [pid for lane in grader._lanes for pid in lane.pids()]


def test_a_hang_in_one_lesson_holds_up_neither_the_other_worker_nor_the_rest_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"double_grad": HANG.format(name="double_grad")},
        "02_removing_hooks": {"HookGroup": _solution_cell("02_removing_hooks", "HookGroup")},
        "03_forward_pre_hooks": {"normalize_input": _solution_cell("03_forward_pre_hooks", "normalize_input")},
    })
    plan = [(lesson, exercise) for lesson in ("01_tensor_hooks", "02_removing_hooks", "03_forward_pre_hooks")
            for exercise in course.lesson_named(lesson).exercise_names()]
    grader = Grader(lessons, time_limit=60)
    grader.start(plan)
    try:
        assert len(grader._lanes) == 2
        hanging = grader._lane_of["01_tensor_hooks"]
        others = [pair for pair in plan if grader._lane_of[pair[0]] is not hanging]
        results = {pair: grader.grade(*pair) for pair in others}  # all graded while double_grad still loops
        assert not grader._pending[("01_tensor_hooks", "double_grad")]._done.is_set()
        assert {result.status for result in results.values()} <= {"passed", "not_attempted"}
        assert any(result.status == "passed" for result in results.values())
    finally:
        pids = _worker_pids(grader)
        grader.close()
    for pid in pids:
        assert _gone(pid), f"worker {pid} outlived close()"


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_hang_restarts_only_its_own_worker_and_the_next_lessons_are_graded(tmp_path, monkeypatch, start):
    """Forked workers: every lane keeps its zygote, which forks another worker in place of the one
    that hung. Spawned workers: only the lane whose worker hung starts another process."""
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    monkeypatch.setenv(START_VARIABLE, start)
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"double_grad": HANG.format(name="double_grad"),
                            "record_grads": _solution_cell("01_tensor_hooks", "record_grads")},
        "03_forward_pre_hooks": {"force_kwarg": _solution_cell("03_forward_pre_hooks", "force_kwarg")},
    })
    plan = [(lesson.name, exercise) for lesson in course.lessons()[:4] for exercise in lesson.exercise_names()]
    grader = Grader(lessons, time_limit=2)
    grader.start(plan)
    try:
        first_pids = {id(lane): _lasting_pid(lane) for lane in grader._lanes}
        results = {pair: grader.grade(*pair) for pair in plan}
        hanging = grader._lane_of["01_tensor_hooks"]
        for lane in grader._lanes:
            restarted = _lasting_pid(lane) != first_pids[id(lane)]
            assert restarted == (start == "spawn" and lane is hanging)
    finally:
        grader.close()
    assert "took longer than 2 s" in results[("01_tensor_hooks", "double_grad")].message
    assert results[("01_tensor_hooks", "record_grads")].status == "passed"
    assert results[("03_forward_pre_hooks", "force_kwarg")].status == "passed"


def _lasting_pid(lane):
    """The lane's zygote, or its spawned worker (waited for: a lane hands its worker over in steps)."""
    deadline = time.monotonic() + 10
    while not lane.pids() and time.monotonic() < deadline:
        time.sleep(0.01)
    return lane.pids()[0]


def _gone(pid, wait=10.0):
    """True once no process `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
                if file.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


_NOTE_PID = ("import os\nwith open(os.environ['HOOKED_TEST_PIDS'], 'a') as file:\n"
             "    file.write(f'{os.getpid()}\\n')\n")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table in /proc")
def test_no_worker_outlives_pytest_when_it_ends(tmp_path):
    pids = tmp_path / "pids"
    lessons = make_lessons(tmp_path / "lessons", {
        lesson.name: {lesson.exercise_names()[0]: _NOTE_PID + _solution_cell(lesson.name, lesson.exercise_names()[0])}
        for lesson in course.lessons()[:3]})
    command, env = _pytest(lessons, 2, "tests/test_01_tensor_hooks.py", "tests/test_02_removing_hooks.py",
                           "tests/test_03_forward_pre_hooks.py")
    completed = subprocess.run(command, cwd=ROOT, env=dict(env, HOOKED_TEST_PIDS=str(pids)), capture_output=True,
                               text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout
    noted = {int(line) for line in pids.read_text(encoding="utf-8").split()}
    assert len(noted) == 2  # three lessons on two workers
    assert all(_gone(pid) for pid in noted)


@pytest.mark.skipif(os.name == "nt" or not os.path.isdir("/proc"), reason="sends POSIX signals; reads /proc")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_no_worker_outlives_pytest_stopped_in_the_middle(tmp_path, stop):
    """Ctrl-C: pytest stops its workers. Killed: each worker sees its grader gone and stops."""
    pids = tmp_path / "pids"
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"double_grad": _NOTE_PID + HANG.format(name="double_grad")},
        "02_removing_hooks": {"HookGroup": _NOTE_PID + "import subprocess\nimport sys\n"
                              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
                              + _solution_cell("02_removing_hooks", "HookGroup")},
    })
    command, env = _pytest(lessons, 2, "--time-limit", "300", "tests/test_01_tensor_hooks.py",
                           "tests/test_02_removing_hooks.py")
    process = subprocess.Popen(command, cwd=ROOT, env=dict(env, HOOKED_TEST_PIDS=str(pids)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    noted = children = set()
    try:
        deadline = time.monotonic() + 300
        while not (pids.exists() and len(pids.read_text(encoding="utf-8").split()) == 2):
            assert process.poll() is None and time.monotonic() < deadline, process.stdout.read()
            time.sleep(0.1)
        noted = {int(line) for line in pids.read_text(encoding="utf-8").split()}
        children = _children_of(noted)
        assert children, "the learner's sleeping process was not found"
        time.sleep(0.5)  # double_grad's check is looping now
        process.send_signal(stop)
        output, _ = process.communicate(timeout=60)
        if stop == signal.SIGINT:
            assert "KeyboardInterrupt" in output
        assert all(_gone(pid) for pid in noted | children)
    finally:
        if process.poll() is None:
            process.kill()
        for pid in noted | children:  # leave nothing behind if the test failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _children_of(pids):
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as file:
                    parent = int(file.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
            if parent in pids:
                found.add(int(entry))
    return found


def test_one_worker_per_idle_core_never_more_than_the_lessons_and_the_variable_decides(monkeypatch):
    from hooked.grader import plan as grading_plan
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    monkeypatch.setattr(grading_plan, "usable_cores", lambda: 4)
    monkeypatch.setattr(grading_plan, "busy_cores", lambda: 0)
    assert [grading_plan.worker_count(lessons) for lessons in (1, 3, 11)] == [1, 3, 4]
    monkeypatch.setattr(grading_plan, "busy_cores", lambda: 3)
    assert grading_plan.worker_count(11) == 1
    monkeypatch.setattr(grading_plan, "busy_cores", lambda: 9)
    assert grading_plan.worker_count(11) == 1
    monkeypatch.setenv(WORKERS_VARIABLE, "3")
    assert grading_plan.worker_count(11) == 3 and grading_plan.worker_count(2) == 2
