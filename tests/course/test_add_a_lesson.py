"""The README's "Add a lesson", followed on a copy of the course: a new lesson of one exercise is written
in the three files the README's steps name (its solution cell, its checks, its catalogue entries), the
README's commands are run, nothing else is touched, and the course's own tests pass on that copy."""

import hashlib
import os
import pathlib
import re
import subprocess
import sys

import pytest

from hooked import course
from hooked.command.generate import NEW_LESSON_LEARNS

NUMBER = f"{max(lesson.number for lesson in course.lessons()) + 1:02d}"
NAME = f"{NUMBER}_negated_gradients"

SOLUTION = f'''# %% [markdown]
# # Lesson {NUMBER} — Negated gradients
#
# After this lesson you will be able to write a tensor hook that negates a gradient.
#
# **Where your code goes.** Write all of your code in the exercise cells.

# %%
import torch

from hooked.notebook import check, hint, try_it

# %% [markdown]
# ## Exercise 1: `negate_grad` · easy · about 5 min
#
# Write the hook `negate_grad(grad)`: it returns a **new** tensor equal to `-grad`.

# %%
g = torch.tensor([1.0, -2.0])
print("-g =", -g)
assert torch.equal(-g, torch.tensor([-1.0, 2.0]))

# %% tags=["exercise"]
# Exercise: negate_grad — write your code in this cell.
import torch


def negate_grad(grad):
    """Tensor hook that negates the gradient.

    Returns a new tensor equal to `-grad`.
    Must not change `grad` in place.
    """
    # BEGIN SOLUTION
    return -grad
    # END SOLUTION


# %%
check(negate_grad)

# %% [markdown] tags=["hints"]
''' + "".join(f'''# <details class="tip"><summary>Hint {level} of 3: {title}</summary>
#
# {text}
#
# </details>
#
''' for level, title, text in ((1, "the idea", "The tensor the hook returns replaces the gradient."),
                               (2, "the API", "Unary minus builds a new tensor."),
                               (3, "almost there", "Return the negation of `grad`, not `grad.neg_()`."))).rstrip("#\n") + "\n"

CHECKS = '''"""The checks of the lesson on negated gradients."""

import torch

from hooked.checks.check_api import calling, check_of, fail


@check_of("negate_grad", mistakes={"in-place": "negates grad in place instead of returning a new tensor",
                                   "not-negated": "returns something other than -grad"})
def check_negate_grad(negate_grad):
    grad = torch.randn(3, 4, generator=torch.Generator().manual_seed(14))
    before = grad.clone()
    with calling("calling negate_grad(grad) with grad of shape (3, 4)"):
        result = negate_grad(grad)
    if not torch.equal(grad, before):
        fail("negate_grad changed `grad` in place; return a new tensor and leave `grad` as it was.", "in-place")
    if not isinstance(result, torch.Tensor) or not torch.equal(result, -before):
        fail(f"negate_grad returned {result!r:.80}; expected a new tensor equal to -grad.", "not-negated")
'''

CATALOGUE = '''"""Mistake catalogue of the lesson on negated gradients."""

from mistakes import edited, reference

CLAUSES = {"negate_grad": {"value": "Returns a new tensor equal to `-grad`.",
                           "not-in-place": "Must not change `grad` in place."}}
NOT_CLAUSES = {"negate_grad": {"Tensor hook that negates the gradient.": "the title"}}

ENTRIES = [
    dict(exercise="negate_grad", kind="wrong", why="returns grad", clause="value",
         source=edited(reference("negate_grad"), ("return -grad", "return grad")), expect=["equal to -grad"],
         mistake="NN.negate_grad.not-negated"),
    dict(exercise="negate_grad", kind="wrong", why="doubles", clause="value",
         source=edited(reference("negate_grad"), ("return -grad", "return 2 * grad")), expect=["equal to -grad"],
         mistake="NN.negate_grad.not-negated"),
    dict(exercise="negate_grad", kind="wrong", why="negates in place", clause="not-in-place",
         source=edited(reference("negate_grad"), ("return -grad", "return grad.neg_()")), expect=["in place"],
         mistake="NN.negate_grad.in-place"),
    dict(exercise="negate_grad", kind="right", why="multiplies by -1",
         source=edited(reference("negate_grad"), ("return -grad", "return grad * -1")), expect=[]),
]
'''

