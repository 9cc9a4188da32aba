"""`hooked grade-class`: a class graded in one run gives each learner the statuses of grading them
alone; results.csv, results.json and report.html; shards merged equal one run; a zip equals its
folder; one learner's code never changes another's verdict; a hang or a crash costs only its own;
bad input is said in one line, and nothing in the submissions is written."""

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from hooked import course
from hooked.course import ROOT
from hooked.grader.plan import WORKERS_VARIABLE
from hooked.grader.worker_processes import START_VARIABLE
from hooked_cli import lesson_text

if os.environ.get("HOOKED_INNER_RUN"):
    pytest.skip("inside a grading run started by these tests", allow_module_level=True)

ONE, TWO = "01_tensor_hooks", "02_removing_hooks"
ALL_OF = {name: course.lesson_named(name).exercise_names() for name in (ONE, TWO)}
POLLUTE = ("import torch\n"
           "torch.nn.modules.module.register_module_forward_hook(lambda module, args, output: output * 0)\n"
           "torch.set_default_dtype(torch.float64)\n"
           "torch.Tensor.register_hook = lambda self, hook: None\n"
           "torch.mul = lambda *args, **kwargs: 0\n"
           # beyond what the checks' own isolation restores (hooked.checks.isolation):
           "torch.nn.Linear.forward = lambda self, x: x.new_zeros(*x.shape[:-1], self.out_features)\n"
           "torch.utils.hooks.RemovableHandle.remove = lambda self: None\n")
# Beyond what the tamper guard puts back after each check: a thread that keeps patching.
KEEP_PATCHING = ("import threading, time\n"
                 "def _keep_patching():\n"
                 "    while True:\n"
                 "        torch.utils.hooks.RemovableHandle.remove = lambda self: None\n"
                 "        time.sleep(0.001)\n"
                 "threading.Thread(target=_keep_patching, daemon=True).start()\n")
HANG = "\n\ndef double_grad(grad):\n    while True:\n        pass\n"


def hooked(*arguments, env=None):
    completed = subprocess.run([sys.executable, "-m", "hooked", *map(str, arguments)], cwd=ROOT, capture_output=True,
                               text=True, timeout=600, env=dict(os.environ, HOOKED_INNER_RUN="1", **(env or {})))
    return completed.returncode, completed.stdout + completed.stderr


def write(folder, lesson, solved=(), replacements=None, suffix=".py"):
    folder.mkdir(parents=True, exist_ok=True)
    text = lesson_text(lesson, solved, replacements)
    path = folder / f"{lesson}{suffix}"
    if suffix == ".ipynb":
        import jupytext
        jupytext.write(jupytext.reads(text, fmt="py:percent"), path)
    else:
        path.write_text(text, encoding="utf-8")


def make_class(root):
    """Four learners, lessons 01 and 02: all kinds of statuses, a notebook, a lesson not handed in."""
    write(root / "ada", ONE, ALL_OF[ONE])
    write(root / "ben", ONE, ALL_OF[ONE], {"    return grad * 2\n": "    return grad * 3\n"})
    write(root / "ben", TWO, ["HookGroup"])
    write(root / "cy", TWO, ALL_OF[TWO], suffix=".ipynb")
    write(root / "dee", ONE, ["double_grad"], {"# Exercise: double_grad — write your code in this cell.\n":
                                               "# Exercise: double_grad — write your code in this cell.\n" + POLLUTE})
    write(root / "dee", TWO, ALL_OF[TWO])
    return root


def tree(folder):
    """{relative path: (content hash, mtime)} of every file and folder under `folder`."""
    found = {}
    for path in sorted(folder.rglob("*")):
        content = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        found[str(path.relative_to(folder))] = (content, path.stat().st_mtime_ns)
    return found


