"""The `hooked` command (also `python -m hooked`): follow your progress, grade on every
save, get hints, see the reference solution once yours passes, start a lesson over,
export results for a grading system; and, for course authors, generate lessons/.

A lesson can be named in full (01_tensor_hooks), by its number (01 or 1), by the rest
of its name (tensor_hooks), or by its file (lessons/01_tensor_hooks.py).

This process never imports torch: learner code runs in the grading worker that
hooked.grader starts, exactly as under pytest."""

import argparse
import contextlib
import functools
import json
import os
import pathlib
import re
import signal
import sys
import textwrap
import time

from hooked import __version__, progress
from hooked.display_paths import display_path
from hooked.backups import BACKUP_DIR, back_up
from hooked.course import LESSONS_DIR, ROOT, SOLUTIONS_DIR, lesson_names
from hooked.generate import fresh_lesson_text, stale_lessons, write_lessons
from hooked.solution_markers import MarkerError, is_solution_marker
from hooked.gradescope import results_json
from hooked.grader import DEFAULT_TIME_LIMIT, Grader, parse_time_limit
from hooked.hints import LEVELS, lesson_hints
from hooked.lesson_file import load_lesson_source, top_level_names
from hooked.terminal import Terminal
from hooked.watching import saved_lessons

_STATUS_WIDTH = len("not attempted")
_EXERCISE_CELL = re.compile(r'^# %% tags=\["exercise"\]\n(.*?)(?=^# %%|\Z)', re.MULTILINE | re.DOTALL)


class UsageError(Exception):
    """Something typed on the command line is wrong: said in one line, exit 2, no traceback."""


# --- names on the command line -------------------------------------------------------------

def course_lessons():
    """The course's lessons; a clear error when there are none (the package was installed
    without its folder, so solutions/ is not beside it)."""
    lessons = lesson_names()
    if not lessons:
        raise UsageError(f"no lessons in {SOLUTIONS_DIR}: hooked reads the course from the folder it is "
                         "installed from. In the course's folder, run `pip install -e .` (requirements.txt does).")
    return lessons


def find_lesson(text):
    """The lesson that `text` names: 01_tensor_hooks, 01, 1, tensor_hooks, lessons/01_tensor_hooks.py."""
    lessons = course_lessons()
    name = pathlib.PurePath(text).name.removesuffix(".py").removesuffix(".ipynb")
    for lesson in lessons:
        number, slug = lesson.split("_", 1)
        if name in (lesson, slug) or (name.isdigit() and int(name) == int(number)):
            return lesson
    raise UsageError(f"no lesson {text or repr(text)}; lessons are: {', '.join(lessons)} "
                     "(a number such as 1 or 01, or the name without its number, also works)")


@functools.lru_cache(maxsize=None)
def exercises_of(lesson):
    """The exercises of `lesson`, in order, as its solution defines them. Read with a pattern
    rather than jupytext, which takes longer than the rest of `hooked status` put together."""
    text = (SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8")
    return [name for cell in _EXERCISE_CELL.findall(text) for name in top_level_names(cell)]


def find_exercise(lesson, text):
    names = exercises_of(lesson)
    if text in names:
        return text
    lesson_of = {name: other for other in lesson_names() for name in exercises_of(other)}
    meant = next((name for name in lesson_of if name.lower() == text.lower()), None)
    if meant is not None and lesson_of[meant] == lesson:
        raise UsageError(f"no exercise {text} in lesson {lesson}; did you mean {meant}?")
    if meant is not None:
        raise UsageError(f"{meant} is an exercise of lesson {lesson_of[meant]}, not of {lesson}.")
    raise UsageError(f"no exercise {text} in lesson {lesson}; its exercises are: {', '.join(names)}")


def _short(lesson):
    return lesson.split("_", 1)[0]


# --- option values -------------------------------------------------------------------------

def _folder(text):
    if not pathlib.Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder. Give a folder laid out like lessons/ "
                                         "(with files such as 01_tensor_hooks.py).")
    return pathlib.Path(text).resolve()


