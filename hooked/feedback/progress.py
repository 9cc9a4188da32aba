"""What a learner's results add up to, in words: the feedback line for one exercise,
the progress table (with the time the exercises not passed yet usually take), the "next:"
line and the JSON report. Shared by the pytest plugin and the `hooked` command, so that
both say the same thing."""

import json
import pathlib

from hooked import course
from hooked.lesson_files.display_paths import display_path


def where(result):
    """Where the exercise is written, e.g. 'lessons/01_tensor_hooks.py line 241'."""
    return result.location or display_path(result.graded_file)


def feedback(result):
    """'double_grad (lessons/01_tensor_hooks.py line 241): <message>', as a failed test reports it."""
    return f"{result.exercise} ({where(result)}): {result.message}"


def status_words(status):
    return status.replace("_", " ")


def level_and_minutes(result):
    """("easy", 5): the difficulty and usual time of the result's exercise, from the manifest."""
    exercise = course.exercise_named(result.exercise)
    return exercise.level, exercise.minutes


def minutes_left(results):
    """The minutes the exercises that have not passed usually take, together."""
    return sum(level_and_minutes(result)[1] for result in results if result.status != "passed")


def duration(minutes):
    """'45 min', '1 h 5 min', '2 h'."""
    hours, minutes = divmod(minutes, 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def by_lesson(results):
    """{lesson: [its results, in order]}, lessons in the order they were graded."""
    lessons = {}
    for result in results:
        lessons.setdefault(result.lesson, []).append(result)
    return lessons


def next_to_do(results):
    """The first result that has not passed, or None."""
    return next((result for result in results if result.status != "passed"), None)


def table_lines(results):
    """The progress table: one line per lesson with the time its exercises not passed yet
    usually take, the total, and the next exercise to do."""
    lessons = by_lesson(results)
    width = max(len(lesson) for lesson in lessons)
    left = {lesson: duration(minutes_left(entries)) for lesson, entries in lessons.items()}
    total_left = duration(minutes_left(results))
    left_width = max(len("time left"), len(total_left), *map(len, left.values()))
    # "passed" heads a column of " 3 / 4 " (two digits each side)
    lines = [f"{'lesson'.ljust(width)}  {'passed'.ljust(7)}  {'time left'.rjust(left_width)}  graded file"]
    for lesson, entries in lessons.items():
        passed = sum(entry.status == "passed" for entry in entries)
        graded = display_path(entries[0].graded_file)
        note = "  (the notebook: it is newer than the .py)" if graded.endswith(".ipynb") else ""
        lines.append(f"{lesson.ljust(width)}  {passed:>2} / {len(entries):<2}  {left[lesson].rjust(left_width)}  "
                     f"{graded}{note}")
    total = sum(result.status == "passed" for result in results)
    lines.append(f"{'total'.ljust(width)}  {total:>2} / {len(results):<2}  {total_left.rjust(left_width)}")
    todo = next_to_do(results)
    if todo is not None:
        lines.append(f"next: {todo.exercise}, {where(todo)} ({status_words(todo.status)})")
    return lines


def report(results):
    """The grader's own JSON report: every exercise's status and feedback, its level and minutes."""
    entries = []
    for result in results:
        level, minutes = level_and_minutes(result)
        entries.append({**result.as_report_entry(), "level": level, "minutes": minutes})
    return {"exercises": entries}


def write_json(path, data):
    pathlib.Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
