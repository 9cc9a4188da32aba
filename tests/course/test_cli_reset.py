"""`hooked reset LESSON`: the fresh lesson again, made by the generator, after the learner's
.py and paired .ipynb are saved in a timestamped backup."""

from hooked.generate import lesson_text_from_solution
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
