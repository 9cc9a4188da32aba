"""A class's submissions: a folder (or a .zip of one) holding one folder per learner, named by
the learner's id, each laid out like lessons/ with any of the lesson files, .py and/or .ipynb.
Read only: nothing in the submissions is written or changed (a zip is unpacked elsewhere)."""

import dataclasses
import pathlib
import zipfile

LAYOUT = ("one folder per learner, named by the learner's id, each holding that learner's lesson files "
          "as in lessons/ (01_tensor_hooks.py or 01_tensor_hooks.ipynb, ...)")
_IGNORED = {"__pycache__", ".ipynb_checkpoints", ".hooked-backups", "__MACOSX"}


class SubmissionsError(Exception):
    """The submissions are not laid out as a class's: said in one line."""


@dataclasses.dataclass(frozen=True)
class Learner:
    id: str
    folder: pathlib.Path
    lessons: frozenset  # the names of the lessons they have a file for


def _visible(path):
    return not path.name.startswith(".") and path.name not in _IGNORED


def unpacked(path, scratch):
    """The folder of the submissions at `path`: the folder itself, or a .zip unpacked in `scratch`."""
    path = pathlib.Path(path)
    if path.is_dir():
        return path.resolve()
    if not path.exists():
        raise SubmissionsError(f"{path}: no such folder or file. Give a folder holding {LAYOUT}, or a .zip of it.")
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                parts = pathlib.PurePosixPath(member.replace("\\", "/")).parts
                if member.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                    raise SubmissionsError(f"{path}: the zip holds {member!r}, a path outside its own folder; "
                                           "nothing was unpacked.")
            archive.extractall(scratch)
    except (zipfile.BadZipFile, OSError) as error:
        raise SubmissionsError(f"{path}: not a folder, and it cannot be read as a zip ({error}). Give a folder "
                               f"holding {LAYOUT}, or a .zip of it.") from None
    return pathlib.Path(scratch).resolve()


def _learner_folders(root):
    folders = sorted((entry for entry in root.iterdir() if entry.is_dir() and _visible(entry)),
                     key=lambda entry: entry.name)
    # A zip often wraps the class in one folder of its own: look inside it.
    if len(folders) == 1 and not _lesson_files(folders[0]) and any(
            entry.is_dir() and _visible(entry) for entry in folders[0].iterdir()):
        return _learner_folders(folders[0])
    return folders


def _lesson_files(folder):
    return [entry for entry in folder.iterdir() if entry.is_file() and entry.suffix in (".py", ".ipynb")
            and _visible(entry)]


def learners(root, lesson_names, shown):
    """[Learner, ...] of the submissions in `root`, sorted by id; `shown` names them in errors."""
    folders = _learner_folders(root)
    if not folders:
        raise SubmissionsError(f"{shown}: no learner folders. It should hold {LAYOUT}.")
    stray = [entry.name for entry in _lesson_files(root)]
    if stray:
        raise SubmissionsError(f"{shown}: {stray[0]} is not in a learner's folder. It should hold {LAYOUT}.")
    found = []
    for folder in folders:
        names = set()
        for entry in _lesson_files(folder):
            if entry.stem not in lesson_names:
                raise SubmissionsError(
                    f"{shown}: {folder.name}/{entry.name} is not a lesson. A learner's folder holds lesson files "
                    f"named as in lessons/: {', '.join(sorted(lesson_names))} (.py or .ipynb).")
            names.add(entry.stem)
        found.append(Learner(folder.name, folder, frozenset(names)))
    if not any(learner.lessons for learner in found):
        raise SubmissionsError(f"{shown}: no learner folder holds a lesson file. It should hold {LAYOUT}.")
    return found


def shard(learners, text):
    """The learners of share K of N (`text` "K/N"): equal consecutive shares of the sorted learners."""
    try:
        number, count = (int(part) for part in text.split("/"))
    except ValueError:
        number = count = 0
    if not 1 <= number <= count:
        raise SubmissionsError(f"--shard {text}: give K/N with 1 <= K <= N, e.g. --shard 2/4 for the second "
                               "of four shares.")
    size = len(learners)
    return learners[(number - 1) * size // count: number * size // count]
