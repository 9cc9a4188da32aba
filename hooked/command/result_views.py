"""What the grading commands print about their results: the status table of `hooked
status`, the feedback of `hooked check` and `hooked solution`, and the summary `hooked
watch` gives after each save. The words come from hooked.feedback.progress (shared with pytest),
the colours from hooked.command.terminal."""

import textwrap

from hooked.feedback import progress
from hooked.course import lesson_named
from hooked.lesson_files.display_paths import display_path

STATUS_WIDTH = len("not attempted")


def feedback_line(terminal, result):
    """The parts of the line that gives the status and the message a learner needs, as
    pytest reports it."""
    text = f"{result.exercise}: {result.message}" if result.status == "not_attempted" else progress.feedback(result)
    return [terminal.status(result.status, STATUS_WIDTH), "  ", text]


def show_status(terminal, results):
    """Every exercise's status with its level and usual time, the progress table (which adds
    up the time left), and the commands for the next exercise."""
    lesson_width = max(len("lesson"), *(len(result.lesson) for result in results))
    exercise_width = max(len("exercise"), *(len(result.exercise) for result in results))
    efforts = [progress.level_and_minutes(result) for result in results]
    level_width = max(len("level"), *(len(level) for level, _ in efforts))
    times = [progress.duration(minutes) for _, minutes in efforts]
    time_width = max(len("time"), *map(len, times))
    terminal.line(terminal.dim(f"{'lesson'.ljust(lesson_width)}  {'exercise'.ljust(exercise_width)}  "
                               f"{'level'.ljust(level_width)}  {'time'.rjust(time_width)}  status"))
    shown = None
    for result, (level, _), time in zip(results, efforts, times):
        lesson = result.lesson if result.lesson != shown else ""
        shown = result.lesson
        terminal.line(f"{lesson.ljust(lesson_width)}  {result.exercise.ljust(exercise_width)}  "
                      f"{level.ljust(level_width)}  {time.rjust(time_width)}  ", terminal.status(result.status))
    terminal.line("")
    for line in progress.table_lines(results):
        terminal.line(line)
    todo = progress.next_to_do(results)
    if todo is None:
        terminal.line(("every exercise passes. Well done!", "green"))
    else:
        short = lesson_named(todo.lesson).short
        terminal.line(terminal.dim(f"`hooked check {short}` shows the feedback; "
                                   f"`hooked hint {short} {todo.exercise}` gives a hint."))


def show_check(terminal, results):
    """Each exercise's feedback, what the learner's code printed when it failed, and the table."""
    for result in results:
        if result.status == "passed":
            terminal.line(terminal.status("passed", STATUS_WIDTH), "  ", result.exercise)
            continue
        terminal.line(*feedback_line(terminal, result))
        if result.output and result.status in ("failed", "error"):
            terminal.line(terminal.dim("    your code printed:"))
            terminal.line(terminal.dim(textwrap.indent(result.output.rstrip(), "    ")))
    terminal.line("")
    for line in progress.table_lines(results):
        terminal.line(line)


def show_watched(terminal, results, statuses):
    """One lesson's state: what changed since the last grade (`statuses`, updated here), the
    count, and the exercise being worked on (the first that does not pass) with its feedback."""
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
