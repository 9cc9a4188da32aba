"""Predict-the-event-log exercises (hooked/checks/event_predictions.py): each one's truth is
recorded from the code the lesson shows, and equals its reference answer; the lesson names
every event and spelling the check accepts, shows the code before anything that runs it, and
keeps the log off the learner's page; feedback names the first divergence and a rule,
never the rest of the log."""

import dataclasses
import re

import jupytext
import pytest

from hooked.grader.check_registry import checks_for_lesson

from hooked.grader.check_runner import run_exercise_check
from hooked.checks.event_predictions import (END, EventPrediction, Rule, divergence_message, prediction_cells,
                                             true_log)
from hooked.lesson_files.lesson_format import PREDICTION_TAG
from hooked.notebook import revealed
from hooked.course import fresh_lesson_text, lessons

PREDICTIONS = [check.prediction for lesson in lessons() for check in checks_for_lesson(lesson.name).values()
               if hasattr(check, "prediction")]
IDS = [prediction.exercise for prediction in PREDICTIONS]
LESSONS_WITH_PREDICTIONS = sorted({prediction.lesson for prediction in PREDICTIONS})


def _reference_answer(prediction):
    from hooked.course import exercise_named
    namespace = {}
    exec(exercise_named(prediction.exercise).reference, namespace)
    return namespace[prediction.exercise]


def _exercise_markdown(prediction):
    """The markdown cell that introduces the exercise (its heading) in solutions/."""
    text = (lessons()[0].solution_path.parent / f"{prediction.lesson}.py").read_text(encoding="utf-8")
    start = text.index(f"`{prediction.exercise}` ·")
    return text[start:text.index("# %%", start)]


def test_there_are_predictions_in_lessons_03_04_05_07_08_and_09():
    assert len(PREDICTIONS) >= 6
    assert [lesson[:2] for lesson in LESSONS_WITH_PREDICTIONS] == ["03", "04", "05", "07", "08", "09"]
    assert all(prediction.exercise.startswith("predict_") for prediction in PREDICTIONS)


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_the_reference_answer_is_the_log_recorded_on_this_torch(prediction):
    import torch
    reference, log = _reference_answer(prediction)(), list(true_log(prediction))
    assert reference == log, (
        f"solutions/{prediction.lesson}.py, {prediction.exercise}: on torch {torch.__version__} "
        f"{prediction.code} logs {log}, the reference answer says {reference}. Torch changed the order: update "
        "the reference, the hints and the rules in the lesson's checks.")


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_the_lesson_lists_every_event_and_every_accepted_spelling(prediction):
    markdown = _exercise_markdown(prediction)
    missing = [event for event in prediction.events if f'`"{event}"`' not in markdown]
    assert not missing, f"{prediction.exercise}: the exercise does not name the events {missing}"
    unsaid = [spelling for pair in prediction.aliases for spelling in pair if f"`{spelling}`" not in markdown]
    assert not unsaid, f"{prediction.exercise}: the exercise does not give the spellings {unsaid}"
    canonical = [prediction.canonical(event) for event in prediction.events]
    assert len(set(canonical)) == len(canonical), f"{prediction.exercise}: two events share a spelling"


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_every_event_the_exercise_lists_is_a_string_of_its_code(prediction):
    source = "".join(cell for cell, _ in prediction_cells(prediction.lesson))
    literal = set(re.findall(r'f?"([^"]*)"', source))  # the strings of the code, f-strings as patterns
    patterns = [re.compile(re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(text))) for text in literal]
    unknown = [event for event in prediction.events if not any(p.fullmatch(event) for p in patterns)]
    assert not unknown, f"{prediction.exercise}: no log(...) call in the code makes {unknown}"


