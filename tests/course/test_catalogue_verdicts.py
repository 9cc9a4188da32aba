"""The mistake catalogue grades as recorded: tests/course/mistakes/verdicts.json holds, for
every entry, the status the grader gave it and the hint words its message matched when it
was recorded. An entry renamed, dropped, or graded differently (a refactor of the checks or
of the catalogue that changed a verdict) fails here, with what changed.

Record again after adding entries or changing one on purpose:

    python tests/course/test_catalogue_verdicts.py        # every lesson's entries
    python tests/course/test_catalogue_verdicts.py 14     # only lesson 14's (the others kept as recorded)
"""

import functools
import gc
import json
import pathlib
import sys

import pytest

from hooked import course
from hooked.grader.check_registry import checks_for_lesson

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_mistake_catalogue import (  # noqa: E402
    ENTRIES, _entry_id, _grade, imports_set_aside_from_the_garbage_collector)  # noqa: F401 (the fixture: autouse)

VERDICTS = pathlib.Path(__file__).resolve().parent / "mistakes" / "verdicts.json"


def _key(entry):
    return f"{entry['lesson']}::{_entry_id(entry)}"


def _verdict(entry):
    result = _grade(entry)
    message = (result.message or "").lower()
    return {"status": result.status, "matched": [word for word in entry["expect"] if word.lower() in message]}


@functools.lru_cache(maxsize=None)
def _recorded():
    return json.loads(VERDICTS.read_text(encoding="utf-8"))


def test_every_entry_is_recorded_and_every_record_has_its_entry():
    recorded = _recorded()
    current = {_key(entry) for entry in ENTRIES}
    dropped = sorted(set(recorded) - current)
    new = sorted(current - set(recorded))
    assert not dropped, f"entries recorded in {VERDICTS.name} are gone from the catalogue (renamed or deleted?): {dropped}"
    assert not new, (f"entries not yet recorded in {VERDICTS.name}: {new}; "
                     "record them with `python tests/course/test_catalogue_verdicts.py`")


@pytest.mark.parametrize("entry", ENTRIES, ids=_key)
def test_entry_grades_as_recorded(entry):
    recorded = _recorded().get(_key(entry))
    if recorded is None:
        pytest.skip("not recorded yet (the test above fails for it)")
    assert _verdict(entry) == recorded


def record(lessons=None):
    """Grade the entries of `lessons` (names; None: all) and write their verdicts, keeping those of
    the other lessons as they were recorded."""
    entries = [entry for entry in ENTRIES if lessons is None or entry["lesson"] in lessons]
    for lesson in {entry["lesson"] for entry in entries}:  # as the fixture does, for the same verdicts
        checks_for_lesson(lesson)
    gc.freeze()
    kept = {} if lessons is None else {key: verdict for key, verdict in _recorded().items()
                                       if key.split("::")[0] not in lessons}
    verdicts = dict(kept, **{_key(entry): _verdict(entry) for entry in entries})
    VERDICTS.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {len(verdicts) - len(kept)} verdicts in {VERDICTS} ({len(kept)} kept as they were)")


def _lessons_meant(texts):
    """The lesson names that `texts` (01, 1, 01_tensor_hooks, ...) mean; exits with a message for one that is none."""
    meant = [course.lesson_meant_by(text) for text in texts]
    unknown = [text for text, lesson in zip(texts, meant) if lesson is None]
    if unknown:
        sys.exit(f"no lesson {', '.join(unknown)}: give lesson numbers or names, e.g. 01 or 01_tensor_hooks")
    return {lesson.name for lesson in meant}


if __name__ == "__main__":
    record(_lessons_meant(sys.argv[1:]) if sys.argv[1:] else None)
