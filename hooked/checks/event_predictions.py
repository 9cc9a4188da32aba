"""Predict-the-event-log exercises. The lesson shows a piece of code with hooks, in a cell
tagged `prediction` that defines `<code>(log)`: each hook calls `log("<event name>")`. The
learner's exercise `predict_<what>()` returns the list of events they expect, in order.

The check runs that cell as solutions/ holds it (lessons/ shows the same text: the generator
leaves it alone) on the installed torch, records what really fires, and compares. A wrong
prediction is told where it first parts from the log (the index, what was predicted, what
fires there, the agreeing events before it) and the rule that explains it, never the whole
log. Spelling is forgiving in the ways each exercise states: case, spaces around a name and
around its `:`, and the exercise's aliases for the kind of event before the `:` ("forward" for "fwd").

In a lesson's checks an `EventPrediction` names the cell's function, every event it can log, the
accepted spellings of the kind, and the `Rule`s that explain a wrong order (the event that fires and
the one predicted; `after=`/`before=` the events that have or have not fired yet; `repeated=True` an
event predicted once more than it fires: give every exercise one, or a hook predicted twice is told
the rule of whatever fires in its place); `prediction_check(...)` registers its check. In the lesson,
a cell `reveal(predict_<what>)` after the hints prints the recorded log once the prediction is right
(so the solution page shows it, the lesson page does not); the notebook's `check` shows it after
three different wrong predictions in a session."""

import dataclasses
import functools
import re
from collections import defaultdict

from hooked import course
from hooked.checks import recorded_logs
from hooked.checks.check_api import calling, fail, register_check
from hooked.lesson_files import lesson_format

END = "(the end of the log)"  # what stands at an index past the last event
TRIES_BEFORE_THE_LOG = 3
# The named mistakes of every prediction exercise, beside those of its rules.
FORMAT_MISTAKES = {
    "returned-none": "returns None instead of a list of events (a missing return)",
    "returned-string": "returns the events joined into one string instead of a list",
    "not-a-list": "returns something other than a list or tuple of events",
    "not-event-names": "returns a list holding something other than event names",
    "unknown-event": "names an event that the code does not log",
}
WRONG_ORDER = "wrong-order"  # a divergence that no rule of the exercise explains  # different wrong predictions, in one notebook session, before check() shows the log


@dataclasses.dataclass(frozen=True)
class Rule:
    """What explains a divergence: it applies where the event that fires is one of `fired`
    and the predicted one is one of `predicted` (an empty tuple matches anything; END
    stands for no event: a prediction too short, or too long), every event of `after` has
    fired already and none of `before` has. A `repeated` rule applies only where the
    predicted event has already fired as often as it ever does: one firing too many."""
    text: str
    fired: tuple = ()
    predicted: tuple = ()
    after: tuple = ()
    before: tuple = ()
    repeated: bool = False
    mistake: str = ""  # the slug of the named mistake a prediction that this rule explains makes (required)

    def applies(self, fired, predicted, earlier, later):
        """`earlier`: the events that fired before the divergence; `later`: those from it on."""
        return ((not self.fired or fired in self.fired) and (not self.predicted or predicted in self.predicted)
                and all(event in earlier for event in self.after) and not any(event in earlier for event in self.before)
                and (not self.repeated or (predicted in earlier and predicted not in later)))


@dataclasses.dataclass(frozen=True)
class EventPrediction:
    exercise: str     # "predict_nesting_order"
    lesson: str       # "03_forward_pre_hooks"
    code: str         # the function of the lesson's prediction cell that runs the code: code(log)
    events: tuple     # every event name that code can log, as it spells them
    rules: tuple      # (Rule, ...): the first that applies explains a divergence
    rule: str         # the rule to give when none applies
    aliases: tuple = ()  # (("forward", "fwd"), ...): another spelling of the kind before the ":"

    def canonical(self, name):
        """The event `name` means, in one spelling: lower case, single spaces, none around
        the ":", the kind's alias replaced."""
        text = " ".join(name.lower().split())
        text = re.sub(r"\s*:\s*", ":", text)
        text = re.sub(r"\s*,\s*", ", ", text)
        kind, colon, rest = text.partition(":")
        if colon:
            kind = dict(self.aliases).get(kind, kind)
        return kind + colon + rest


