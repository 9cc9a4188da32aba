"""`hooked watch [LESSON]`: grades again when a lesson's .py or .ipynb is saved, shows the
exercise being worked on, and stops cleanly on Ctrl-C (or SIGTERM)."""

import os
import pathlib
import queue
import signal
import subprocess
import threading
import time

from hooked.command.watching import saved_lessons
from hooked_cli import environment, make_course, start_hooked, write_lesson


class Watch:
    """`hooked watch ...` running in `course`, its output read line by line as it comes."""

    def __init__(self, course, *arguments, env=None):
        self.process = start_hooked(course, "watch", *arguments, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        self.lines, self.seen = queue.Queue(), []
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in self.process.stdout],
                                       daemon=True)
        self.reader.start()

    def wait_for(self, text, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} within {timeout} s; output so far:\n{''.join(self.seen)}")

    def stop(self, how):
        self.process.send_signal(how)
        code = self.process.wait(timeout=30)
        self.reader.join(timeout=10)
        while not self.lines.empty():  # what is left
            self.seen.append(self.lines.get())
        return code, "".join(self.seen), self.process.stderr.read()


def _processes_working_in(folder):
    """Processes (such as a grading worker) whose current folder is `folder` (Linux only)."""
    found = []
    for entry in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(entry / "cwd") == str(folder):
                found.append(entry.name)
        except OSError:
            pass
    return found


def test_a_save_is_graded_again_and_ctrl_c_stops_watching_cleanly(tmp_path):
    course = make_course(tmp_path)
    watch = Watch(course, "01")
    try:
        assert "not attempted" in watch.wait_for("working on double_grad")
        watch.wait_for("watching lessons/01_tensor_hooks.py (or .ipynb): save to grade again; Ctrl-C stops.")
        write_lesson(course, "01_tensor_hooks", solved={"double_grad"})
        watch.wait_for("double_grad: passed (was not attempted)")
        watch.wait_for("01_tensor_hooks  1 / 4 pass  (lessons/01_tensor_hooks.py)")
        watch.wait_for("working on make_scale_hook (lessons/01_tensor_hooks.py line ")
    finally:
        code, output, errors = watch.stop(signal.SIGINT)
    assert code == 0 and output.endswith("stopped watching.\n"), output + errors
    assert "Traceback" not in errors
    assert _processes_working_in(course / "lessons") == []  # the grading worker was stopped too


def test_without_watchfiles_it_polls_and_grades_a_saved_notebook(tmp_path):
    course = make_course(tmp_path / "course")
    hidden = tmp_path / "hidden" / "watchfiles"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("hidden by the test")\n', encoding="utf-8")
    watch = Watch(course, env=environment(PYTHONPATH=str(hidden.parent)))
    try:
        watch.wait_for("watchfiles is not installed; looking for changes every 0.5 s instead.")
        watch.wait_for("watching the lessons in lessons: save to grade again; Ctrl-C stops.")
        write_lesson(course, "02_removing_hooks", solved={"grad_with_temporary_hook", "HookGroup"}, suffix=".ipynb")
        watch.wait_for("HookGroup: passed (was not attempted)")
        watch.wait_for("02_removing_hooks  2 / 3 pass  (lessons/02_removing_hooks.ipynb)")
    finally:
        code, output, errors = watch.stop(signal.SIGTERM)
    assert code == 0 and output.endswith("stopped watching.\n"), output + errors
    assert "01_tensor_hooks saved" not in output  # only the lesson that was saved is graded again


def test_polling_notices_a_saved_lesson_and_nothing_else(tmp_path):
    (tmp_path / "01_tensor_hooks.py").write_text("before\n", encoding="utf-8")
    started = threading.Event()
    saves = saved_lessons(tmp_path, {"01_tensor_hooks"}, poll=True, ready=started.set)

    def save():
        started.wait(10)
        (tmp_path / "notes.py").write_text("not a lesson\n", encoding="utf-8")
        (tmp_path / "01_tensor_hooks.py").write_text("after, and longer\n", encoding="utf-8")

    threading.Thread(target=save).start()
    assert next(saves) == {"01_tensor_hooks"}