@pytest.mark.parametrize("lesson", LESSONS_WITH_PREDICTIONS)
def test_the_learner_sees_the_code_the_check_runs_tagged_prediction(lesson):
    learner = fresh_lesson_text(lesson)
    solution = (lessons()[0].solution_path.parent / f"{lesson}.py").read_text(encoding="utf-8")
    for source, _ in prediction_cells(lesson):
        assert f'# %% tags=["{PREDICTION_TAG}"]\n{source}' in learner
    tagged = [cell.source for cell in jupytext.reads(solution, fmt="py:percent").cells
              if PREDICTION_TAG in cell.metadata.get("tags", [])]
    assert len(tagged) == len(prediction_cells(lesson)) > 0  # jupytext keeps the tag


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_the_code_is_shown_before_and_never_run_by_a_lesson_cell(prediction):
    text = (lessons()[0].solution_path.parent / f"{prediction.lesson}.py").read_text(encoding="utf-8")
    calls = re.findall(rf"(?<![`\w])(?<!def ){prediction.code}\(", text)  # not its def, nor prose's `name(log)`
    assert not calls, f"{prediction.code} is called in the lesson: that shows the answer before the prediction"
    definition = text.index(f"def {prediction.code}(")
    assert definition < text.index(f"def {prediction.exercise}(") < text.index(f"reveal({prediction.exercise})")


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_the_stub_is_not_attempted_and_reveals_nothing(prediction):
    namespace = {}
    learner = fresh_lesson_text(prediction.lesson)
    cell = learner[learner.index(f"# Exercise: {prediction.exercise}"):]
    exec(cell[:cell.index("# %%")], namespace)
    stub = namespace[prediction.exercise]
    assert run_exercise_check(prediction.lesson, prediction.exercise, stub).status == "not_attempted"
    text = revealed(stub)
    assert text.startswith("Not done yet") and not any(f"  {event}" in text for event in true_log(prediction))


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_the_solution_reveals_the_recorded_log_and_a_wrong_one_does_not(prediction):
    text = revealed(_reference_answer(prediction))
    assert text.splitlines()[1:] == [f"{index:2}  {event}" for index, event in enumerate(true_log(prediction))]

    def predict_wrong():
        return list(reversed(true_log(prediction)))
    predict_wrong.__name__ = prediction.exercise
    assert revealed(predict_wrong).startswith("Not yet right, so the log stays hidden")


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_an_empty_prediction_is_told_only_the_first_event(prediction):
    def predict_nothing():
        return []
    result = run_exercise_check(prediction.lesson, prediction.exercise, predict_nothing)
    log = true_log(prediction)
    assert result.status == "failed"
    assert f"you predicted 0 events, but more fire: {log[0]!r} is next" in result.message
    later = [event for event in set(log[1:]) if event != log[0] and repr(event) in result.message]
    assert not later, f"the message shows later events {later}:\n{result.message}"


# The comparison itself, on a log written here (what a prediction's rules and messages do).
TOY = EventPrediction(exercise="predict_toy", lesson="", code="", events=("pre:a", "fwd:a", "fwd:b"),
                      aliases=(("forward", "fwd"),),
                      rules=(Rule("B's rule.", fired=("fwd:b",), predicted=("fwd:a",), mistake="b-rule"),
                             Rule("the log is shorter.", fired=(END,), mistake="too-long")),
                      rule="the general rule.")
LOG = ["pre:a", "fwd:a", "fwd:b"]


def test_spellings_differ_only_in_case_spaces_and_the_aliases_of_the_kind():
    assert TOY.canonical(" PRE : A ") == TOY.canonical("pre:a") == "pre:a"
    assert TOY.canonical("Forward:B") == TOY.canonical("fwd:b") == "fwd:b"
    assert TOY.canonical("forward") == "forward"  # an alias replaces the kind before a ':' only
    assert TOY.canonical("fwd:c") != TOY.canonical("fwd:b")


