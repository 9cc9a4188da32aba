"""The cache of recorded prediction logs (hooked.checks.recorded_logs): a log is recorded by running
the code, kept, read back only under the same key, recorded again when any part of its key
differs or its file cannot be read, and written whole or not at all, outside the lessons."""

import json

import pytest

from hooked.checks import recorded_logs
from hooked.checks import event_predictions
from hooked.course import ROOT


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(recorded_logs.CACHE_VARIABLE, str(tmp_path))
    return tmp_path / recorded_logs.SUBFOLDER


def _recorder(log):
    runs = []

    def record():
        runs.append(1)
        return log
    return record, runs


def test_a_log_is_recorded_once_then_read_back_under_the_same_key(cache):
    record, runs = _recorder(["fwd:a", "bwd:a"])
    assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record) == ("fwd:a", "bwd:a")
    assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record) == ("fwd:a", "bwd:a")
    assert len(runs) == 1
    assert [path.name for path in cache.iterdir()][0].startswith("09_pitfalls.events.")


@pytest.mark.parametrize("part, value", [("torch", "2.99.0"), ("torch build", "0" * 40), ("python", "3.0.0"),
                                         ("lesson", "10_other"), ("code", "other_events"),
                                         ("prediction cells", ["cell text changed"])])
def test_a_log_kept_under_a_key_that_differs_in_any_part_is_recorded_again(cache, monkeypatch, part, value):
    record, runs = _recorder(["fwd:a"])
    recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record)
    real_key_of = recorded_logs.key_of
    monkeypatch.setattr(recorded_logs, "key_of", lambda *args: dict(real_key_of(*args), **{part: value}))
    record_again, runs_again = _recorder(["fwd:b"])
    assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record_again) == ("fwd:b",)
    assert len(runs_again) == 1


def test_a_kept_file_whose_key_differs_from_its_name_is_not_read(cache):
    record, _ = _recorder(["fwd:a"])
    recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record)
    path = next(cache.iterdir())
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["key"]["torch"] = "another"
    path.write_text(json.dumps(stored), encoding="utf-8")
    record_again, runs = _recorder(["fwd:b"])
    assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record_again) == ("fwd:b",)
    assert runs == [1]


@pytest.mark.parametrize("content", ["", "{not json", '{"key": 1}', "[1, 2]", None])
def test_an_unreadable_or_malformed_file_is_recorded_again_and_replaced(cache, content):
    record, _ = _recorder(["fwd:a"])
    recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record)
    path = next(cache.iterdir())
    if content is None:  # a folder where the file should be: reading it raises
        path.unlink()
        path.mkdir()
    else:
        path.write_text(content, encoding="utf-8")
    record_again, runs = _recorder(["fwd:b"])
    assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record_again) == ("fwd:b",)
    assert runs == [1]
    if content is not None:
        assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], _recorder(["x"])[0]) == ("fwd:b",)


def test_a_log_is_written_whole_by_a_rename_and_a_failed_write_leaves_no_file(cache, monkeypatch):
    record, _ = _recorder(["fwd:a"])
    recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record)
    assert [path.name.startswith(".writing-") for path in cache.iterdir()] == [False]

    def broken_dump(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(recorded_logs.json, "dump", broken_dump)
    assert recorded_logs.recorded("09_pitfalls", "other", ["cell text"], _recorder(["fwd:b"])[0]) == ("fwd:b",)
    assert len(list(cache.iterdir())) == 1  # neither the half-written file nor its temporary


def test_a_folder_that_cannot_be_written_only_means_recording_again(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(recorded_logs.CACHE_VARIABLE, str(blocker))
    record, runs = _recorder(["fwd:a"])
    for _ in range(2):
        assert recorded_logs.recorded("09_pitfalls", "events", ["cell text"], record) == ("fwd:a",)
    assert len(runs) == 2


def test_the_default_cache_is_the_courses_gitignored_cache_folder_not_beside_the_lessons(monkeypatch):
    monkeypatch.delenv(recorded_logs.CACHE_VARIABLE)
    folder = recorded_logs.cache_dir()
    assert folder.parent == ROOT / ".cache"
    assert ".cache/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert not folder.is_relative_to(ROOT / "lessons") and not folder.is_relative_to(ROOT / "solutions")


def test_a_prediction_log_is_recorded_by_running_the_lessons_code_and_kept_with_its_key(cache):
    event_predictions.recorded_events.cache_clear()
    try:
        log = event_predictions.recorded_events("09_pitfalls", "checkpoint_events")
        cells = [source for source, _ in event_predictions.prediction_cells("09_pitfalls")]
        assert log == event_predictions.run_prediction_code("09_pitfalls", "checkpoint_events",
                                                            event_predictions.prediction_cells("09_pitfalls"))
        (path,) = cache.iterdir()
        stored = json.loads(path.read_text(encoding="utf-8"))
        assert stored["log"] == list(log)
        assert stored["key"] == recorded_logs.key_of("09_pitfalls", "checkpoint_events", cells)
        assert "checkpoint(block, x, use_reentrant=" in stored["key"]["prediction cells"][0]
    finally:
        event_predictions.recorded_events.cache_clear()