def results(out):
    with open(out / "results.json", encoding="utf-8") as file:
        return json.load(file)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(the class folder, its files before, the output folder) of one run over the class."""
    root = make_class(tmp_path_factory.mktemp("class") / "submissions")
    before = tree(root)
    out = tmp_path_factory.mktemp("out")
    code, output = hooked("grade-class", root, "--out", out, "--lessons", "01", "02", "--gradescope",
                          env={WORKERS_VARIABLE: "2"})
    assert code == 0, output
    return root, before, out, output


def test_every_learner_gets_the_statuses_and_mistakes_of_grading_them_alone(graded, tmp_path):
    root, _, out, _ = graded
    rows = results(out)["rows"]
    for learner in ("ada", "ben", "cy", "dee"):
        alone = tmp_path / f"{learner}.json"
        code, output = hooked("export", "--lessons-dir", root / learner, "--out", alone, "01", "02")
        assert code == 0, output
        with open(alone, encoding="utf-8") as file:
            exercises = json.load(file)["exercises"]
        expected = [(entry["exercise"], entry["status"] if entry["status"] != "error" or "no lesson file" not in
                     entry["message"] else "not_attempted", entry["mistake"]) for entry in exercises]
        assert [(row["exercise"], row["status"], row["mistake"]) for row in rows
                if row["learner"] == learner] == expected, learner


def test_results_csv_has_the_contract_columns_first_and_a_row_per_learner_and_exercise(graded):
    _, _, out, _ = graded
    with open(out / "results.csv", encoding="utf-8-sig", newline="") as file:
        table = list(csv.reader(file))
    assert table[0][:6] == ["learner", "lesson", "exercise", "status", "mistake", "message"]
    exercises = [(lesson, name) for lesson in (ONE, TWO) for name in ALL_OF[lesson]]
    assert [tuple(row[:3]) for row in table[1:]] == [(learner, *pair) for learner in ("ada", "ben", "cy", "dee")
                                                     for pair in exercises]
    by_key = {(row[0], row[2]): row for row in table[1:]}
    assert by_key[("ben", "double_grad")][3:5] == ["failed", "01.double_grad.wrong-value"]
    assert by_key[("ada", "HookGroup")][3] == "not_attempted"  # ada handed in no lesson 02
    assert "ada handed in no 02_removing_hooks.py or .ipynb" in by_key[("ada", "HookGroup")][5]
    assert by_key[("cy", "HookGroup")][6] == "cy/02_removing_hooks.ipynb"


def test_results_json_gives_each_learners_totals_and_what_each_mistake_is(graded):
    data = results(graded[2])
    totals = {learner["learner"]: learner for learner in data["learners"]}
    assert list(totals) == ["ada", "ben", "cy", "dee"]
    assert totals["ada"]["passed"] == len(ALL_OF[ONE]) and totals["ada"]["not_attempted"] == len(ALL_OF[TWO])
    assert totals["cy"]["passed"] == len(ALL_OF[TWO])
    assert all(sum(learner[status] for status in ("passed", "failed", "not_attempted", "error"))
               == learner["exercises"] == len(ALL_OF[ONE]) + len(ALL_OF[TWO]) for learner in data["learners"])
    assert "01.double_grad.wrong-value" in data["mistakes"] and data["mistakes"]["01.double_grad.wrong-value"]
    assert (graded[2] / "report.html").read_text(encoding="utf-8").count("<svg") >= 2


def test_each_learner_gets_the_gradescope_file_of_hooked_export(graded):
    _, _, out, _ = graded
    with open(out / "gradescope" / "ben" / "results.json", encoding="utf-8") as file:
        ben = json.load(file)
    assert ben["score"] == len(ALL_OF[ONE]) - 1 + 1  # lesson 01 but double_grad, and HookGroup
    assert "01.double_grad.wrong-value" in next(test for test in ben["tests"] if test["name"].endswith("double_grad"))["tags"]


def test_piped_progress_is_a_plain_line_per_learner_and_a_summary(graded):
    lines = graded[3].splitlines()
    counters, learners = zip(*(line.split(":")[0].split(" ") for line in lines[:4]))  # "2/4 ben: ..."
    assert counters == ("1/4", "2/4", "3/4", "4/4") and sorted(learners) == ["ada", "ben", "cy", "dee"], lines
    assert all("of 7 exercises pass" in line for line in lines[:4]) and "\x1b[" not in graded[3]
    assert lines[-1].startswith("graded 4 learners, 7 exercises each, in ") and "report.html" in lines[-1]


def test_nothing_in_the_submissions_is_written(graded):
    root, before, _, _ = graded
    assert tree(root) == before


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_one_learners_code_never_changes_the_next_learners_verdicts(tmp_path, start):
    """On one lane, a learner who leaves a global hook, patches torch, changes the default dtype and
    leaves a thread that keeps patching, then a learner with every exercise of lessons 01 and 02 right."""
    root = tmp_path / "submissions"
    for lesson in (ONE, TWO):
        write(root / "a_polluter", lesson, [], {"import torch\n": "import torch\n" + POLLUTE + KEEP_PATCHING})
    for lesson in (ONE, TWO):
        write(root / "b_right", lesson, ALL_OF[lesson])
    code, output = hooked("grade-class", root, "--out", tmp_path / "out", "--lessons", "01", "02",
                          env={WORKERS_VARIABLE: "1", START_VARIABLE: start})
    assert code == 0, output
    right = [row for row in results(tmp_path / "out")["rows"] if row["learner"] == "b_right"]
    assert [row["status"] for row in right] == ["passed"] * len(right), right


def test_a_hang_costs_its_exercise_the_time_limit_and_a_crash_costs_its_learners_lesson(tmp_path):
    root = tmp_path / "submissions"
    write(root / "a_hangs", ONE, ALL_OF[ONE], {"    return grad * 2\n": "    return grad * 2\n" + HANG})
    write(root / "b_crashes", ONE, ALL_OF[ONE], {"import torch\n": "import torch\nimport os\nos._exit(3)\n"})
    write(root / "c_right", ONE, ALL_OF[ONE])
    code, output = hooked("grade-class", root, "--out", tmp_path / "out", "--lessons", "01", "--time-limit", "3",
                          env={WORKERS_VARIABLE: "1"})
    assert code == 0, output
    rows = {(row["learner"], row["exercise"]): row for row in results(tmp_path / "out")["rows"]}
    assert rows[("a_hangs", "double_grad")]["mistake"] == "01.double_grad.timed-out"
    assert all(rows[("a_hangs", name)]["status"] == "passed" for name in ALL_OF[ONE] if name != "double_grad")
    assert rows[("b_crashes", "double_grad")]["status"] == "error"  # its cell ended the process
    assert all(rows[("c_right", name)]["status"] == "passed" for name in ALL_OF[ONE])


def test_two_shards_merged_equal_one_run_and_a_zip_equals_its_folder(graded, tmp_path):
    root, _, out, _ = graded
    for number in (1, 2):
        code, output = hooked("grade-class", root, "--out", tmp_path / f"shard{number}", "--lessons", "01", "02",
                              "--shard", f"{number}/2", "--gradescope")
        assert code == 0, output
    assert [learner["learner"] for learner in results(tmp_path / "shard1")["learners"]] == ["ada", "ben"]
    code, output = hooked("grade-class", "--merge", tmp_path / "shard2", tmp_path / "shard1", "--out", tmp_path / "all")
    assert code == 0, output
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zipped:  # wrapped in a folder of its own, as platforms export
        for path in root.rglob("*"):
            zipped.write(path, "export/" + str(path.relative_to(root)))
    code, output = hooked("grade-class", archive, "--out", tmp_path / "zipped", "--lessons", "01", "02")
    assert code == 0, output
    for name in ("results.json", "results.csv", "report.html"):
        expected = (out / name).read_bytes()
        assert (tmp_path / "all" / name).read_bytes() == expected, name
        assert (tmp_path / "zipped" / name).read_bytes() == expected, name
    assert sorted(path.name for path in (tmp_path / "all" / "gradescope").iterdir()) == ["ada", "ben", "cy", "dee"]


def _zip_with(path, names):
    with zipfile.ZipFile(path, "w") as zipped:
        for name in names:
            zipped.writestr(name, "x = 1\n")
    return path


@pytest.mark.parametrize("case, expected", [
    ("missing", "no such folder or file"),
    ("empty", "no learner folders"),
    ("not_a_lesson", "ada/notes.py is not a lesson"),
    ("stray_lesson", "01_tensor_hooks.py is not in a learner's folder"),
    ("no_lesson_files", "no learner folder holds a lesson file"),
    ("not_a_zip", "cannot be read as a zip"),
    ("zip_outside", "a path outside its own folder"),
    ("out_is_a_file", "that is a file"),
    ("out_inside", "inside the submissions"),
    ("bad_shard", "--shard 3/2: give K/N"),
    ("bad_lesson", "no lesson 99"),
    ("merge_nothing", "no readable results.json"),
    ("both", "not both"),
    ("neither", "give SUBMISSIONS"),
])
def test_bad_input_is_said_in_one_line_with_exit_2_and_nothing_written(tmp_path, case, expected):
    root = tmp_path / "submissions"
    write(root / "ada", ONE)
    out = tmp_path / "out"
    given = {"missing": [tmp_path / "nowhere"], "empty": [tmp_path / "empty"],
             "not_a_lesson": [root], "stray_lesson": [root], "no_lesson_files": [tmp_path / "bare"],
             "not_a_zip": [tmp_path / "class.zip"], "zip_outside": [tmp_path / "evil.zip"]}.get(case, [root])
    (tmp_path / "empty").mkdir()
    (tmp_path / "bare" / "ada").mkdir(parents=True)
    (tmp_path / "class.zip").write_text("not a zip", encoding="utf-8")
    _zip_with(tmp_path / "evil.zip", ["ada/01_tensor_hooks.py", "../escaped.py"])
    if case == "not_a_lesson":
        (root / "ada" / "notes.py").write_text("x = 1\n", encoding="utf-8")
    if case == "stray_lesson":
        shutil.copy(root / "ada" / f"{ONE}.py", root)
    if case == "out_is_a_file":
        out.write_text("", encoding="utf-8")
    if case == "out_inside":
        out = root / "results"
    options = {"bad_shard": ["--shard", "3/2"], "bad_lesson": ["--lessons", "99"],
               "merge_nothing": ["--merge", tmp_path / "empty"], "both": ["--merge", tmp_path / "empty"]}
    arguments = {"merge_nothing": [], "neither": []}.get(case, given)
    before = tree(tmp_path)
    code, output = hooked("grade-class", *arguments, "--out", out, *options.get(case, []))
    assert code == 2, output
    assert expected in output and "Traceback" not in output, output
    assert len(output.strip().splitlines()) == 1, output
    assert tree(tmp_path) == before  # neither the submissions nor anything else was written