def test_a_divergence_names_its_index_both_events_the_agreeing_prefix_and_its_rule():
    message, _ = divergence_message(TOY, ["pre:a", "fwd:a", "fwd:a"], ["PRE:a", "fwd:a", "forward:a"], LOG)
    assert message == ("Your prediction parts from what fires at index 2: you predicted 'forward:a', but 'fwd:b' "
                       "fires there. The 2 events before it agree: 'PRE:a', 'fwd:a'.\nThe rule: B's rule.")


def test_a_prediction_too_long_or_too_short_is_told_so():
    too_long, _ = divergence_message(TOY, LOG + ["pre:a"], LOG + ["pre:a"], LOG)
    assert "at index 3: you predicted 'pre:a', but the log ends before it: 3 events fire." in too_long
    assert too_long.endswith("The rule: the log is shorter.")
    too_short, _ = divergence_message(TOY, LOG[:1], LOG[:1], LOG)
    assert "you predicted 1 event, but more fire: 'fwd:a' is next. The 1 event before it agrees: 'pre:a'." in too_short
    assert too_short.endswith("The rule: the general rule.") and "'fwd:b'" not in too_short
    assert divergence_message(TOY, LOG, LOG, LOG) == ("", None)


def _returning(value):
    def predict_nesting_order():
        return value
    return predict_nesting_order


@pytest.mark.parametrize(("returned", "words"), [
    (None, "returned None; return the list of events"),
    ("pre:outer, pre:first", "returned a string, 'pre:outer, pre:first'; return a list of strings, one per event"),
    ({"pre:outer"}, "returned a set (a set has no order)"),
    (["pre:outer", 3], "returned a list whose item 1 is int 3, not an event name"),
    (["pre:outer", "pre:nowhere"], "returned 'pre:nowhere' at index 1, which is not an event this code logs"),
], ids=["None", "str", "set", "int item", "unknown event"])
def test_a_wrong_type_or_an_unknown_event_gets_a_clear_message(returned, words):
    result = run_exercise_check("03_forward_pre_hooks", "predict_nesting_order", _returning(returned))
    assert result.status == "failed" and words in result.message, result.message


@pytest.mark.parametrize("prediction", PREDICTIONS, ids=IDS)
def test_an_unknown_event_is_told_the_events_in_alphabetical_order_not_in_the_order_they_fire(prediction):
    def predict_unknown():
        return ["nowhere:at all"]
    predict_unknown.__name__ = prediction.exercise
    message = run_exercise_check(prediction.lesson, prediction.exercise, predict_unknown).message
    assert f"in alphabetical order: {', '.join(repr(event) for event in sorted(prediction.events))} (" in message


def test_a_tuple_in_another_spelling_passes():
    right = tuple(event.upper().replace(":", " : ") for event in true_log(PREDICTIONS[0]))
    assert run_exercise_check(PREDICTIONS[0].lesson, PREDICTIONS[0].exercise, _returning(right)).status == "passed"


def test_the_notebook_check_shows_the_whole_log_after_three_different_wrong_predictions(capsys, monkeypatch):
    from collections import defaultdict

    from hooked.checks import event_predictions
    from hooked.notebook import check
    monkeypatch.setattr(event_predictions, "_wrong_tries", defaultdict(set))
    prediction = PREDICTIONS[0]
    log = list(true_log(prediction))
    listing = "\n".join(f"{index:2}  {event}" for index, event in enumerate(log))
    # the second try repeats the first, so it is not a different one
    for wrong, different in [(log[::-1], 1), (log[::-1], 1), (log[1:], 2), (log[:1], 3)]:
        check(_returning(wrong))
        shown = capsys.readouterr().out
        assert "parts from what fires" in shown
        if different < 3:
            assert f"({different} of 3 different wrong predictions" in shown and listing not in shown, shown
        else:
            assert "That is 3 different wrong predictions, so here is what fires" in shown and listing in shown
    # pytest and hooked grade through run_exercise_check, which never shows the log
    result = run_exercise_check(prediction.lesson, prediction.exercise, _returning(log[::-1]))
    assert listing not in result.message and "different wrong predictions" not in result.message


