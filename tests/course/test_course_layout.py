"""The pieces of each lesson agree: an exercise cell in solutions/ is followed by its
check cell; the requirements; what the lessons teach of deprecated hooks. (That the
checks and grading files name the manifest's exercises: test_course_manifest.py.)"""

import re

import jupytext

from hooked.course import ROOT, lessons


def test_each_exercise_cell_defines_one_exercise_and_is_followed_by_its_check_cell():
    for lesson in lessons():
        cells = [cell for cell in jupytext.read(lesson.solution_path).cells if cell.cell_type == "code"]
        exercise_cells = [index for index, cell in enumerate(cells) if "exercise" in cell.metadata.get("tags", [])]
        assert len(exercise_cells) == len(lesson.exercises), f"{lesson.name}: a cell defines more than one exercise"
        for index, exercise in zip(exercise_cells, lesson.exercises):
            assert cells[index + 1].source.strip() == f"check({exercise.name})", \
                f"{lesson.name}: no check cell after {exercise.name}"


def test_requirements_pin_torch_2_13_and_install_the_course():
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==2\.13\.\*$", requirements, re.MULTILINE)
    assert re.search(r"^-e \.$", requirements, re.MULTILINE)


def test_lessons_teach_full_backward_hooks_not_the_deprecated_one():
    for lesson in lessons():
        text = lesson.solution_path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if re.search(r"\.register_backward_hook\(", line):
                assert "deprecat" in text.lower(), f"{lesson.name} uses register_backward_hook without explaining"
