"""The options that `pytest` and the `hooked` command both take (--lessons-dir, --time-limit,
and the file a report is written to), defined once: name, help, how the text typed is read
and what is said when it is wrong. Each front end adds the option its own way and says a
ValueError's text after the option's name (pytest: "--time-limit soon: ...", argparse:
"argument --time-limit: soon: ...").

Imports only the standard library: the `hooked` command reads its options without loading
the grading engine."""

import dataclasses
import os
import pathlib

DEFAULT_TIME_LIMIT = 10.0
LONGEST_TIME_LIMIT = 86400.0  # a day: anything longer is a typing mistake


def read_lessons_dir(text):
    """The folder `text` names, resolved; ValueError when there is none."""
    if not pathlib.Path(text).is_dir():
        raise ValueError(f"{text}: no such folder. Give a folder laid out like lessons/ "
                         "(with files such as 01_tensor_hooks.py).")
    return pathlib.Path(text).resolve()


def read_time_limit(text):
    """Seconds from the text of a --time-limit option; ValueError saying what is accepted."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= LONGEST_TIME_LIMIT:
        raise ValueError(f"{text}: give a positive number of seconds up to {LONGEST_TIME_LIMIT:g}, "
                         "e.g. --time-limit 30.")
    return value


def read_report_file(text, option="--report"):
    """The file `text` names, once it is sure it can be written there (said now, not after
    grading the whole course); ValueError otherwise. `option` is the name the example uses."""
    path = pathlib.Path(text)
    if path.is_dir():
        raise ValueError(f"{text}: that is a folder; give a file name, e.g. {option} results.json.")
    if not path.resolve().parent.is_dir():
        raise ValueError(f"{text}: the folder {path.parent} does not exist; create it first "
                         "or write the report elsewhere.")
    if not os.access(path.resolve().parent, os.W_OK):
        raise ValueError(f"{text}: the folder {path.parent} is not writable; choose another place.")
    return path


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    metavar: str
    help: str
    read: object  # text -> value; a ValueError says what is wrong


LESSONS_DIR = Option("--lessons-dir", "DIR", "the lessons in DIR (laid out like lessons/) instead of lessons/",
                     read_lessons_dir)
TIME_LIMIT = Option("--time-limit", "SECONDS",
                    f"stop an exercise whose code runs longer than this (default {DEFAULT_TIME_LIMIT:g})",
                    read_time_limit)
REPORT = Option("--report", "FILE", "write every exercise's status and feedback to FILE as JSON",
                read_report_file)
