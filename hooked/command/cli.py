"""The `hooked` command (also `python -m hooked`): follow your progress, grade on every
save, get hints, see the reference solution once yours passes, start a lesson over,
export results for a grading system; and, for course authors, generate lessons/, the grading
files and the README's lesson table.

Here are the commands; hooked.command.arguments reads the command line, hooked.command.result_views
prints what grading found, hooked.command.backups keeps what `reset` replaces.

This process never imports torch: learner code runs in the grading worker that
hooked.grader.engine starts, exactly as under pytest. Only `hooked mistakes` imports the checks
(and with them torch), to list what they recognize; it runs no learner code."""

import contextlib
import json
import os
import pathlib
import signal
import sys
import time

from hooked.feedback import progress
from hooked.command.arguments import UsageError, course_lessons, exercise_in, find_lesson, lessons_folder, parse
from hooked.command.backups import BACKUP_DIR, back_up
from hooked.course import ROOT, HeadingError, fresh_lesson_text
from hooked.lesson_files.display_paths import display_path
from hooked.command.generate import stale_files, write_files
from hooked.feedback.gradescope import results_json
from hooked.grader.engine import Grader
from hooked.feedback.hints import HINT_COUNT, lesson_hints
from hooked.command.result_views import feedback_line, show_check, show_status, show_watched
from hooked.lesson_files.solution_markers import MarkerError
from hooked.command.terminal import Terminal
from hooked.command.watching import saved_lessons


# --- grading -------------------------------------------------------------------------------

@contextlib.contextmanager
def _grader(arguments, plan):
    """A Grader that grades `plan` ((lesson, exercise) pairs, in the order they are asked for)
    ahead, in as many workers as there are cores; torch imports in them meanwhile."""
    grader = Grader(lessons_folder(arguments), arguments.time_limit)
    grader.start(plan)
    try:
        yield grader
    finally:
        grader.close()


def _plan(lessons):
    return [(lesson.name, exercise) for lesson in lessons for exercise in lesson.exercise_names()]


def _grade(grader, lessons):
    return [grader.grade(lesson, exercise) for lesson, exercise in _plan(lessons)]


def _chosen_lessons(arguments):
    return [find_lesson(arguments.lesson)] if arguments.lesson is not None else list(course_lessons())


# --- commands ------------------------------------------------------------------------------

def _status(arguments, terminal):
    lessons = _chosen_lessons(arguments)
    with _grader(arguments, _plan(lessons)) as grader:
        results = _grade(grader, lessons)
    show_status(terminal, results)
    return 0


def _check(arguments, terminal):
    lessons = _chosen_lessons(arguments)
    with _grader(arguments, _plan(lessons)) as grader:
        results = _grade(grader, lessons)
    show_check(terminal, results)
    return 1 if any(result.status in ("failed", "error") for result in results) else 0


def _watch(arguments, terminal):
    lessons = _chosen_lessons(arguments)
    folder = lessons_folder(arguments)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with Ctrl-C ignored

    def sigterm_as_ctrl_c(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, sigterm_as_ctrl_c)
    by_name = {lesson.name: lesson for lesson in lessons}
    statuses = {}
    try:
        with _grader(arguments, _plan(lessons)) as grader:
            for lesson in lessons:
                show_watched(terminal, _grade(grader, [lesson]), statuses)
            if arguments.lesson:
                what = f"{display_path(str(folder / lessons[0].name))}.py (or .ipynb)"
            else:
                what = f"the lessons in {display_path(str(folder))}"
            saves = saved_lessons(
                folder, list(by_name), poll=arguments.poll, note=lambda text: terminal.line(terminal.dim(text)),
                ready=lambda: terminal.line(terminal.dim(f"watching {what}: save to grade again; Ctrl-C stops.")))
            for changed in saves:
                for name in sorted(changed):
                    grader.forget(name)
                    terminal.line("")
                    terminal.line(terminal.dim(f"{time.strftime('%H:%M:%S')} {name} saved"))
                    show_watched(terminal, _grade(grader, [by_name[name]]), statuses)
    except KeyboardInterrupt:
        terminal.line("stopped watching.")
    return 0


def _hint(arguments, terminal):
    lesson = find_lesson(arguments.lesson)
    exercise = exercise_in(lesson, arguments.exercise).name
    hints = lesson_hints(lesson.name)[exercise]
    if not hints:
        raise UsageError(f"{exercise} has no hints yet.")
    level = 1 if arguments.level is None else arguments.level
    if not 1 <= level <= len(hints):
        raise UsageError(f"--level {level}: {exercise} has hints 1 to {len(hints)}.")
    for hint in hints[:level]:
        terminal.show_markdown(hint.markdown(HINT_COUNT))
        terminal.line("")
    if level < len(hints):
        terminal.line(terminal.dim(f"For hint {level + 1}: hooked hint {lesson.short} {exercise} "
                                   f"--level {level + 1}"))
    else:
        terminal.line(terminal.dim(f"That was the last hint. Once {exercise} passes, "
                                   f"`hooked solution {lesson.short} {exercise}` shows the reference solution."))
    return 0