def prediction_cells(lesson):
    """The source of each cell tagged `prediction` in solutions/<lesson>.py, with the line it starts at."""
    return lesson_format.prediction_cells((course.SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def recorded_events(lesson, code):
    """What the prediction cell's `code(log)` logs, run on the installed torch: now, or in an
    earlier run with the same torch, Python and cell text (hooked.checks.recorded_logs)."""
    cells = prediction_cells(lesson)
    return recorded_logs.recorded(lesson, code, [source for source, _ in cells],
                                  lambda: run_prediction_code(lesson, code, cells))


def run_prediction_code(lesson, code, cells):
    """Run the prediction `cells` of `lesson` and their `code(log)`; return what it logs."""
    namespace = {"__name__": f"prediction_cell_{code}"}
    path = course.SOLUTIONS_DIR / f"{lesson}.py"
    for source, first_line in cells:
        exec(compile("\n" * (first_line - 1) + source, str(path), "exec"), namespace)
    if code not in namespace:
        raise LookupError(f"no prediction cell of {path} defines {code}")
    log = []
    namespace[code](log.append)
    return tuple(log)


def true_log(prediction):
    """The recorded log of `prediction`, each event as the code spells it; a course bug
    (an event the exercise does not list) raises."""
    log = recorded_events(prediction.lesson, prediction.code)
    unknown = [event for event in log if event not in prediction.events]
    if unknown:
        raise AssertionError(f"{prediction.code} logged {unknown}, which {prediction.exercise}'s events do not list")
    return log


def _as_event_names(prediction, returned):
    """The returned events in canonical spelling; fails with what is wrong with the type."""
    call = f"{prediction.exercise}()"
    if returned is None:
        fail(f"{call} returned None; return the list of events in the order you expect them, "
             "e.g. return ['pre:a', 'fwd:a'] (is the `return` missing?).", "returned-none")
    if isinstance(returned, (str, bytes)):
        fail(f"{call} returned a string, {returned!r:.80}; return a list of strings, one per event, "
             "e.g. ['pre:a', 'fwd:a'], not the events joined into one string.", "returned-string")
    if not isinstance(returned, (list, tuple)):
        kind = type(returned).__name__
        why = " (a set has no order)" if isinstance(returned, (set, frozenset)) else ""
        article = "an" if kind[:1] in "aeiou" else "a"
        fail(f"{call} returned {article} {kind}{why}; return a list (or a tuple) of event names, in the order they fire.", "not-a-list")
    names = []
    for index, item in enumerate(returned):
        if not isinstance(item, str):
            fail(f"{call} returned a list whose item {index} is {type(item).__name__} {item!r:.60}, not an "
                 "event name; each item is a string such as 'pre:a'.", "not-event-names")
        names.append(prediction.canonical(item))
    known = {prediction.canonical(event): event for event in prediction.events}
    for index, (item, name) in enumerate(zip(returned, names)):
        if name not in known:
            # in an order that cannot be the answer
            listed = ", ".join(repr(event) for event in sorted(prediction.events))
            fail(f"{call} returned {item!r} at index {index}, which is not an event this code logs. Its events "
                 f"are, in alphabetical order: {listed} (case, spaces and the spellings the exercise lists do not "
                 "matter).", "unknown-event")
    return [known[name] for name in names], list(returned)


def rule_mistakes(prediction):
    """{slug: one line} of the named mistakes that the rules of `prediction` explain."""
    mistakes = {rule_slug(prediction, rule): f"a prediction against the rule: {rule.text}" for rule in prediction.rules}
    mistakes[WRONG_ORDER] = f"a prediction against the rule: {prediction.rule}"
    return mistakes


def rule_slug(prediction, rule):
    """The slug of the named mistake `rule` explains."""
    if not rule.mistake:
        raise ValueError(f"{prediction.exercise}: every Rule names its mistake (Rule(..., mistake='slug')): "
                         f"{rule.text[:60]!r}")
    return rule.mistake


def divergence_message(prediction, predicted, written, log):
    """The feedback for a prediction (canonical names `predicted`, as the learner `written`
    them) that is not `log`, and the slug of its named mistake; ('', None) when it is right."""
    index = next((i for i, (a, b) in enumerate(zip(predicted, log)) if a != b), min(len(predicted), len(log)))
    if index == len(predicted) == len(log):
        return "", None
    fired = log[index] if index < len(log) else END
    guess = predicted[index] if index < len(predicted) else END
    found = next((rule for rule in prediction.rules if rule.applies(fired, guess, log[:index], log[index:])), None)
    rule, slug = (found.text, rule_slug(prediction, found)) if found else (prediction.rule, WRONG_ORDER)
    agreed = (f"The {index} event{'s' if index != 1 else ''} before it agree{'' if index != 1 else 's'}: "
              f"{', '.join(repr(event) for event in written[:index])}." if index else "The first event already differs.")
    if guess == END:
        where = (f"you predicted {len(predicted)} event{'s' if len(predicted) != 1 else ''}, but more fire: "
                 f"{fired!r} is next.")
    elif fired == END:
        where = f"you predicted {written[index]!r}, but the log ends before it: {len(log)} events fire."
    else:
        where = f"you predicted {written[index]!r}, but {fired!r} fires there."
    return f"Your prediction parts from what fires at index {index}: {where} {agreed}\nThe rule: {rule}", slug


def check_prediction(prediction, predict):
    with calling(f"calling {prediction.exercise}()"):
        returned = predict()
    predicted, written = _as_event_names(prediction, returned)
    log = true_log(prediction)  # after the stub's NotImplementedError: a fresh lesson costs no recording
    message, slug = divergence_message(prediction, predicted, written, list(log))
    if message:
        fail(message, slug)


def prediction_check(prediction):
    """The check of a prediction exercise, registered as the check of `prediction.exercise` in the
    checks module of `prediction.lesson` (as check_of registers the others); `.prediction` says which."""
    def check(predict):
        check_prediction(prediction, predict)
    check.prediction = prediction
    check.__name__ = check.__qualname__ = f"check_{prediction.exercise}"  # as the lesson's module names it
    register_check(prediction.exercise, check, course.checks_module_name(prediction.lesson),
                   mistakes={**FORMAT_MISTAKES, **rule_mistakes(prediction)})
    return check


def reveal_text(predict, result, prediction):
    """What a lesson's reveal cell prints under a prediction, given `result`, the verdict on
    `predict`, and `prediction`, its EventPrediction: the log that fires, numbered, once
    `predict` passes; before that, what to do (so the learner's page never shows it)."""
    if result.status == "not_attempted":
        return f"Not done yet: write your prediction in {predict.__name__}'s cell; the log appears here once it is right."
    if result.status != "passed":
        return f"Not yet right, so the log stays hidden; check({predict.__name__}) says where your prediction parts."
    lines = [f"{index:2}  {event}" for index, event in enumerate(true_log(prediction))]
    return "What fires, recorded by running this code on torch " + _torch_version() + ":\n" + "\n".join(lines)


def _torch_version():
    import torch  # only where a log is shown: importing this module (hooked.notebook does) stays light
    return torch.__version__


_wrong_tries = defaultdict(set)  # exercise -> the different wrong predictions check() saw, in this kernel only


def after_wrong_try(predict, result, prediction):
    """What a notebook's check() adds under a failed prediction: how many different wrong
    predictions it has seen in this session, and after the third, the whole log. A try is a
    list of the exercise's events: the same events in another spelling are the same try, and
    a value that is no prediction (None, a string, an unknown event) is no try. Counted in
    the kernel's memory only: the grader never writes to the learner's files, and `pytest` and
    `hooked`, a fresh process each time, never show the log."""
    if result.status != "failed" or prediction is None:
        return ""
    try:
        key = tuple(_as_event_names(prediction, predict())[0])  # one try, however it is spelled
    except Exception:  # it raised, or is not a list of its events: not a prediction, and the failure says why
        return ""
    _wrong_tries[result.exercise].add(key)
    tries = len(_wrong_tries[result.exercise])
    if tries < TRIES_BEFORE_THE_LOG:
        return (f"\n({tries} of {TRIES_BEFORE_THE_LOG} different wrong predictions in this session; after "
                f"{TRIES_BEFORE_THE_LOG}, check() shows the whole log.)")
    lines = [f"{index:2}  {event}" for index, event in enumerate(true_log(prediction))]
    return (f"\nThat is {tries} different wrong predictions, so here is what fires, recorded by running this code "
            f"on torch {_torch_version()}:\n" + "\n".join(lines))
