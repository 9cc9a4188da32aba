"""What a canary pins (the lesson, its section, what it says torch does) and the message it fails with.

A canary is a test written as

    @canary("what the lesson says torch does", ("07", "A bug: ..."), ("09", "Pitfall 9: ..."))
    def test_...(pin):
        ...
        pin.holds(condition, f"what torch did instead: {value}")

Its failure names every section that states the behaviour, with the line of its heading in
solutions/, so that an author knows which paragraph to update. Any other exception raised by the
test (an attribute torch no longer has, an error text that changed type) fails the same way.

A behaviour that changed between the torch versions the course supports is pinned for each of them:
the canary says "until torch 2.13 X; from torch 2.14 Y" and expects `on_this_torch({"2.13": X, "2.14": Y})`."""

import dataclasses
import re

import pytest
import torch

from hooked import course

@dataclasses.dataclass(frozen=True)
class Pin:
    says: str
    where: tuple  # ((lesson number "07", section heading without its #s), ...)

    def holds(self, condition, now):
        """Fail with this pin's message, and `now` (what torch did instead), unless `condition`."""
        if not condition:
            pytest.fail(self.message(now), pytrace=False)

    def message(self, now):
        places = "\n".join(f"  - {place}" for place in self.places())
        return (f"torch {torch.__version__} no longer behaves as the course says.\n"
                f"The course says: {self.says}\n"
                f"On this torch: {now}\n"
                f"Update, and re-run its cell:\n{places}")

    def places(self):
        for number, section in self.where:
            lesson = lesson_numbered(number)
            line = heading_line(lesson, section) if lesson else None
            name = lesson.name if lesson else f"(no lesson {number})"
            at = f"solutions/{name}.py line {line}" if line else f"solutions/{name}.py: heading not found"
            yield f'lesson {name}, section "{section}" ({at})'


def lesson_numbered(number):
    return next((lesson for lesson in course.lessons() if lesson.short == number), None)


_HEADING = re.compile(r"^# (#{2,4}) (?P<text>.+)$")


def heading_line(lesson, section):
    """The line of `section`'s heading in the lesson's solution file, or None. An exercise heading
    may go on with its difficulty and time (`· medium · about 15 min`)."""
    lines = lesson.solution_path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        match = _HEADING.match(line)
        if match and (match["text"] == section or match["text"].startswith(section + " ·")):
            return number
    return None


def canary(says, *where):
    """Make a test a canary of `where`'s sections; the test receives its Pin."""
    pin = Pin(says, where)

    def decorate(test):
        def run():
            try:
                test(pin)
                return
            except Exception as error:  # pin.holds fails with pytest's own outcome, not an Exception
                raised = f"the lesson's code raised {type(error).__name__}: {error}"
            pytest.fail(pin.message(raised), pytrace=False)  # outside the except: without the exception's chain

        run.__name__, run.__doc__, run.__module__ = test.__name__, test.__doc__, test.__module__
        run.pin = pin
        return run

    return decorate


def error_of(call):
    """The exception `call()` raises, or None."""
    try:
        call()
    except Exception as error:
        return error
    return None


def described(error):
    return "nothing was raised" if error is None else f"{type(error).__name__}: {error}"


OLDEST_SUPPORTED = "2.13"


def on_this_torch(by_version, installed=None):
    """The entry of `by_version` ({"2.13": what torch 2.13 does, "2.14": what it does from 2.14 on, ...}) for the
    installed torch (or `installed`): the one of the newest version listed that is not newer than it."""
    installed = torch.torch_version.TorchVersion(installed or torch.__version__)
    if installed < OLDEST_SUPPORTED or OLDEST_SUPPORTED not in by_version:
        raise ValueError(f"the course supports torch {OLDEST_SUPPORTED} and newer; pinned: {sorted(by_version)}, "
                         f"installed: {installed}")
    reached = [version for version in by_version if installed >= version]
    return by_version[max(reached, key=torch.torch_version.TorchVersion)]