def _solution(arguments, terminal):
    lesson = find_lesson(arguments.lesson)
    exercise = exercise_in(lesson, arguments.exercise)
    if not arguments.force:
        with _grader(arguments, [(lesson.name, exercise.name)]) as grader:
            result = grader.grade(lesson.name, exercise.name)
        if result.status != "passed":
            terminal.line(*feedback_line(terminal, result))
            terminal.line(f"The reference solution is shown once your {exercise.name} passes. "
                          f"`hooked hint {lesson.short} {exercise.name}` gives a hint; "
                          f"`hooked solution {lesson.short} {exercise.name} --force` shows the solution anyway.")
            return 1
    solution = lesson.solution_path.read_text(encoding="utf-8")
    first_line = solution.count("\n", 0, solution.index(exercise.solution_cell)) + 1
    terminal.line(terminal.dim(f"The reference solution of {exercise.name}, from "
                               f"{display_path(str(lesson.solution_path))} line {first_line}:"))
    terminal.code(exercise.reference.rstrip("\n"))
    return 0


def _reset(arguments, terminal):
    lesson = find_lesson(arguments.lesson)
    folder = lessons_folder(arguments)
    script, notebook = folder / f"{lesson.name}.py", folder / f"{lesson.name}.ipynb"
    fresh = fresh_lesson_text(lesson.name)
    # errors="replace": a file saved in another encoding is not the fresh lesson, and is backed up
    if script.exists() and script.read_text(encoding="utf-8", errors="replace") == fresh and not notebook.exists():
        terminal.line(f"{display_path(str(script))} is already the fresh lesson; nothing to reset.")
        return 0
    try:
        backup = back_up([script, notebook], BACKUP_DIR)
    except OSError as error:
        raise UsageError(f"could not save a backup of your lesson, so nothing was changed: {error}") from None
    saved = [display_path(str(path)) for path in (script, notebook) if path.exists()]
    if backup is not None:
        terminal.line(f"saved {' and '.join(saved)} in {display_path(str(backup))}")
    try:
        script.write_text(fresh, encoding="utf-8")
        if notebook.exists():
            notebook.unlink()  # it holds the old code; Jupyter pairs a new one from the fresh .py
    except OSError as error:
        raise UsageError(f"could not write the fresh lesson: {error}") from None
    terminal.line(f"{display_path(str(script))} is the fresh lesson again.")
    if notebook.name in {pathlib.Path(path).name for path in saved}:
        terminal.line(terminal.dim("Its notebook was removed (the backup has it). If the lesson is open in "
                                   "Jupyter, reload it from disk before you save."))
    return 0


def _export(arguments, terminal):
    # a lesson named twice (01 1) is graded, and counted, once
    lessons = list(dict.fromkeys(find_lesson(text) for text in arguments.lessons)) or list(course_lessons())
    started = time.perf_counter()
    with _grader(arguments, _plan(lessons)) as grader:
        results = _grade(grader, lessons)
    if arguments.format == "gradescope":
        data = results_json(results, time.perf_counter() - started)
    else:
        data = progress.report(results)
    if arguments.out is None:
        print(json.dumps(data, indent=2))
        return 0
    try:
        progress.write_json(arguments.out, data)
    except OSError as error:
        raise UsageError(f"could not write {arguments.out}: {error.strerror or error}") from None
    passed = sum(result.status == "passed" for result in results)
    terminal.line(f"wrote {arguments.out}: {passed} of {len(results)} exercises pass.")
    return 0


def _generate(arguments, terminal):
    # Only the lessons named, so that regenerating one lesson leaves others' drafts alone.
    names = sorted({find_lesson(text).name for text in arguments.lessons}) or None
    try:
        if arguments.check:
            stale = stale_files(names)
            for path in stale:
                print(f"{path.relative_to(ROOT)} differs from what solutions/ generates")
            if stale:
                print("run `python -m hooked generate` to regenerate them")
                return 1
            print(f"{_GENERATED} match solutions/")
            return 0
        written = write_files(names)
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path, backup in written:
        saved = f" (the previous version is saved in {backup.relative_to(ROOT)})" if backup else ""
        print(f"wrote {path.relative_to(ROOT)}{saved}")
    if not written:
        print(f"{_GENERATED} already match solutions/")
    return 0


def _mistakes(arguments, terminal):
    from hooked.grader.named_mistakes import named_mistakes  # imports torch, which only this command needs
    lessons = list(dict.fromkeys(find_lesson(text) for text in arguments.lessons)) or None
    found = named_mistakes(lessons)
    if arguments.format == "json":
        print(json.dumps([mistake.as_json() for mistake in found], indent=2))
        return 0
    width = max(len(mistake.id) for mistake in found)
    for mistake in found:
        print(f"{mistake.id.ljust(width)}  {mistake.what}")
    print(f"{len(found)} named mistakes; `pytest --report` and `hooked export` give the id of the one "
          "a failed check recognized.")
    return 0


def _grade_class(arguments, terminal):
    from hooked.command.class_command import grade_class_command  # only this command needs it
    return grade_class_command(arguments, terminal)


_GENERATED = "lessons/, the grading files tests/test_NN_slug.py and the README's lesson table"


COMMANDS = {"status": _status, "check": _check, "watch": _watch, "hint": _hint, "solution": _solution,
            "reset": _reset, "export": _export, "mistakes": _mistakes, "generate": _generate,
            "grade-class": _grade_class}


def main(argv=None):
    # jupytext imports Jupyter's server for its contents manager, which this command never
    # uses; hiding it saves a large part of `hooked status`.
    sys.modules.setdefault("jupyter_server", None)
    arguments = parse(sys.argv[1:] if argv is None else list(argv))
    terminal = Terminal()
    try:
        return COMMANDS[arguments.command](arguments, terminal)
    except (UsageError, HeadingError) as error:  # HeadingError: an author's exercise heading, named in it
        terminal.error(str(error))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hooked status | head -3`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
