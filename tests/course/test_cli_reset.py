"""`hooked reset LESSON`: the fresh lesson again, made by the generator, after the learner's
.py and paired .ipynb are saved in a timestamped backup."""

import datetime
import types

from hooked.command import backups
from hooked.lesson_files.solution_markers import lesson_text_from_solution
from hooked_cli import hooked, make_course, write_lesson


def test_reset_restores_the_fresh_lesson_and_keeps_the_py_and_notebook_in_a_backup(tmp_path):
    course = make_course(tmp_path)
    script = write_lesson(course, "01_tensor_hooks", solved={"double_grad"})
    notebook = write_lesson(course, "01_tensor_hooks", solved={"double_grad", "record_grads"}, suffix=".ipynb")
    work = script.read_text(encoding="utf-8"), notebook.read_text(encoding="utf-8")

    completed = hooked(course, "reset", "01")
    assert completed.returncode == 0, completed.stderr
    fresh = lesson_text_from_solution((course / "solutions" / "01_tensor_hooks.py").read_text(encoding="utf-8"))
    assert script.read_text(encoding="utf-8") == fresh
    assert not notebook.exists()
    (backup,) = (course / ".hooked-backups").iterdir()
    assert backup.name[:8].isdigit()  # named after the time, e.g. 20261129-165636-125223
    assert (backup / script.name).read_text(encoding="utf-8") == work[0]
    assert (backup / notebook.name).read_text(encoding="utf-8") == work[1]
    assert f"saved lessons/01_tensor_hooks.py and lessons/01_tensor_hooks.ipynb in .hooked-backups/{backup.name}" \
        in completed.stdout
    assert (course / "lessons" / "02_removing_hooks.py").read_text(encoding="utf-8") == lesson_text_from_solution(
        (course / "solutions" / "02_removing_hooks.py").read_text(encoding="utf-8"))

    again = hooked(course, "reset", "01_tensor_hooks")
    assert "already the fresh lesson; nothing to reset" in again.stdout
    assert len(list((course / ".hooked-backups").iterdir())) == 1  # nothing new to keep


def test_a_lesson_saved_in_another_encoding_is_backed_up_byte_for_byte_and_reset(tmp_path):
    course = make_course(tmp_path)
    script = course / "lessons" / "01_tensor_hooks.py"
    work = script.read_bytes() + "# café\n".encode("latin-1")
    script.write_bytes(work)
    completed = hooked(course, "reset", "01")
    assert completed.returncode == 0, completed.stderr
    (backup,) = (course / ".hooked-backups").iterdir()
    assert (backup / script.name).read_bytes() == work
    assert script.read_text(encoding="utf-8") == lesson_text_from_solution(
        (course / "solutions" / "01_tensor_hooks.py").read_text(encoding="utf-8"))


def test_two_backups_made_at_the_same_instant_get_a_folder_each(tmp_path, monkeypatch):
    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime(2026, 11, 29, 17, 0, 0, 123456)

    monkeypatch.setattr(backups, "datetime", types.SimpleNamespace(datetime=Frozen))
    lesson = tmp_path / "01_tensor_hooks.py"
    folders = []
    for text in ("first work\n", "second work\n"):
        lesson.write_text(text, encoding="utf-8")
        folders.append(backups.back_up([lesson], tmp_path / "backups"))
    assert [folder.name for folder in folders] == ["20261129-170000-123456", "20261129-170000-123456-2"]
    assert [(folder / lesson.name).read_text(encoding="utf-8") for folder in folders] == ["first work\n",
                                                                                         "second work\n"]


def test_when_no_backup_can_be_saved_the_lesson_is_left_as_it_is(tmp_path):
    course = make_course(tmp_path)
    script = write_lesson(course, "01_tensor_hooks", solved={"double_grad"})
    work = script.read_text(encoding="utf-8")
    (course / ".hooked-backups").write_text("a file where the backup folder should be\n", encoding="utf-8")
    completed = hooked(course, "reset", "01")
    assert completed.returncode == 2
    assert completed.stderr.startswith("hooked: error: could not save a backup of your lesson, so nothing was "
                                       "changed"), completed.stderr
    assert script.read_text(encoding="utf-8") == work
