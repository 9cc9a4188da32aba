"""Opening a lesson in Jupyter (through jupytext) and saving it keeps the committed
.py byte for byte, and writes the paired notebook beside it."""

import shutil

from jupytext.sync_contentsmanager import TextFileContentsManager

from hooked.course import LESSONS_DIR, ROOT, lessons


def test_saving_in_jupyter_keeps_the_lesson_file_and_writes_the_paired_notebook(tmp_path):
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    shutil.copytree(LESSONS_DIR, tmp_path / "lessons", ignore=shutil.ignore_patterns("*.ipynb"))
    manager = TextFileContentsManager(root_dir=str(tmp_path))
    for lesson in lessons():
        path = lesson.lesson_path.relative_to(ROOT).as_posix()
        before = (tmp_path / path).read_bytes()
        model = manager.get(path)
        assert model["type"] == "notebook"
        manager.save(model, path)
        assert (tmp_path / path).read_bytes() == before
        assert (tmp_path / path).with_suffix(".ipynb").exists()
