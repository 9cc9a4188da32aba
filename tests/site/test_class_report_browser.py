"""The class report (report.html of `hooked grade-class`) in Chromium: it makes no request, has no
serious or critical axe-core violation on a laptop and a phone, light and dark, and never makes the
phone's page scroll sideways. It needs no built site: the report is written from a class made up here."""

import json

import pytest

from hooked.class_grading.report_html import write_report
from test_accessibility import axe_violations

LESSONS = [
    {"lesson": "01_tensor_hooks", "number": "01", "title": "Tensor hooks",
     "exercises": ["double_grad", "make_scale_hook", "make_clip_hook", "record_grads"]},
    {"lesson": "05_backward_hooks", "number": "05", "title": "Backward hooks on modules",
     "exercises": ["record_grad_output_norms", "clip_grad_input", "predict_module_backward_order"]},
    {"lesson": "07_global_and_kwargs_hooks", "number": "07",
     "title": "Hooks everywhere: global hooks, keyword arguments, `prepend`, `always_call`",
     "exercises": ["count_module_calls", "log_kwargs", "always_call_cleanup"]},
]
LEARNERS = [f"learner-{index:02}" for index in range(1, 11)] + ["o'brien & co", "a-very-long-learner-id-" * 3]
TRACEBACK = "\n".join(["Traceback (most recent call last):"]
                      + [f'  File "/submissions/learner/05_backward_hooks.py", line {line}, in step_{line}\n'
                         f"    result = module(inputs) * {line}" for line in range(12)]
                      + ["RuntimeError: <script>alert(1)</script> the process ended with signal 11"])
MISTAKES = {"01.double_grad.in-place": "doubles the gradient in place",
            "01.make_clip_hook.clipped-by-norm": "clips the gradient's norm rather than each element",
            "05.record_grad_output_norms.deprecated-backward-hook":
                "registers the deprecated register_backward_hook, which sees only the last operation",
            "05.record_grad_output_norms.shared-module-under-two-names":
                "records a module used twice under two names",
            "07.count_module_calls.hook-left-after-exception": "leaves the global hook after an exception",
            "05.clip_grad_input.raised": "the exercise raised an exception",
            "05.predict_module_backward_order.crashed": "the learner's code ended the grading process",
            "07.log_kwargs.timed-out": "the exercise hit its time limit",
            "01.record_grads.tampered": "the learner's code changed the grading machinery"}


def _row(learner_index, learner, lesson, exercise):
    """A status and mistake that vary with the learner and the exercise, as a class's do."""
    for mistake in MISTAKES:
        if mistake.startswith(f"{lesson['number']}.{exercise}.") and (learner_index * 7 + len(mistake)) % 5 == 0:
            error = mistake.endswith((".crashed", ".timed-out", ".tampered"))
            message = TRACEBACK if mistake.endswith(".crashed") else \
                f"{MISTAKES[mistake]}: expected tensor([2., 4., 6.]) but got tensor([3., 6., 9.]); " * 3
            return "error" if error else "failed", mistake, message
    if (learner_index + len(exercise)) % 6 == 0:
        return "not_attempted", None, "not attempted: no file for this lesson"
    return "passed", None, "passed"


def _class_results():
    rows, learners = [], []
    for index, learner in enumerate(LEARNERS):
        mine = []
        for lesson in LESSONS:
            for exercise in lesson["exercises"]:
                status, mistake, message = _row(index, learner, lesson, exercise)
                mine.append({"learner": learner, "lesson": lesson["lesson"], "exercise": exercise, "status": status,
                             "mistake": mistake, "message": message, "graded_file": f"{learner}/{lesson['lesson']}.py"})
        rows += mine
        totals = {status: sum(row["status"] == status for row in mine)
                  for status in ("passed", "failed", "not_attempted", "error")}
        learners.append({"learner": learner, "exercises": len(mine), **totals})
    used = {row["mistake"] for row in rows if row["mistake"]}
    return {"format": "hooked-class-results/1", "lessons": LESSONS, "learners": learners, "rows": rows,
            "mistakes": {mistake: MISTAKES[mistake] for mistake in sorted(used)}}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("class-report") / "report.html"
    write_report(_class_results(), path)
    return path


@pytest.fixture
def report_page(browser, report):
    """report_page(scheme, width, height): (the report open in a fresh tab, every URL it requested)."""
    contexts = []

    def open_report(scheme, width, height):
        contexts.append(browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme))
        page = contexts[-1].new_page()
        requested = []
        page.on("request", lambda request: requested.append(request.url))
        # Nothing may leave the machine, even if the test is about to fail for it.
        contexts[-1].route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:")
                           else route.continue_())
        page.goto(report.as_uri(), wait_until="load")
        return page, requested

    yield open_report
    for context in contexts:
        context.close()


def test_the_class_made_up_here_has_every_kind_of_row():
    results = _class_results()
    assert {row["status"] for row in results["rows"]} == {"passed", "failed", "not_attempted", "error"}
    assert {mistake.rsplit(".", 1)[1] for mistake in results["mistakes"]} >= {"crashed", "timed-out", "tampered"}


def test_the_report_requests_nothing_but_itself(report_page, report):
    page, requested = report_page("light", 1280, 800)
    page.wait_for_timeout(300)  # anything loaded late (a font, a lazy image) would show here
    assert requested == [report.as_uri()]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_no_serious_or_critical_axe_violation(report_page, scheme, width, height):
    page, _ = report_page(scheme, width, height)
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
    serious = [violation for violation in axe_violations(page) if violation[1] in ("serious", "critical")]
    assert not serious, json.dumps(serious, indent=1)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_phone_page_does_not_scroll_sideways(report_page, scheme):
    page, _ = report_page(scheme, 390, 844)
    widths = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], widths
    # The progress grid is wider than the phone: it scrolls inside its own region instead.
    region = page.locator('[role=region][aria-label^="Progress grid"]')
    assert region.evaluate("element => element.scrollWidth > element.clientWidth")


def test_the_keyboard_focus_shows_a_ring(report_page):
    page, _ = report_page("dark", 390, 844)
    page.keyboard.press("Tab")  # keyboard use: the browser shows focus rings from now on
    grid = page.locator('[role=region][aria-label^="Progress grid"]')
    grid.focus()
    ring = grid.evaluate("""element => { const style = getComputedStyle(element);
        return [element.matches(':focus-visible'), style.outlineStyle, parseFloat(style.outlineWidth)]; }""")
    assert ring[0] and ring[1] == "solid" and ring[2] >= 2, ring
