"""`hooked grade-class`: grade a whole class in one run (hooked.class_grading), with a progress
bar on a terminal (plain lines when piped), and write the results and the report; or, with
--merge, join the outputs of runs over shares of the class (--shard K/N)."""

import contextlib
import os
import pathlib
import tempfile
import time

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from hooked.class_grading import results_files, submissions
from hooked.class_grading.class_run import grade_class
from hooked.command.arguments import UsageError, course_lessons, find_lesson


def _output_folder(text, submissions_root=None):
    """The --out folder, created if need be and sure to be writable (said now, not after grading)."""
    folder = pathlib.Path(text).resolve()
    if submissions_root is not None and folder.is_relative_to(submissions_root):
        raise UsageError(f"--out {text}: that is inside the submissions, which grading never writes to; "
                         "choose a folder outside them.")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--out {text}: that is a file; give a folder (it is created if need be).")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise UsageError(f"--out {text}: cannot write there ({error.strerror or error}); choose another folder.") \
            from None
    return folder


@contextlib.contextmanager
def _progress(terminal, total):
    """on_graded(learner, results, seconds) for grade_class: a bar on a terminal, a line each when piped."""
    if terminal.out.is_terminal and not terminal.out.is_dumb_terminal:
        columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("learners"),
                   TextColumn("time left"), TimeRemainingColumn())
        with Progress(*columns, console=terminal.out, transient=True) as bar:
            task = bar.add_task("grading", total=total)
            yield lambda learner, results, seconds: bar.advance(task)
        return
    done = [0]

    def line(learner, results, seconds):
        done[0] += 1
        passed = sum(result.status == "passed" for result in results)
        terminal.line(f"{done[0]}/{total} {learner.id}: {passed} of {len(results)} exercises pass ({seconds:.1f} s)")
    yield line


def _grade(arguments, terminal):
    lessons = list(dict.fromkeys(find_lesson(text) for text in arguments.lessons)) or list(course_lessons())
    lessons.sort(key=lambda lesson: lesson.number)
    with tempfile.TemporaryDirectory(prefix="hooked-class-") as scratch:
        try:
            root = submissions.unpacked(arguments.submissions, scratch)
            learners = submissions.learners(root, {lesson.name for lesson in course_lessons()}, arguments.submissions)
            if arguments.shard:
                learners = submissions.shard(learners, arguments.shard)
        except submissions.SubmissionsError as error:
            raise UsageError(str(error)) from None
        out = _output_folder(arguments.out, pathlib.Path(arguments.submissions).resolve())
        # Messages name "alice/01_tensor_hooks.py": relative to the folder of the learners' folders
        os.environ["HOOKED_DISPLAY_ROOT"] = str(learners[0].folder.parent if learners else root)
        started, timings = time.perf_counter(), {}
        with _progress(terminal, len(learners)) as on_graded:
            def graded(learner, results, seconds):
                timings[learner.id] = seconds
                on_graded(learner, results, seconds)
            results = grade_class(learners, lessons, arguments.time_limit, graded)
        data = results_files.class_results(lessons, results)
        if arguments.gradescope:
            for learner, learner_results in results.items():
                results_files.write_gradescope(out, learner, learner_results, timings[learner])
    results_files.write_outputs(out, data)
    exercises = sum(len(lesson.exercise_names()) for lesson in lessons)
    terminal.line(f"graded {len(learners)} learners, {exercises} exercises each, in "
                  f"{time.perf_counter() - started:.1f} s: wrote results.csv, results.json and report.html in {out}")
    return 0


def _merge(arguments, terminal):
    try:
        shards = [results_files.read_results(folder) for folder in arguments.merge]
        data = results_files.merged(shards)
    except results_files.ResultsError as error:
        raise UsageError(str(error)) from None
    out = _output_folder(arguments.out)
    results_files.copy_gradescope(arguments.merge, out)
    results_files.write_outputs(out, data)
    terminal.line(f"joined {len(shards)} shards, {len(data['learners'])} learners: wrote results.csv, "
                  f"results.json and report.html in {out}")
    return 0


def grade_class_command(arguments, terminal):
    if arguments.merge and arguments.submissions:
        raise UsageError("give SUBMISSIONS to grade, or --merge OUT1 OUT2 ... to join shards' outputs, not both.")
    if arguments.merge:
        return _merge(arguments, terminal)
    if not arguments.submissions:
        raise UsageError("give SUBMISSIONS: a folder with one folder per learner (or a .zip of it); "
                         "or --merge OUT1 OUT2 ... to join the outputs of --shard runs.")
    return _grade(arguments, terminal)
