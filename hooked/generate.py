"""Write the learner's lessons/ from solutions/, the single source (hooked.solution_markers
says how a solution becomes a stub), backing up any lesson file it replaces."""

import datetime
import shutil

from hooked.course import LESSONS_DIR, ROOT, SOLUTIONS_DIR, lesson_names
from hooked.solution_markers import lesson_text_from_solution

BACKUP_DIR = ROOT / ".hooked-backups"


def fresh_lesson_text(lesson):
    """The learner's version of `lesson`, as the generator writes it to lessons/."""
    return lesson_text_from_solution((SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8"),
                                     f"solutions/{lesson}.py")


def expected_lessons():
    """{lesson file path: the text it should have}, for every lesson."""
    return {LESSONS_DIR / f"{lesson}.py": fresh_lesson_text(lesson) for lesson in lesson_names()}


def back_up(paths):
    """Copy the files that exist into a new timestamped folder; return it (or None)."""
    existing = [path for path in paths if path.exists()]
    if not existing:
        return None
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    folder, number = BACKUP_DIR / stamp, 1
    while True:  # a clock that ticks coarsely (Windows) can give two backups the same time
        try:
            folder.mkdir(parents=True)
            break
        except FileExistsError:
            number += 1
            folder = BACKUP_DIR / f"{stamp}-{number}"
    for path in existing:
        shutil.copy2(path, folder / path.name)
    return folder


def write_lessons(names=None):
    """Regenerate lessons/ (or only `names`). A lesson file that would change is
    backed up first, with its paired notebook. Returns [(path, backup folder)]."""
    written = []
    for path, text in expected_lessons().items():
        if names is not None and path.stem not in names:
            continue
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        backup = back_up([path, path.with_suffix(".ipynb")])
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append((path, backup))
    return written


def stale_lessons():
    """The lesson files that differ from what the generator makes."""
    return [path for path, text in expected_lessons().items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]
