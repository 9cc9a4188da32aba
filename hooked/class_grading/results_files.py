"""What grading a class writes in its output folder, and how the outputs of shards are joined:
results.csv (one row per learner and exercise, for a spreadsheet), results.json (the same rows
with the full messages, each learner's totals and what each named mistake is), report.html
(hooked.class_grading.report_html) and, on request, each learner's Gradescope results.json.
results.json holds everything the other files are made from, so that merged shards give the
same files as one run."""

import csv
import json
import pathlib
import shutil

from hooked.class_grading.report_html import write_report
from hooked.feedback.gradescope import results_json
from hooked.feedback.verdict import STATUSES
from hooked.lesson_files.display_paths import display_path

FORMAT = "hooked-class-results/1"
CSV_COLUMNS = ("learner", "lesson", "exercise", "status", "mistake", "message", "graded_file")
_CSV_MESSAGE_LIMIT = 2000  # a spreadsheet cell holds 32,767 characters; a traceback can hold more
GRADESCOPE_FOLDER = "gradescope"


class ResultsError(Exception):
    """An output folder that cannot be written, or shards that cannot be joined: said in one line."""


def class_results(lessons, graded):
    """The contents of results.json: `lessons` (course Lessons, in order) and `graded`
    ({learner id: [Result, ...]}, in the learners' order)."""
    rows, learners, mistakes = [], [], {}
    for learner, results in graded.items():
        counts = {status: 0 for status in STATUSES}
        for result in results:
            counts[result.status] += 1
            if result.mistake:
                mistakes[result.mistake] = result.mistake_what or mistakes.get(result.mistake) or ""
            rows.append({"learner": learner, "lesson": result.lesson, "exercise": result.exercise,
                         "status": result.status, "mistake": result.mistake, "message": result.message,
                         "graded_file": display_path(result.graded_file) if result.graded_file else ""})
        learners.append({"learner": learner, "exercises": len(results), **counts})
    return {"format": FORMAT,
            "lessons": [{"lesson": lesson.name, "number": lesson.short, "title": lesson.short_title.replace("`", ""),
                         "exercises": lesson.exercise_names()} for lesson in lessons],
            "learners": learners, "rows": rows, "mistakes": dict(sorted(mistakes.items()))}


def _csv_message(message):
    if len(message) <= _CSV_MESSAGE_LIMIT:
        return message
    return message[:_CSV_MESSAGE_LIMIT] + " [... the whole message is in results.json]"


def write_outputs(folder, data):
    """results.csv, results.json and report.html of `data` in `folder`."""
    folder = pathlib.Path(folder)
    with open(folder / "results.json", "w", encoding="utf-8") as file:
        json.dump(data, file, indent=1, ensure_ascii=False)
        file.write("\n")
    # utf-8-sig: a spreadsheet that opens the file as it is reads its accents and arrows right
    with open(folder / "results.csv", "w", encoding="utf-8-sig", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for row in data["rows"]:
            writer.writerow([row["learner"], row["lesson"], row["exercise"], row["status"], row["mistake"] or "",
                             _csv_message(row["message"]), row["graded_file"]])
    write_report(data, folder / "report.html")


def write_gradescope(folder, learner, results, seconds):
    """The learner's Gradescope results.json, as `hooked export --format gradescope` writes it."""
    path = pathlib.Path(folder) / GRADESCOPE_FOLDER / learner / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(results_json(results, seconds), file, indent=2)


def read_results(folder):
    path = pathlib.Path(folder) / "results.json"
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError) as error:
        raise ResultsError(f"{folder}: no readable results.json there ({error}); give the --out folders "
                           "of `hooked grade-class --shard K/N` runs.") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ResultsError(f"{path}: not the results.json of `hooked grade-class`.")
    return data


def merged(shards):
    """One results.json of `shards` (results.json contents of runs over disjoint learners)."""
    first = shards[0]
    learners, rows, mistakes, owner = [], [], {}, {}
    for index, data in enumerate(shards):
        if data["lessons"] != first["lessons"]:
            raise ResultsError(f"shard {index + 1} graded other lessons than shard 1: join shards of one "
                               "command run with --shard K/N, with the same --lessons.")
        for learner in data["learners"]:
            if learner["learner"] in owner:
                raise ResultsError(f"learner {learner['learner']} is in shards {owner[learner['learner']] + 1} "
                                   f"and {index + 1}: each learner belongs to one shard.")
            owner[learner["learner"]] = index
        learners += data["learners"]
        rows += data["rows"]
        mistakes.update(data["mistakes"])
    order = {learner["learner"]: position for position, learner in
             enumerate(sorted(learners, key=lambda learner: learner["learner"]))}
    return {"format": FORMAT, "lessons": first["lessons"],
            "learners": sorted(learners, key=lambda learner: order[learner["learner"]]),
            "rows": sorted(rows, key=lambda row: order[row["learner"]]),  # stable: each learner's rows keep their order
            "mistakes": dict(sorted(mistakes.items()))}


def copy_gradescope(shard_folders, folder):
    """Each shard's Gradescope files, into `folder`'s."""
    for shard in shard_folders:
        source = pathlib.Path(shard) / GRADESCOPE_FOLDER
        if source.is_dir():
            shutil.copytree(source, pathlib.Path(folder) / GRADESCOPE_FOLDER, dirs_exist_ok=True)
