"""A learner's code cannot forge its own verdict by the known ways: each case is a wrong double_grad
(it triples the gradient) whose exercise cell also tampers with grading. Tampering that the grader
sees is reported as such ("error", the mistake 01.double_grad.tampered), and put back before
anything else is graded; the rest is graded on its merits. A right answer beside changes to torch's
global state that isolation handles is not taken for tampering."""

import json
import os
import textwrap

import pytest

from hooked.course import LESSONS_DIR
from hooked.grader.engine import Grader
from hooked_cli import hooked

LESSON = "01_tensor_hooks"
STUB = '''    # TODO: write this, as its docstring says.
    raise NotImplementedError("double_grad is not written yet")
'''
WRONG = "    return grad * 3\n"
RIGHT = "    return grad * 2\n"
TAMPERED = "01.double_grad.tampered"

# Each a dozen lines or so, as a learner would write them at the end of the exercise cell.
REPLACE_CHECK_FUNCTIONS = '''
import sys, types
_no_op = lambda *args, **kwargs: None
for _name, _module in list(sys.modules.items()):
    if _name.startswith("hooked.") and _module is not None:
        for _attribute, _value in list(vars(_module).items()):
            if isinstance(_value, types.FunctionType) and _value.__name__.startswith("check_"):
                setattr(_module, _attribute, _no_op)
            elif isinstance(_value, list):  # the registry: records of (exercise, check, ...)
                for _record in _value:
                    if isinstance(getattr(_record, "check", None), types.FunctionType):
                        object.__setattr__(_record, "check", _no_op)
'''
REPLACE_REGISTERED_CHECKS = '''
import dataclasses
from hooked.checks import check_api
check_api._REGISTERED[:] = [dataclasses.replace(registered, check=lambda learner_object: None)
                            for registered in check_api._REGISTERED]
'''
REPLACE_REGISTRY_LOOKUP = '''
from hooked.grader import check_registry
_real_checks_for_lesson = check_registry.checks_for_lesson
check_registry.checks_for_lesson = lambda lesson: {name: (lambda learner_object: None)
                                                   for name in _real_checks_for_lesson(lesson)}
'''
REPLACE_CHECK_CODE = '''
from hooked.checks import tensors
tensors.close.__code__ = (lambda actual, expected, tolerance=1e-5: True).__code__
'''
REPLACE_RESULT = '''
from hooked.feedback import verdict
from hooked.grader import check_runner
_RealResult = verdict.Result
def _always_passed(lesson, exercise, status, message, *args, **kwargs):
    return _RealResult(lesson, exercise, "passed", "passed.", *args, **dict(kwargs, mistake=None))
verdict.Result = check_runner.Result = _always_passed
'''
REPLACE_RUN_CHECK = '''
from hooked.grader import check_runner
from hooked.feedback.verdict import Result
check_runner.run_check = lambda lesson, exercise, check, obj, where=None: Result(lesson, exercise, "passed", "passed.")
'''
REPLACE_JSON_DUMPS = '''
import json
_real_dumps = json.dumps
def _dumps(message, *args, **kwargs):
    if isinstance(message, dict) and message.get("event") == "result":
        message = dict(message, status="passed", message="passed.", mistake=None)
    return _real_dumps(message, *args, **kwargs)
json.dumps = _dumps
'''
DELETE_MODULES = '''
import sys
for _name in ("hooked.checks.lesson_01_tensor_hooks", "hooked.checks.check_api", "hooked.grader.check_registry",
              "hooked.grader.check_runner"):
    del sys.modules[_name]
'''
REPLACE_MODULE = '''
import sys, types
_fake = types.ModuleType("hooked.checks.tensors")
_fake.close = lambda actual, expected, tolerance=1e-5: True
sys.modules["hooked.checks.tensors"] = _fake
'''
FORGED_LINE = '{"event": "result", "status": "passed", "message": "passed.", "mistake": null, "output": ""}'
FORGE_OUTPUT_LINES = f'''
import os, sys
for _stream in (sys.stdout, sys.__stdout__, sys.stderr):
    print({FORGED_LINE!r}, file=_stream, flush=True)
os.write(1, {FORGED_LINE!r}.encode() + b"\\n")
'''
# In the hook itself, when the check calls it: isolation puts torch back only once the check has ended.
PATCH_TORCH_WHEN_CALLED = '''    import torch
    torch.allclose = lambda *args, **kwargs: True
    torch.equal = lambda *args, **kwargs: True
    return grad * 3
'''
PATCH_TORCH_AT_TOP_LEVEL = '''
import torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
'''
FORGE_OUTPUT_WHEN_CALLED = f'''    import os, sys
    print({FORGED_LINE!r}, file=sys.__stdout__, flush=True)
    os.write(1, {FORGED_LINE!r}.encode() + b"\\n")
    return grad * 3
'''
REPLACE_WORKERS_CHECK_EXERCISE = '''
import sys
def _forging(real):
    def _forged(*args, **kwargs):
        result, output = real(*args, **kwargs)
        result.status, result.mistake = "passed", None
        return result, output
    return _forged
for _name in ("__main__", "hooked.grader.worker"):  # the worker, run as a program or forked by a zygote
    _worker = sys.modules.get(_name)
    if hasattr(_worker, "check_exercise"):
        _worker.check_exercise = _forging(_worker.check_exercise)
'''
HARMLESS_GLOBAL_STATE = '''
import torch
torch.nn.modules.module.register_module_forward_hook(lambda module, args, output: None)  # left registered
torch.set_default_dtype(torch.float64)
torch.manual_seed(0)
_mine = torch.ones(2)
_mine.note = "a learner's own attribute"
'''


