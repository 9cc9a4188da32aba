"""The class report, report.html (hooked/class_grading/report_html.py): what it shows an instructor
of a small class made up here, read back with html.parser. Its look in a browser, and axe-core's
verdict, are tests/site/test_class_report_browser.py's."""

import copy
import html.parser
import re

from hooked.class_grading.report_html import report_html, write_report

LESSONS = [{"lesson": "01_tensor_hooks", "number": "01", "title": "Tensor hooks",
            "exercises": ["double_grad", "make_scale_hook", "make_clip_hook"]},
           {"lesson": "02_removing_hooks", "number": "02", "title": "Removing hooks",
            "exercises": ["grad_with_temporary_hook", "HookGroup"]}]
ATTACK = "<script>alert(1)</script>"
# learner: {exercise: (status, mistake, message)}; an exercise left out passed.
OUTCOMES = {
    "ann & bob": {"double_grad": ("failed", "01.double_grad.in-place", "doubled in place"),
                  "make_clip_hook": ("failed", "01.make_clip_hook.clipped-by-norm", "clipped the norm")},
    "carol": {"double_grad": ("failed", "01.double_grad.in-place", "doubled in place"),
              "HookGroup": ("error", "02.HookGroup.crashed", f"the process ended: {ATTACK}")},
    "dave": {"double_grad": ("failed", "01.double_grad.squared-grad", "squared it"),
             "make_clip_hook": ("failed", "01.make_clip_hook.clipped-by-norm", "clipped the norm"),
             "grad_with_temporary_hook": ("error", "02.grad_with_temporary_hook.timed-out", "hit the 10 s limit")},
    "erin": {exercise: ("not_attempted", None, "not attempted") for exercise in ("grad_with_temporary_hook",
                                                                                  "HookGroup")},
}
DESCRIPTIONS = {"01.double_grad.in-place": "doubles the gradient in place",
                "01.double_grad.squared-grad": "squares the gradient instead of doubling it",
                "01.make_clip_hook.clipped-by-norm": "clips the norm, not each element",
                "02.HookGroup.crashed": "ended the grading process",
                "02.grad_with_temporary_hook.timed-out": "hit the time limit",
                "01.double_grad.tampered": "changed the grading machinery"}


def _results(outcomes):
    rows, learners = [], []
    for learner in sorted(outcomes):
        mine = [{"learner": learner, "lesson": lesson["lesson"], "exercise": exercise, "graded_file": "",
                 **dict(zip(("status", "mistake", "message"),
                            outcomes[learner].get(exercise, ("passed", None, "passed"))))}
                for lesson in LESSONS for exercise in lesson["exercises"]]
        rows += mine
        learners.append({"learner": learner, "exercises": len(mine), **{
            status: sum(row["status"] == status for row in mine)
            for status in ("passed", "failed", "not_attempted", "error")}})
    mistakes = {row["mistake"]: DESCRIPTIONS[row["mistake"]] for row in rows if row["mistake"]}
    return {"format": "hooked-class-results/1", "lessons": LESSONS, "learners": learners, "rows": rows,
            "mistakes": dict(sorted(mistakes.items()))}