def test_a_try_is_a_prediction_however_it_is_spelled_and_a_value_that_is_none_is_no_try(capsys, monkeypatch):
    from collections import defaultdict

    from hooked.checks import event_predictions
    from hooked.notebook import check
    monkeypatch.setattr(event_predictions, "_wrong_tries", defaultdict(set))
    log = list(true_log(PREDICTIONS[0]))
    for wrong in [log[::-1], [event.upper() for event in log[::-1]], None, "pre:outer", [log[0], "pre:nowhere"]]:
        check(_returning(wrong))
        shown = capsys.readouterr().out
        assert "2 of 3" not in shown and "That is" not in shown, shown
    check(_returning(log[1:]))
    assert "(2 of 3 different wrong predictions" in capsys.readouterr().out


def test_a_divergence_names_the_mistake_of_the_rule_that_explains_it():
    toy = dataclasses.replace(TOY, rules=(Rule("any fwd:b.", fired=("fwd:b",), mistake="b-comes-early"),
                                          Rule("any pre:a.", fired=("pre:a",), mistake="a-comes-late")))
    assert divergence_message(toy, ["fwd:a"], ["fwd:a"], LOG)[1] == "a-comes-late"
    assert divergence_message(toy, ["pre:a", "fwd:a", "x"], ["pre:a", "fwd:a", "x"], LOG)[1] == "b-comes-early"
    assert divergence_message(toy, ["pre:a", "fwd:a", "fwd:b", "x"], ["pre:a", "fwd:a", "fwd:b", "x"], LOG)[1] \
        == "wrong-order"  # no rule applies: the general rule's
    with pytest.raises(ValueError, match="every Rule names its mistake"):
        divergence_message(dataclasses.replace(toy, rules=(Rule("unnamed.", fired=("pre:a",)),)), ["fwd:a"], ["fwd:a"], LOG)


def test_a_rule_can_ask_what_fired_before_it_and_whether_the_predicted_event_fires_again():
    toy = dataclasses.replace(TOY, rules=(
        Rule("a repeat.", repeated=True, mistake="repeat"),
        Rule("after fwd:a, before a first fwd:b.", fired=("fwd:b",), after=("fwd:a",), before=("fwd:b",),
             mistake="early-b"),
        Rule("any fwd:b.", fired=("fwd:b",), mistake="any-b")))

    def rule(predicted, log):
        return divergence_message(toy, predicted, predicted, log)[0].split("The rule: ")[1]
    assert rule(["pre:a", "pre:a"], LOG) == "a repeat."  # pre:a has fired, and fires no more
    assert rule(["pre:a", "pre:a"], ["pre:a", "fwd:b", "pre:a"]) == "any fwd:b."  # pre:a fires again later
    assert rule(["pre:a", "fwd:a", "pre:a"], LOG + ["pre:a"]) == "after fwd:a, before a first fwd:b."
    assert rule(["fwd:b", "fwd:a", "pre:a"], ["fwd:b", "fwd:a", "fwd:b", "pre:a"]) == "any fwd:b."


def test_the_non_reentrant_recomputation_stops_inside_the_last_layer_unless_early_stop_is_off():
    """What lesson 09's checkpoint prediction, its hints and its rule say about the early stop."""
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop

    def backward_events(early_stop):
        events = []
        block = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 2))
        block[2].register_forward_pre_hook(lambda module, args: events.append("pre:last"))
        block[2].register_forward_hook(lambda module, args, output: events.append("fwd:last"))
        with set_checkpoint_early_stop(early_stop):
            out = checkpoint(block, torch.ones(1, 2, requires_grad=True), use_reentrant=False)
        events.clear()
        out.sum().backward()
        return events

    assert backward_events(True) == ["pre:last"]  # entered the last layer, stopped before it returned
    assert backward_events(False) == ["pre:last", "fwd:last"]
