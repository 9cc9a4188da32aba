"""Grading results in the format of Gradescope's autograder, `results.json`
(https://gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format"):
one test per exercise, worth one point, with the learner's feedback as its output, and the
exercise's level and usual minutes as its extra data."""

from hooked import course
from hooked.feedback import progress


def results_json(results, execution_seconds):
    tests = []
    numbers = {}
    for result in results:
        passed = result.status == "passed"
        lesson_number = course.lesson_named(result.lesson).number
        numbers[lesson_number] = numbers.get(lesson_number, 0) + 1
        level, minutes = progress.level_and_minutes(result)
        tests.append({
            "name": f"{result.lesson}: {result.exercise}",
            "number": f"{lesson_number}.{numbers[lesson_number]}",  # orders the tests on the page
            "score": 1.0 if passed else 0.0,
            "max_score": 1.0,
            "status": "passed" if passed else "failed",  # Gradescope knows only these two
            "output": progress.feedback(result),
            "output_format": "text",  # shown as is: messages may contain <lambda> and the like
            "tags": [result.lesson, result.status] + ([result.mistake] if result.mistake else []),
            "visibility": "visible",
            "extra_data": {"level": level, "minutes": minutes},
        })
    score = sum(test["score"] for test in tests)
    return {
        "score": score,
        "execution_time": round(execution_seconds),
        "output": f"{score:g} of {len(tests)} exercises pass.",
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
