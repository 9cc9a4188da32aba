"""Make the learner's lessons/ from solutions/, the single source: each region
between `# BEGIN SOLUTION` and `# END SOLUTION` becomes a stub that raises
NotImplementedError, keeping the signature and docstring above it.

A marker may carry the TODO line the learner sees:
    # BEGIN SOLUTION: return a new tensor; do not change grad in place
"""

import datetime
import pathlib
import re
import shutil

from hooked.course import LESSONS_DIR, ROOT, SOLUTIONS_DIR, lesson_names

_BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION(?::\s*(?P<todo>.*\S))?\s*$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")
_DEFINITION = re.compile(r"^(?P<indent>\s*)(?:async\s+)?(?:def|class)\s+(?P<name>\w+)")
BACKUP_DIR = ROOT / ".hooked-backups"


class MarkerError(ValueError):
    """The solution markers of a file are not well formed."""


def stub_lines(indent, name, todo):
    return [f"{indent}# TODO: {todo or 'write this, as its docstring says.'}",
            f'{indent}raise NotImplementedError("{name} is not written yet")']


def lesson_text_from_solution(text, filename="solution"):
    """The learner's version of a solution file's text."""
    out, enclosing, region_start = [], [], None
    for number, line in enumerate(text.splitlines(), start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if region_start is not None:
            if begin:
                raise MarkerError(f"{filename} line {number}: BEGIN SOLUTION inside the region opened "
                                  f"at line {region_start}; close it with # END SOLUTION first.")
            if end:
                region_start = None
            continue
        if end:
            raise MarkerError(f"{filename} line {number}: END SOLUTION without a BEGIN SOLUTION before it.")
        if begin:
            indent = begin["indent"]
            names = [name for depth, name in enclosing if len(depth) < len(indent)]
            if not names:
                raise MarkerError(f"{filename} line {number}: a solution region must sit inside a def.")
            out.extend(stub_lines(indent, ".".join(names), begin["todo"]))
            region_start = number
            continue
        definition = _DEFINITION.match(line)
        if line.strip():
            indent = re.match(r"\s*", line).group()
            enclosing = [(depth, name) for depth, name in enclosing if len(depth) < len(indent)]
            if definition:
                enclosing.append((definition["indent"], definition["name"]))
        out.append(line)
    if region_start is not None:
        raise MarkerError(f"{filename} line {region_start}: BEGIN SOLUTION is never closed by # END SOLUTION.")
    return "\n".join(out) + "\n"


def is_solution_marker(line):
    """True for a `# BEGIN SOLUTION[: ...]` or `# END SOLUTION` line."""
    return bool(_BEGIN.match(line) or _END.match(line))


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
