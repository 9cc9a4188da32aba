"""The logs the prediction exercises' code records, kept between runs.

Recording lesson 09's checkpoint log imports torch._dynamo (0.7-1.3 s, once per process: torch
2.13's non-reentrant checkpoint reads torch._dynamo.config whatever the caller does). So a log,
once recorded by running the lesson's code on the installed torch, is kept in the course's
gitignored .cache/ folder (never next to the lessons), under a key of everything it depends on:
torch's version and build, Python's version, the lesson, the code's name and the exact text of
the lesson's prediction cells. A key that differs in any part, or a file that cannot be read,
means the code runs again and the log is recorded anew. HOOKED_CACHE_DIR sets another folder."""

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from hooked.course import ROOT

CACHE_VARIABLE = "HOOKED_CACHE_DIR"
SUBFOLDER = "hooked-event-logs"


def cache_dir():
    return Path(os.environ.get(CACHE_VARIABLE) or ROOT / ".cache") / SUBFOLDER


def key_of(lesson, code, cells_text):
    """Everything the recorded log depends on."""
    import torch  # only where a log is read or kept: importing this module stays light
    return {"torch": torch.__version__, "torch build": torch.version.git_version, "python": sys.version,
            "lesson": lesson, "code": code, "prediction cells": cells_text}


def _path(key):
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:24]
    return cache_dir() / f"{key['lesson']}.{key['code']}.{digest}.json"


def read(key):
    """The log kept under `key`, or None when there is none, it cannot be read or its key differs."""
    try:
        stored = json.loads(_path(key).read_text(encoding="utf-8"))
        if stored["key"] != key or not all(isinstance(event, str) for event in stored["log"]):
            return None
        return tuple(stored["log"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write(key, log):
    """Keep `log` under `key`, atomically (a reader sees the whole file or none); a folder that
    cannot be written only means the log is recorded again next time."""
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".writing-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump({"key": key, "log": list(log)}, file, indent=1)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass


def recorded(lesson, code, cells_text, record):
    """The log of `code`, from the cache when its key matches, else `record()` run now and kept."""
    key = key_of(lesson, code, cells_text)
    log = read(key)
    if log is None:
        log = tuple(record())
        write(key, log)
    return log