def _lessons(folder, body, after=""):
    """A lessons folder with lesson 01 only, double_grad's body `body` and `after` below it in its cell."""
    text = (LESSONS_DIR / f"{LESSON}.py").read_text(encoding="utf-8")
    assert text.count(STUB) == 1
    folder.mkdir(exist_ok=True)
    (folder / f"{LESSON}.py").write_text(text.replace(STUB, body + textwrap.dedent(after)), encoding="utf-8")
    return folder


def _grade(folder, *exercises):
    grader = Grader(folder, time_limit=60)
    try:
        return [grader.grade(LESSON, exercise) for exercise in exercises or ("double_grad",)]
    finally:
        grader.close()


@pytest.mark.parametrize("tampering", [REPLACE_CHECK_FUNCTIONS, REPLACE_REGISTERED_CHECKS, REPLACE_REGISTRY_LOOKUP,
                                       REPLACE_CHECK_CODE, REPLACE_RESULT, REPLACE_RUN_CHECK, REPLACE_JSON_DUMPS,
                                       DELETE_MODULES, REPLACE_MODULE],
                         ids=["check functions", "registered checks", "registry lookup", "a check's code",
                              "Result", "run_check", "json.dumps", "deleted modules", "a replaced module"])
def test_tampering_in_the_exercise_cell_is_reported_as_tampering_never_as_passed(tmp_path, tampering):
    (result,) = _grade(_lessons(tmp_path / "lessons", WRONG, tampering))
    assert (result.status, result.mistake) == ("error", TAMPERED), result.message
    assert "cannot be trusted" in result.message


def test_the_message_names_what_was_changed(tmp_path):
    (result,) = _grade(_lessons(tmp_path / "lessons", WRONG, REPLACE_CHECK_CODE))
    assert "the code of hooked.checks.tensors.close was replaced" in result.message


def test_torch_functions_patched_while_the_check_runs_are_reported_as_tampering(tmp_path):
    (result,) = _grade(_lessons(tmp_path / "lessons", PATCH_TORCH_WHEN_CALLED))
    assert (result.status, result.mistake) == ("error", TAMPERED), result.message
    assert "torch.allclose was replaced" in result.message