def _seconds(text):
    try:
        return parse_time_limit(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _output_file(text):
    path = pathlib.Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: that is a folder; give a file name, e.g. --out results.json.")
    if not path.resolve().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: the folder {path.parent} does not exist; create it first.")
    if not os.access(path.resolve().parent, os.W_OK):  # said now, not after grading the whole course
        raise argparse.ArgumentTypeError(f"{text}: the folder {path.parent} is not writable; choose another place.")
    return path


def _level(text):
    try:
        level = int(text)
    except ValueError:
        level = None
    if level is None or not 1 <= level <= LEVELS:
        raise argparse.ArgumentTypeError(f"{text}: give 1 (the idea), 2 (the API) or 3 (almost there).")
    return level


def _lessons_folder(arguments):
    folder = arguments.lessons_dir or LESSONS_DIR
    if not folder.is_dir():
        raise UsageError(f"there is no lessons folder {display_path(str(folder))}: `python -m hooked generate` "
                         "writes it from solutions/ (or give --lessons-dir DIR).")
    return folder


# --- grading -------------------------------------------------------------------------------

@contextlib.contextmanager
def _grader(arguments):
    grader = Grader(_lessons_folder(arguments), arguments.time_limit)
    grader.start()  # torch imports in the worker while this process reads the lessons
    try:
        yield grader
    finally:
        grader.close()


def _grade(grader, lessons):
    return [grader.grade(lesson, exercise) for lesson in lessons for exercise in exercises_of(lesson)]


def _chosen_lessons(arguments):
    return [find_lesson(arguments.lesson)] if arguments.lesson is not None else course_lessons()


def _feedback(terminal, result):
    """The status and the message a learner needs, as pytest reports it."""
    text = f"{result.exercise}: {result.message}" if result.status == "not_attempted" else progress.feedback(result)
    return [terminal.status(result.status, _STATUS_WIDTH), "  ", text]


# --- commands ------------------------------------------------------------------------------

def _status(arguments, terminal):
    lessons = _chosen_lessons(arguments)
    with _grader(arguments) as grader:
        results = _grade(grader, lessons)
    lesson_width = max(len("lesson"), *(len(result.lesson) for result in results))
    exercise_width = max(len("exercise"), *(len(result.exercise) for result in results))
    terminal.line(terminal.dim(f"{'lesson'.ljust(lesson_width)}  {'exercise'.ljust(exercise_width)}  status"))
    shown = None
    for result in results:
        lesson = result.lesson if result.lesson != shown else ""
        shown = result.lesson
        terminal.line(f"{lesson.ljust(lesson_width)}  {result.exercise.ljust(exercise_width)}  ",
                      terminal.status(result.status))
    terminal.line("")
    for line in progress.table_lines(results):
        terminal.line(line)
    todo = progress.next_to_do(results)
    if todo is None:
        terminal.line(("every exercise passes. Well done!", "green"))
    else:
        short = _short(todo.lesson)
        terminal.line(terminal.dim(f"`hooked check {short}` shows the feedback; "
                                   f"`hooked hint {short} {todo.exercise}` gives a hint."))
    return 0


def _check(arguments, terminal):
    lessons = _chosen_lessons(arguments)
    with _grader(arguments) as grader:
        results = _grade(grader, lessons)
    for result in results:
        if result.status == "passed":
            terminal.line(terminal.status("passed", _STATUS_WIDTH), "  ", result.exercise)
            continue
        terminal.line(*_feedback(terminal, result))
        if result.output and result.status in ("failed", "error"):
            terminal.line(terminal.dim("    your code printed:"))
            terminal.line(terminal.dim(textwrap.indent(result.output.rstrip(), "    ")))
    terminal.line("")
    for line in progress.table_lines(results):
        terminal.line(line)
    return 1 if any(result.status in ("failed", "error") for result in results) else 0


def _watch(arguments, terminal):
    lessons = _chosen_lessons(arguments)
    folder = _lessons_folder(arguments)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with Ctrl-C ignored

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    statuses = {}
    try:
        with _grader(arguments) as grader:
            for lesson in lessons:
                _show_watched(terminal, _grade(grader, [lesson]), statuses)
            if arguments.lesson:
                what = f"{display_path(str(folder / lessons[0]))}.py (or .ipynb)"
            else:
                what = f"the lessons in {display_path(str(folder))}"
            saves = saved_lessons(
                folder, lessons, poll=arguments.poll, note=lambda text: terminal.line(terminal.dim(text)),
                ready=lambda: terminal.line(terminal.dim(f"watching {what}: save to grade again; Ctrl-C stops.")))
            for changed in saves:
                for lesson in sorted(changed):
                    grader.forget(lesson)
                    terminal.line("")
                    terminal.line(terminal.dim(f"{time.strftime('%H:%M:%S')} {lesson} saved"))
                    _show_watched(terminal, _grade(grader, [lesson]), statuses)
    except KeyboardInterrupt:
        terminal.line("stopped watching.")
    return 0


def _show_watched(terminal, results, statuses):
    """One lesson's state: what changed since the last grade, the count, and the exercise
    being worked on (the first that does not pass) with its feedback."""
    for result in results:
        before = statuses.get((result.lesson, result.exercise))
        statuses[(result.lesson, result.exercise)] = result.status
        if before is not None and before != result.status:
            terminal.line(f"{result.exercise}: ", terminal.status(result.status),
                          f" (was {progress.status_words(before)})")
    passed = sum(result.status == "passed" for result in results)
    terminal.line((results[0].lesson, "bold"), f"  {passed} / {len(results)} pass",
                  terminal.dim(f"  ({display_path(results[0].graded_file)})"))
    todo = progress.next_to_do(results)
    if todo is None:
        terminal.line(("every exercise of this lesson passes.", "green"))
    else:
        terminal.line(f"working on {todo.exercise} ({progress.where(todo)}): ", terminal.status(todo.status))
        terminal.line(textwrap.indent(todo.message, "  "))


def _hint(arguments, terminal):
    lesson = find_lesson(arguments.lesson)
    exercise = find_exercise(lesson, arguments.exercise)
    hints = lesson_hints(lesson)[exercise]
    if not hints:
        raise UsageError(f"{exercise} has no hints yet.")
    level = 1 if arguments.level is None else arguments.level
    if not 1 <= level <= len(hints):
        raise UsageError(f"--level {level}: {exercise} has hints 1 to {len(hints)}.")
    for hint in hints[:level]:
        terminal.markdown(hint.markdown(LEVELS))
        terminal.line("")
    if level < len(hints):
        terminal.line(terminal.dim(f"For hint {level + 1}: hooked hint {_short(lesson)} {exercise} "
                                   f"--level {level + 1}"))
    else:
        terminal.line(terminal.dim(f"That was the last hint. Once {exercise} passes, "
                                   f"`hooked solution {_short(lesson)} {exercise}` shows the reference solution."))
    return 0


def _solution(arguments, terminal):
    lesson = find_lesson(arguments.lesson)
    exercise = find_exercise(lesson, arguments.exercise)
    if not arguments.force:
        with _grader(arguments) as grader:
            result = grader.grade(lesson, exercise)
        if result.status != "passed":
            short = _short(lesson)
            terminal.line(*_feedback(terminal, result))
            terminal.line(f"The reference solution is shown once your {exercise} passes. "
                          f"`hooked hint {short} {exercise}` gives a hint; "
                          f"`hooked solution {short} {exercise} --force` shows the solution anyway.")
            return 1
    cell = load_lesson_source(SOLUTIONS_DIR, lesson).cell_defining(exercise)
    source = "\n".join(line for line in cell.source.splitlines() if not is_solution_marker(line))
    terminal.line(terminal.dim(f"The reference solution of {exercise}, from "
                               f"{display_path(cell.filename)} line {cell.first_line}:"))
    terminal.code(source)
    return 0


def _reset(arguments, terminal):
    lesson = find_lesson(arguments.lesson)
    folder = _lessons_folder(arguments)
    script, notebook = folder / f"{lesson}.py", folder / f"{lesson}.ipynb"
    fresh = fresh_lesson_text(lesson)
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
    lessons = list(dict.fromkeys(find_lesson(text) for text in arguments.lessons)) or course_lessons()
    started = time.perf_counter()
    with _grader(arguments) as grader:
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
    names = sorted({find_lesson(text) for text in arguments.lessons}) or None
    try:
        if arguments.check:
            stale = [path for path in stale_lessons() if names is None or path.stem in names]
            for path in stale:
                print(f"{path.relative_to(ROOT)} differs from what solutions/ generates")
            if stale:
                print("run `python -m hooked generate` to regenerate lessons/")
                return 1
            print("lessons/ matches solutions/")
            return 0
        written = write_lessons(names)
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path, backup in written:
        saved = f" (the previous version is saved in {backup.relative_to(ROOT)})" if backup else ""
        print(f"wrote {path.relative_to(ROOT)}{saved}")
    if not written:
        print("lessons/ already matches solutions/")
    return 0


# --- the command line ----------------------------------------------------------------------

_LESSON_HELP = "a lesson: 01_tensor_hooks, 01, 1, tensor_hooks or lessons/01_tensor_hooks.py"


def build_parser():
    parser = argparse.ArgumentParser(
        prog="hooked", description="Hooked, a hands-on course on PyTorch hooks. Without a command: status.",
        epilog=f"Lessons can be named {_LESSON_HELP.removeprefix('a lesson: ')}.")
    parser.add_argument("--version", action="version", version=f"hooked {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    lessons_dir = argparse.ArgumentParser(add_help=False)
    lessons_dir.add_argument("--lessons-dir", metavar="DIR", type=_folder, default=None,
                             help="the lessons in DIR (laid out like lessons/) instead of lessons/")
    grading = argparse.ArgumentParser(add_help=False, parents=[lessons_dir])
    grading.add_argument("--time-limit", metavar="SECONDS", type=_seconds, default=DEFAULT_TIME_LIMIT,
                         help=f"stop an exercise whose code runs longer than this (default {DEFAULT_TIME_LIMIT:g})")

    def command(name, run, help, parents=()):
        sub = commands.add_parser(name, help=help, description=help, parents=list(parents))
        sub.set_defaults(run=run)
        return sub

    status = command("status", _status, "every exercise: passed, failed or not attempted; what to do next",
                     [grading])
    status.add_argument("lesson", nargs="?", metavar="LESSON", help=f"only this lesson ({_LESSON_HELP})")
    check = command("check", _check, "grade, with the same messages as pytest (exit 1 if something fails)",
                    [grading])
    check.add_argument("lesson", nargs="?", metavar="LESSON", help=f"only this lesson ({_LESSON_HELP})")
    watch = command("watch", _watch, "grade again whenever a lesson's .py or .ipynb is saved (Ctrl-C stops)",
                    [grading])
    watch.add_argument("lesson", nargs="?", metavar="LESSON", help=f"only this lesson ({_LESSON_HELP})")
    watch.add_argument("--poll", action="store_true",
                       help="look at the files every half second instead of waiting for change events "
                            "(for file systems that send none, such as some network drives)")
    hint = command("hint", _hint, "the hints of an exercise, one level at a time")
    hint.add_argument("lesson", metavar="LESSON", help=_LESSON_HELP)
    hint.add_argument("exercise", metavar="EXERCISE", help="an exercise of that lesson, e.g. double_grad")
    hint.add_argument("--level", type=_level, metavar="N", default=None,
                      help="show hints 1 to N (1: the idea, 2: the API, 3: almost there); default 1")
    solution = command("solution", _solution, "the reference solution of an exercise, once yours passes",
                       [grading])
    solution.add_argument("lesson", metavar="LESSON", help=_LESSON_HELP)
    solution.add_argument("exercise", metavar="EXERCISE", help="an exercise of that lesson, e.g. double_grad")
    solution.add_argument("--force", action="store_true", help="show it even though yours does not pass yet")
    reset = command("reset", _reset, "start a lesson over from a fresh copy; your file and notebook are "
                                     "saved in .hooked-backups/ first", [lessons_dir])
    reset.add_argument("lesson", metavar="LESSON", help=_LESSON_HELP)
    export = command("export", _export, "grading results as JSON, for instructors and grading systems", [grading])
    export.add_argument("lessons", nargs="*", metavar="LESSON", help="only these lessons (default: all)")
    export.add_argument("--format", choices=("gradescope", "json"), default="json",
                        help="gradescope: Gradescope's autograder results.json; json: the grader's own "
                             "report, as `pytest --report` writes it (default)")
    export.add_argument("--out", metavar="FILE", type=_output_file, default=None,
                        help="write to FILE instead of printing")
    generate = command("generate", _generate, "make lessons/ from solutions/ (for course authors)")
    generate.add_argument("lessons", nargs="*", metavar="LESSON", help="only these lessons (default: all)")
    generate.add_argument("--check", action="store_true",
                          help="change nothing; exit 1 if lessons/ differs from what solutions/ generates")
    return parser


def main(argv=None):
    # jupytext imports Jupyter's server for its contents manager, which this command never
    # uses; hiding it saves a large part of `hooked status`.
    sys.modules.setdefault("jupyter_server", None)
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["status", *argv]  # `hooked` and `hooked --lessons-dir DIR` show the status
    arguments = build_parser().parse_args(argv)
    terminal = Terminal()
    try:
        return arguments.run(arguments, terminal)
    except UsageError as error:
        terminal.error(str(error))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hooked status | head -3`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
