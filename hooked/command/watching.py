"""Which lessons were saved: an endless iterator of sets of lesson names, from the
file system's change events (the watchfiles library), or, where there are none
(some network and container file systems) or watchfiles is missing, from
comparing the files' modification times every half second."""

import pathlib
import time

from hooked.course import LESSON_FILE

POLL_SECONDS = 0.5


def lesson_of(path, lessons):
    """'01_tensor_hooks' for .../01_tensor_hooks.py or .ipynb when it is one of `lessons`, else None."""
    path = pathlib.Path(path)
    return path.stem if LESSON_FILE.match(path.name) and path.stem in lessons else None


def saved_lessons(folder, lessons, poll=False, note=print, ready=lambda: None):
    """Yield the set of `lessons` whose .py or .ipynb in `folder` changed, each time some did.
    `ready()` is called once changes are being watched (a save before that may be missed);
    `note(text)` is told when change events are not used."""
    folder = pathlib.Path(folder).resolve()
    if not poll:
        try:
            import watchfiles
        except ImportError:
            note(f"watchfiles is not installed; looking for changes every {POLL_SECONDS:g} s instead.")
        else:
            try:
                yield from _events(watchfiles, folder, lessons, ready)
                return
            except OSError as error:  # e.g. the limit of watched files is reached
                note(f"file change events are not available ({error}); looking for changes every "
                     f"{POLL_SECONDS:g} s instead.")
    yield from _polled(folder, lessons, ready)


def _events(watchfiles, folder, lessons, ready):
    # A timeout that yields an empty set tells when the watcher has started.
    watching = False
    for changes in watchfiles.watch(folder, recursive=False, raise_interrupt=True, rust_timeout=500,
                                    yield_on_timeout=True,
                                    watch_filter=lambda change, path: lesson_of(path, lessons) is not None):
        if not watching:
            watching = True
            ready()
        if changes:
            yield {lesson_of(path, lessons) for _, path in changes}


def _stamps(folder, lessons):
    stamps = {}
    for lesson in lessons:
        for path in (folder / f"{lesson}.py", folder / f"{lesson}.ipynb"):
            try:
                status = path.stat()
            except OSError:  # not there (yet), or being replaced
                continue
            stamps[path] = (status.st_mtime_ns, status.st_size)
    return stamps


def _polled(folder, lessons, ready):
    before = _stamps(folder, lessons)
    ready()
    while True:
        time.sleep(POLL_SECONDS)
        now = _stamps(folder, lessons)
        changed = {path for path in before.keys() | now.keys() if before.get(path) != now.get(path)}
        before = now
        if changed:
            yield {path.stem for path in changed}