# What the three files are, as the README's steps name them (NN_slug: the lesson's name).
WRITTEN = {"solutions/NN_slug.py": SOLUTION, "hooked/checks/lesson_NN_slug.py": CHECKS,
           "tests/course/mistakes/lesson_NN_slug.py": CATALOGUE.replace('"NN.', f'"{NUMBER}.')}

# The course's tests that read every lesson, run whole; then those of one lesson or exercise, for the new one.
WHOLE = ["tests/course/test_course_manifest.py", "tests/course/test_readme_lessons.py", "tests/course/test_hints.py",
         "tests/course/test_generator.py", "tests/course/test_course_layout.py",
         "tests/course/test_contract_clauses.py", "tests/course/canaries/test_canary_sections.py",
         "tests/course/test_mistake_ids.py"]
OF_THE_LESSON = [f"tests/test_{NAME}.py", "tests/course/test_mistake_catalogue.py",
                 "tests/course/test_catalogue_verdicts.py", "tests/course/test_notebooks_execute.py"]


def _section():
    text = (course.ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### Add a lesson\n")
    return text[start:text.index("\n### ", start + 1)]


def _for_the_lesson(text):
    return text.replace("NN_slug", NAME).replace("NN", NUMBER)


def _tracked_files(root):
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [path for path in listed if path and (root / path).is_file()]


def _digests(root):
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in root.rglob("*") if path.is_file() and "__pycache__" not in path.parts}


def _run(command, copy):
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory):
    if not (course.ROOT / ".git").exists():
        pytest.skip("the copy is made of the files git lists: run from a git checkout of the course")
    copy = tmp_path_factory.mktemp("course")
    for path in _tracked_files(course.ROOT):
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_bytes((course.ROOT / path).read_bytes())
    return copy


def test_the_readme_names_each_file_an_author_writes_and_the_commands_it_runs():
    section = _section()
    assert len([line for line in section.splitlines() if line.strip()]) <= 30, "keep 'Add a lesson' short"
    for path in WRITTEN:
        assert f"`{path}`" in section, f"'Add a lesson' no longer names {path}: update this test or the README"
    assert "`python -m hooked generate NN`" in section and "`python tests/course/test_catalogue_verdicts.py NN`" in section
    assert "\n2. **Its checks**, `hooked/checks/lesson_NN_slug.py`" in section, "the grader's messages send authors to step 2"


def test_a_lesson_added_as_the_readme_says_passes_the_course_tests(course_copy):
    section = _for_the_lesson(_section())
    for path, text in WRITTEN.items():
        (course_copy / _for_the_lesson(path)).write_text(text, encoding="utf-8")
    before = _digests(course_copy)
    for command in re.findall(r"`(python [^`]+)`", section):
        ran = _run([sys.executable, *command.split()[1:]], course_copy)
        assert ran.returncode == 0, f"{command}:\n{ran.stdout}\n{ran.stderr}"
    readme = course_copy / "README.md"  # the step's last words: write the new row's "You learn" cell
    readme.write_text(readme.read_text(encoding="utf-8").replace(NEW_LESSON_LEARNS, "a hook that negates"),
                      encoding="utf-8")
    after = _digests(course_copy)
    touched = {path for path in after if before.get(path) != after[path]}
    named = set(re.findall(r"`([\w./-]+/[\w./-]+)`", section)) | {"README.md"}  # the section is README.md's
    assert touched - named == set(), f"the README's commands wrote files its steps do not name: {touched - named}"
    assert {f"lessons/{NAME}.py", f"tests/test_{NAME}.py", "tests/course/mistakes/verdicts.json",
            "tests/course/mistake_ids.txt"} <= touched

    whole = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--course", *WHOLE], course_copy)
    assert whole.returncode == 0, whole.stdout[-4000:]
    lesson = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--solutions", "--course",
                   *OF_THE_LESSON, "-k", f"{NAME} or negate_grad"], course_copy)
    assert lesson.returncode == 0, lesson.stdout[-4000:]
    assert re.search(r"\b(1[0-9]|[2-9][0-9]) passed", lesson.stdout), lesson.stdout[-2000:]  # not all deselected
