"""What is typed after `hooked`: the argument parser, the option values it checks, and the
lessons and exercises named, looked up in the course manifest (hooked.course). A mistake
is a UsageError, which the command says in one line (exit 2, no traceback).

A lesson can be named in full (01_tensor_hooks), by its number (01 or 1), by the rest
of its name (tensor_hooks), or by its file (lessons/01_tensor_hooks.py)."""

import argparse

from hooked import __version__
from hooked.command import shared_options
from hooked.course import LESSONS_DIR, SOLUTIONS_DIR, lesson_meant_by, lessons
from hooked.lesson_files.display_paths import display_path
from hooked.feedback.hints import HINT_COUNT

LESSON_HELP = "a lesson: 01_tensor_hooks, 01, 1, tensor_hooks or lessons/01_tensor_hooks.py"


class UsageError(Exception):
    """Something typed on the command line is wrong: said in one line, exit 2, no traceback."""


# --- lessons and exercises named ------------------------------------------------------------

def course_lessons():
    """The course's lessons; a clear error when there are none (the package was installed
    without its folder, so solutions/ is not beside it)."""
    course = lessons()
    if not course:
        raise UsageError(f"no lessons in {SOLUTIONS_DIR}: hooked reads the course from the folder it is "
                         "installed from. In the course's folder, run `pip install -e .` (requirements.txt does).")
    return course


def find_lesson(text):
    """The Lesson that `text` names: 01_tensor_hooks, 01, 1, tensor_hooks, lessons/01_tensor_hooks.py."""
    course = course_lessons()
    lesson = lesson_meant_by(text)
    if lesson is None:
        raise UsageError(f"no lesson {text or repr(text)}; lessons are: {', '.join(each.name for each in course)} "
                         "(a number such as 1 or 01, or the name without its number, also works)")
    return lesson


def exercise_in(lesson, text):
    """The Exercise of `lesson` called `text`; otherwise an error that names the exercise
    meant when only its case differs, or the lesson it belongs to."""
    exercise = next((exercise for exercise in lesson.exercises if exercise.name == text), None)
    if exercise is not None:
        return exercise
    meant = next((exercise for other in lessons() for exercise in other.exercises
                  if exercise.name.lower() == text.lower()), None)
    if meant is not None and meant.lesson == lesson.name:
        raise UsageError(f"no exercise {text} in lesson {lesson.name}; did you mean {meant.name}?")
    if meant is not None:
        raise UsageError(f"{meant.name} is an exercise of lesson {meant.lesson}, not of {lesson.name}.")
    raise UsageError(f"no exercise {text} in lesson {lesson.name}; its exercises are: "
                     f"{', '.join(lesson.exercise_names())}")


def lessons_folder(arguments):
    """The folder whose lessons are graded: --lessons-dir, or lessons/ if it exists."""
    folder = arguments.lessons_dir or LESSONS_DIR
    if not folder.is_dir():
        raise UsageError(f"there is no lessons folder {display_path(str(folder))}: `python -m hooked generate` "
                         "writes it from solutions/ (or give --lessons-dir DIR).")
    return folder


# --- option values: argparse says "argument --NAME: <message>" for these --------------------

