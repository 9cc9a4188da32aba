"""The pieces of each lesson agree: solutions/, its checks, its grading file."""

import ast
import re

from hooked.checks import checks_for_lesson
from hooked.course import ROOT, SOLUTIONS_DIR, lesson_names
from hooked.lesson_file import load_lesson_source, top_level_names


def _exercises_in_solution(lesson):
    return [name for cell in load_lesson_source(SOLUTIONS_DIR, lesson).cells for name in cell.defines]


def _exercises_in_grading_file(lesson):
    tree = ast.parse((ROOT / "tests" / f"test_{lesson}.py").read_text(encoding="utf-8"))
    graded = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            lesson_arg, name_arg = (arg.value for arg in node.value.args)
            assert lesson_arg == lesson
            assert node.targets[0].id == f"test_{name_arg}"
            graded.append(name_arg)
    return graded


def test_there_are_lessons():
    assert lesson_names()[:2] == ["01_tensor_hooks", "02_removing_hooks"]


def test_solution_checks_and_grading_file_name_the_same_exercises_in_order():
    for lesson in lesson_names():
        in_solution = _exercises_in_solution(lesson)
        assert in_solution, f"{lesson} has no exercise"
        assert list(checks_for_lesson(lesson)) == in_solution, lesson
        assert _exercises_in_grading_file(lesson) == in_solution, lesson


def test_each_exercise_cell_defines_one_exercise_and_is_followed_by_its_check_cell():
    import jupytext
    for lesson in lesson_names():
        cells = [cell for cell in jupytext.read(SOLUTIONS_DIR / f"{lesson}.py").cells if cell.cell_type == "code"]
        for index, cell in enumerate(cells):
            if "exercise" not in cell.metadata.get("tags", []):
                continue
            (name,) = top_level_names(cell.source)
            assert cells[index + 1].source.strip() == f"check({name})", f"{lesson}: no check cell after {name}"


def test_exercise_names_are_unique_across_the_course():
    names = [name for lesson in lesson_names() for name in checks_for_lesson(lesson)]
    assert len(names) == len(set(names))


def test_requirements_pin_torch_2_13_and_install_the_course():
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==2\.13\.\*$", requirements, re.MULTILINE)
    assert re.search(r"^-e \.$", requirements, re.MULTILINE)


def test_lessons_teach_full_backward_hooks_not_the_deprecated_one():
    for lesson in lesson_names():
        text = (SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8")
        for line in text.splitlines():
            if re.search(r"\.register_backward_hook\(", line):
                assert "deprecat" in text.lower(), f"{lesson} uses register_backward_hook without explaining"
