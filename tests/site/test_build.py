"""The build hooks (website/hooks.py) on their own: which text each page and download is made
of, and how a notebook is executed."""

from hooked.course import SOLUTIONS_DIR, lesson_names
from hooked.generate import fresh_lesson_text


def test_lesson_pages_are_the_generators_text(hooks):
    for name in lesson_names():
        assert hooks.page_text("lessons", name) == fresh_lesson_text(name), name
        assert hooks.page_text("solutions", name) == (SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8")
    assert set(hooks.page_texts()) == {(folder, name) for folder in ("lessons", "solutions") for name in lesson_names()}


def test_a_checkout_whose_lessons_are_solved_gets_pristine_lesson_pages(hooks, tmp_path):
    name = lesson_names()[0]
    solution = (SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8")
    for folder in ("solutions", "lessons"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{name}.py").write_text(solution, encoding="utf-8")  # lessons/: all solved
    text = hooks.page_text("lessons", name, root=tmp_path)
    assert text == fresh_lesson_text(name)
    assert "# BEGIN SOLUTION" not in text and "is not written yet" in text
