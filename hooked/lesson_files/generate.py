"""Write the learner's lessons/ from solutions/, the single source (hooked.lesson_files.solution_markers
says how a solution becomes a stub), backing up any lesson file it replaces (hooked.lesson_files.backups)."""

from hooked.lesson_files.backups import BACKUP_DIR, back_up
from hooked.course import LESSONS_DIR, fresh_lesson_text, lesson_names


def expected_lessons():
    """{lesson file path: the text it should have}, for every lesson."""
    return {LESSONS_DIR / f"{lesson}.py": fresh_lesson_text(lesson) for lesson in lesson_names()}


def write_lessons(names=None):
    """Regenerate lessons/ (or only `names`). A lesson file that would change is
    backed up first, with its paired notebook, in BACKUP_DIR. Returns [(path, backup folder)]."""
    written = []
    for path, text in expected_lessons().items():
        if names is not None and path.stem not in names:
            continue
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        backup = back_up([path, path.with_suffix(".ipynb")], BACKUP_DIR)
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append((path, backup))
    return written


def stale_lessons():
    """The lesson files that differ from what the generator makes."""
    return [path for path, text in expected_lessons().items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]