def test_torch_functions_patched_as_the_cell_runs_are_put_back_and_the_answer_graded_on_its_merits(tmp_path):
    (result,) = _grade(_lessons(tmp_path / "lessons", WRONG, PATCH_TORCH_AT_TOP_LEVEL))
    assert (result.status, result.mistake) == ("failed", "01.double_grad.wrong-value"), result.message


@pytest.mark.parametrize("body, after", [(WRONG, FORGE_OUTPUT_LINES), (FORGE_OUTPUT_WHEN_CALLED, "")],
                         ids=["as the cell runs", "while the check runs"])
def test_forged_result_lines_on_the_standard_outputs_are_not_taken_for_the_verdict(tmp_path, body, after):
    (result,) = _grade(_lessons(tmp_path / "lessons", body, after))
    assert (result.status, result.mistake) == ("failed", "01.double_grad.wrong-value"), result.message


@pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX's")
@pytest.mark.parametrize("ending", ["os._exit(0)", "os.kill(os.getpid(), signal.SIGKILL)"])
def test_ending_the_grading_process_while_the_check_runs_is_a_crash_not_a_pass(tmp_path, ending):
    body = f"    import os, signal\n    {ending}\n    return grad * 3\n"
    (result,) = _grade(_lessons(tmp_path / "lessons", body))
    assert (result.status, result.mistake) == ("failed", "01.double_grad.crashed"), result.message


def test_tampering_as_the_cell_runs_leaves_every_exercise_of_the_lesson_ungraded(tmp_path):
    results = _grade(_lessons(tmp_path / "lessons", WRONG, REPLACE_CHECK_FUNCTIONS), "double_grad", "make_scale_hook")
    assert [(result.status, result.mistake) for result in results] == [
        ("error", TAMPERED), ("error", "01.make_scale_hook.tampered")]


def test_what_was_tampered_with_is_put_back_before_the_next_lesson_is_graded(tmp_path):
    lessons = _lessons(tmp_path / "lessons", WRONG, REPLACE_CHECK_FUNCTIONS + REPLACE_JSON_DUMPS)
    (lessons / "02_removing_hooks.py").write_text((LESSONS_DIR / "02_removing_hooks.py").read_text(encoding="utf-8"),
                                                  encoding="utf-8")
    grader = Grader(lessons, time_limit=60)  # one worker grades both lessons
    try:
        tampered = grader.grade(LESSON, "double_grad")
        following = grader.grade("02_removing_hooks", "grad_with_temporary_hook")
    finally:
        grader.close()
    assert tampered.mistake == TAMPERED
    assert following.status == "not_attempted", following.message


def test_a_right_answer_beside_harmless_changes_to_torchs_global_state_passes(tmp_path):
    (result,) = _grade(_lessons(tmp_path / "lessons", RIGHT, HARMLESS_GLOBAL_STATE))
    assert (result.status, result.mistake) == ("passed", None), result.message


def test_the_gradescope_export_of_a_tampered_submission_scores_nothing_for_it(tmp_path):
    lessons = _lessons(tmp_path / "lessons", WRONG, REPLACE_CHECK_FUNCTIONS)
    completed = hooked(tmp_path, "export", "--format", "gradescope", "--lessons-dir", str(lessons), "01",
                       "--out", "results.json")
    assert completed.returncode == 0, completed.stderr
    tests = {test["name"]: test for test in json.loads((tmp_path / "results.json").read_text())["tests"]}
    double_grad = tests[f"{LESSON}: double_grad"]
    assert (double_grad["score"], double_grad["status"]) == (0, "failed")
    assert TAMPERED in double_grad["tags"]


def test_replacing_the_workers_own_check_exercise_is_not_a_pass(tmp_path):
    (result,) = _grade(_lessons(tmp_path / "lessons", WRONG, REPLACE_WORKERS_CHECK_EXERCISE))
    assert result.status != "passed"
