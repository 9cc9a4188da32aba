"""`hooked generate [LESSON...]` (for authors): regenerates only the lessons named, so that
one author's run leaves another lesson's work in progress alone."""

from hooked_cli import hooked, make_course


def test_generate_with_a_lesson_name_writes_only_that_lesson(tmp_path):
    course = make_course(tmp_path)
    for lesson in ("01_tensor_hooks", "02_removing_hooks"):
        path = course / "lessons" / f"{lesson}.py"
        path.write_text(path.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")

    checked = hooked(course, "generate", "--check", "02")
    assert checked.returncode == 1 and "lessons/02_removing_hooks.py differs" in checked.stdout
    assert "01_tensor_hooks" not in checked.stdout

    completed = hooked(course, "generate", "1")
    assert completed.returncode == 0, completed.stderr
    assert "wrote lessons/01_tensor_hooks.py" in completed.stdout
    assert not (course / "lessons" / "01_tensor_hooks.py").read_text(encoding="utf-8").endswith("# changed\n")
    assert (course / "lessons" / "02_removing_hooks.py").read_text(encoding="utf-8").endswith("# changed\n")


def test_generate_with_an_unknown_lesson_says_which_lessons_exist(tmp_path):
    course = make_course(tmp_path)
    completed = hooked(course, "generate", "99")
    assert completed.returncode == 2
    assert "no lesson 99; lessons are: 01_tensor_hooks, 02_removing_hooks" in completed.stderr
    assert "Traceback" not in completed.stderr
