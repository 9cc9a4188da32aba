"""Every named mistake of the course: what the checks of each exercise recognize (their
check_of's `mistakes`, hooked.checks.check_api) and what the runner names for any exercise.
Reading them imports the lessons' checks modules, and with them torch."""

import dataclasses

from hooked import course
from hooked.checks.check_api import RUNNER_MISTAKES, mistake_id
from hooked.grader.check_registry import registrations_for_lesson


@dataclasses.dataclass(frozen=True)
class NamedMistake:
    id: str        # "01.double_grad.in-place"
    lesson: str    # "01_tensor_hooks"
    exercise: str  # "double_grad"
    what: str      # one line: what the learner did

    def as_json(self):
        return dataclasses.asdict(self)


def named_mistakes(lessons=None):
    """[NamedMistake, ...] of `lessons` (default: the whole course), in the manifest's order: each
    exercise's own mistakes as its check declares them, then the runner's."""
    found = []
    for lesson in lessons or course.lessons():
        for exercise, registered in registrations_for_lesson(lesson.name).items():
            for slug, what in (*registered.mistakes, *RUNNER_MISTAKES.items()):
                found.append(NamedMistake(mistake_id(lesson.number, exercise, slug), lesson.name, exercise, what))
    return found


def declared_ids(lesson_name, exercise):
    """The ids of the named mistakes that the check of `exercise` may report."""
    lesson = course.lesson_named(lesson_name)
    return {mistake.id for mistake in named_mistakes([lesson]) if mistake.exercise == exercise}


def described(lesson_name, exercise, mistake):
    """The one line that says what the named mistake `mistake` (an id) of `exercise` is; None if unknown."""
    if not mistake:
        return None
    slug = mistake.rsplit(".", 1)[-1]
    registered = registrations_for_lesson(lesson_name).get(exercise)
    own = dict(registered.mistakes) if registered is not None else {}
    return own.get(slug) or RUNNER_MISTAKES.get(slug)