class _Page(html.parser.HTMLParser):
    """What the tests look at: every tag with its attributes, the text, and each table (by its
    caption) as rows of cell texts."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.tables, self.style = [], [], {}, ""
        self._table, self._cell, self._in = None, None, []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "wbr", "br", "use", "path", "rect", "stop"):  # elements without content here
            self._in.append(tag)
        if tag == "table":
            self._table = {"caption": "", "rows": []}
        elif tag == "tr":
            self._table["rows"].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if self._in and self._in[-1] == tag:
            self._in.pop()
        if tag in ("td", "th") and self._cell is not None:
            self._table["rows"][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self.tables[self._table["caption"]] = self._table["rows"][1:]  # without the heading row
            self._table = None

    def handle_data(self, data):
        self.text.append(data)
        if self._in and self._in[-1] == "style":
            self.style += data
        elif self._in and self._in[-1] == "caption":
            self._table["caption"] += data
        elif self._cell is not None:
            self._cell.append(data)


def _page(outcomes=OUTCOMES):
    return _Page(report_html(_results(outcomes)))


def test_the_pass_rates_and_the_mistakes_are_inline_svg_figures_that_say_what_they_show():
    text = report_html(_results(OUTCOMES))
    page = _Page(text)
    figures = [attributes for tag, attributes in page.tags if tag == "svg"]
    assert len(figures) == 2 and all(figure["role"] == "img" for figure in figures)
    titles = {attributes.get("id") for tag, attributes in page.tags if tag == "title"}
    assert {figure["aria-labelledby"] for figure in figures} <= titles
    assert "share of the 4 learners who passed, failed" in text
    assert "01.double_grad.in-place: 2 learners" in text  # the mistakes figure's numbers, in its label
    assert "<?xml" not in text and "<!DOCTYPE svg" not in text
    ids = [attributes["id"] for tag, attributes in page.tags if "id" in attributes]
    assert len(ids) == len(set(ids)), "two figures share an id"


def test_nothing_on_the_page_is_fetched_from_elsewhere():
    page = _page()
    addresses = [value for tag, attributes in page.tags for name, value in attributes.items()
                 if name in ("src", "href", "xlink:href", "srcset", "action", "data")]
    addresses += re.findall(r"url\(\s*['\"]?([^)'\"]*)", page.style + str([tag for tag in page.tags]))
    assert addresses, "the page links its sections and figures their glyphs"
    assert not [address for address in addresses if address.startswith(("http:", "https:", "//"))], addresses
    assert not {tag for tag, _ in page.tags} & {"script", "link", "img", "iframe", "object"}


def test_the_summary_counts_the_class_and_its_shares():
    text = " ".join("".join(_page().text).split())
    assert "4 learners, 2 lessons and 5 exercises graded" in text
    assert "Of the 20 results, one per learner and exercise: 55% passed, 25% failed, 10% not attempted, 10% error" \
        in text


def test_the_pass_rate_table_has_each_exercise_s_learners_by_status():
    rows = _page().tables["Pass rates by exercise: learners (share)"]
    by_exercise = {row[0]: row[1:] for row in rows if len(row) == 5}
    assert list(by_exercise) == ["double_grad", "make_scale_hook", "make_clip_hook", "grad_with_temporary_hook",
                                 "HookGroup"]
    assert by_exercise["double_grad"] == ["1 (25%)", "3 (75%)", "0 (0%)", "0 (0%)"]
    assert by_exercise["HookGroup"] == ["2 (50%)", "0 (0%)", "1 (25%)", "1 (25%)"]


def test_mistakes_are_ranked_by_learners_then_id_with_their_exercises_and_what_they_are():
    rows = _page().tables["Named mistakes, the most learners first"]
    assert rows == [["01.double_grad.in-place", "2", "01 double_grad", "doubles the gradient in place"],
                    ["01.make_clip_hook.clipped-by-norm", "2", "01 make_clip_hook", "clips the norm, not each element"],
                    ["01.double_grad.squared-grad", "1", "01 double_grad",
                     "squares the gradient instead of doubling it"]]


def test_runner_outcomes_are_listed_apart_from_what_to_reteach():
    text = report_html(_results(OUTCOMES))
    page = _Page(text)
    runner = page.tables["Runner outcomes, the most learners first"]
    assert [row[0] for row in runner] == ["02.HookGroup.crashed", "02.grad_with_temporary_hook.timed-out"]
    start = text.index('id="mistakes-chart-title"')
    chart = text[start:text.index("</title>", start)]  # what the mistakes figure says it shows
    assert "01.double_grad.in-place" in chart and "crashed" not in chart and "timed-out" not in chart


def test_the_progress_grid_has_a_row_per_learner_and_a_column_per_lesson():
    rows = _page().tables["Progress grid: exercises passed per learner and lesson"]
    passed = {row[0]: [cell.split(" (")[0] for cell in row[1:]] for row in rows}
    assert passed == {"ann & bob": ["1/3", "2/2", "3/5"], "carol": ["2/3", "1/2", "3/5"],
                      "dave": ["1/3", "1/2", "2/5"], "erin": ["3/3", "0/2", "3/5"]}
    assert rows[0][1] == "1/3 (fewer than half passed)"  # the colour's meaning is in words too


def test_code_that_crashed_or_timed_out_is_listed_with_what_happened():
    rows = _page().tables["Crashed, timed out or tampered"]
    assert rows == [["carol", "02 Removing hooks", "HookGroup", "crashed its process", f"the process ended: {ATTACK}"],
                    ["dave", "02 Removing hooks", "grad_with_temporary_hook", "timed out", "hit the 10 s limit"]]


def test_tampering_is_listed_as_such():
    outcomes = {"mallory": {"double_grad": ("error", "01.double_grad.tampered", "replaced the checks")}}
    rows = _page(outcomes).tables["Crashed, timed out or tampered"]
    assert rows == [["mallory", "01 Tensor hooks", "double_grad", "tampered with the grading", "replaced the checks"]]


def test_text_from_the_results_is_escaped():
    text = report_html(_results(OUTCOMES))
    assert "<script" not in text
    assert "the process ended: &lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "ann &amp; bob" in text and "ann & bob" not in text


def test_the_same_results_give_the_same_bytes(tmp_path):
    results = _results(OUTCOMES)
    write_report(results, tmp_path / "first.html")
    write_report(copy.deepcopy(results), tmp_path / "second.html")
    first = (tmp_path / "first.html").read_bytes()
    assert first == (tmp_path / "second.html").read_bytes()
    assert first.decode("utf-8") == report_html(results)


def test_a_class_without_a_mistake_still_renders_and_says_so():
    page = _page({"ann": {}, "bob": {}})
    text = " ".join("".join(page.text).split())
    assert "No named mistake was recognised in this class." in text
    assert "No learner's code crashed, timed out or tampered." in text
    assert sum(tag == "svg" for tag, _ in page.tags) == 1  # the pass rates: all passed
    assert page.tables["Progress grid: exercises passed per learner and lesson"][0][1:] == [
        "3/3 (all passed)", "2/2 (all passed)", "5/5 (all passed)"]


def test_a_class_without_learners_still_renders_and_says_so():
    results = {"format": "hooked-class-results/1", "lessons": LESSONS, "learners": [], "rows": [], "mistakes": {}}
    text = " ".join("".join(_Page(report_html(results)).text).split())
    assert "0 learners, 2 lessons and 5 exercises graded: there is no result to show." in text
    assert "No exercise was graded." in text and "No learner or lesson was graded." in text