def _argparse_type(read):
    """`read` (text -> value, ValueError when wrong) as an argparse type, which says the error's
    text after the option's name."""
    def value(text):
        try:
            return read(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return value


def _output_file(text):
    return shared_options.read_report_file(text, "--out")


def _level(text):
    try:
        level = int(text)
    except ValueError:
        level = None
    if level is None or not 1 <= level <= HINT_COUNT:
        raise argparse.ArgumentTypeError(f"{text}: give 1 (the idea), 2 (the API) or 3 (almost there).")
    return level


# --- the parser ------------------------------------------------------------------------------

def _add(parser, option, default):
    parser.add_argument(option.name, metavar=option.metavar, type=_argparse_type(option.read), default=default,
                        help=option.help)


def _add_grade_class(grade_class):
    grade_class.add_argument("submissions", nargs="?", metavar="SUBMISSIONS",
                             help="a folder holding one folder per learner (named by the learner's id) with "
                                  "their lesson files as in lessons/, or a .zip of it")
    grade_class.add_argument("--out", metavar="DIR", required=True, help="where the results and the report go")
    _add(grade_class, shared_options.TIME_LIMIT, default=shared_options.DEFAULT_TIME_LIMIT)
    grade_class.add_argument("--lessons", nargs="+", metavar="LESSON", default=[],
                             help="only these lessons (default: all)")
    grade_class.add_argument("--shard", metavar="K/N", default=None,
                             help="grade only the K-th of N equal shares of the learners (join them with --merge)")
    grade_class.add_argument("--gradescope", action="store_true",
                             help="also write each learner's Gradescope results.json in DIR/gradescope/LEARNER/")
    grade_class.add_argument("--merge", nargs="+", metavar="OUT", default=None,
                             help="join the --out folders of --shard runs into DIR instead of grading")


def build_parser():
    """The parser of every command; `arguments.command` names the one given."""
    parser = argparse.ArgumentParser(
        prog="hooked", description="Hooked, a hands-on course on PyTorch hooks. Without a command: status.",
        epilog=f"Lessons can be named {LESSON_HELP.removeprefix('a lesson: ')}.")
    parser.add_argument("--version", action="version", version=f"hooked {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    lessons_dir = argparse.ArgumentParser(add_help=False)
    _add(lessons_dir, shared_options.LESSONS_DIR, default=None)
    grading = argparse.ArgumentParser(add_help=False, parents=[lessons_dir])
    _add(grading, shared_options.TIME_LIMIT, default=shared_options.DEFAULT_TIME_LIMIT)

    def command(name, help, parents=()):
        return commands.add_parser(name, help=help, description=help, parents=list(parents))

    status = command("status", "every exercise: passed, failed or not attempted; what to do next", [grading])
    status.add_argument("lesson", nargs="?", metavar="LESSON", help=f"only this lesson ({LESSON_HELP})")
    check = command("check", "grade, with the same messages as pytest (exit 1 if something fails)", [grading])
    check.add_argument("lesson", nargs="?", metavar="LESSON", help=f"only this lesson ({LESSON_HELP})")
    watch = command("watch", "grade again whenever a lesson's .py or .ipynb is saved (Ctrl-C stops)", [grading])
    watch.add_argument("lesson", nargs="?", metavar="LESSON", help=f"only this lesson ({LESSON_HELP})")
    watch.add_argument("--poll", action="store_true",
                       help="look at the files every half second instead of waiting for change events "
                            "(for file systems that send none, such as some network drives)")
    hint = command("hint", "the hints of an exercise, one level at a time")
    hint.add_argument("lesson", metavar="LESSON", help=LESSON_HELP)
    hint.add_argument("exercise", metavar="EXERCISE", help="an exercise of that lesson, e.g. double_grad")
    hint.add_argument("--level", type=_level, metavar="N", default=None,
                      help="show hints 1 to N (1: the idea, 2: the API, 3: almost there); default 1")
    solution = command("solution", "the reference solution of an exercise, once yours passes", [grading])
    solution.add_argument("lesson", metavar="LESSON", help=LESSON_HELP)
    solution.add_argument("exercise", metavar="EXERCISE", help="an exercise of that lesson, e.g. double_grad")
    solution.add_argument("--force", action="store_true", help="show it even though yours does not pass yet")
    reset = command("reset", "start a lesson over from a fresh copy; your file and notebook are "
                             "saved in .hooked-backups/ first", [lessons_dir])
    reset.add_argument("lesson", metavar="LESSON", help=LESSON_HELP)
    export = command("export", "grading results as JSON, for instructors and grading systems", [grading])
    export.add_argument("lessons", nargs="*", metavar="LESSON", help="only these lessons (default: all)")
    export.add_argument("--format", choices=("gradescope", "json"), default="json",
                        help="gradescope: Gradescope's autograder results.json; json: the grader's own "
                             "report, as `pytest --report` writes it (default)")
    export.add_argument("--out", metavar="FILE", type=_argparse_type(_output_file), default=None,
                        help="write to FILE instead of printing")
    mistakes = command("mistakes", "every mistake the checks recognize by name: its id (as reports and "
                                   "Gradescope's tags give it), its exercise, and what it is")
    mistakes.add_argument("lessons", nargs="*", metavar="LESSON", help="only these lessons (default: all)")
    mistakes.add_argument("--format", choices=("text", "json"), default="text",
                          help="text: one line per mistake (default); json: a list of "
                               "{id, lesson, exercise, what}")
    _add_grade_class(command("grade-class", "grade a whole class in one run: results.csv, results.json and "
                                            "report.html, which shows what the class got wrong (for instructors)"))
    generate = command("generate", "make lessons/, the grading files in tests/ and the README's lesson table "
                                   "from solutions/ (for course authors)")
    generate.add_argument("lessons", nargs="*", metavar="LESSON", help="only these lessons (default: all)")
    generate.add_argument("--check", action="store_true",
                          help="change nothing; exit 1 if any of them differs from what solutions/ generates")
    return parser


def parse(argv):
    """The arguments of `argv`; `hooked` alone, or with options only, is `hooked status`."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["status", *argv]  # `hooked` and `hooked --lessons-dir DIR` show the status
    return build_parser().parse_args(argv)
