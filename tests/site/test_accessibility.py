"""Accessibility: axe-core (npm, pinned in tests/site/package.json; .ci/run installs it with
`npm ci`) runs inside each kind of page in headless Chromium, in the light and the dark colour
scheme, and finds no serious or critical violation."""

import json
import pathlib
import re

import pytest

from hooked.course import SOLUTIONS_DIR, lesson_names

AXE = pathlib.Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
FIRST = lesson_names()[0]
KINDS = {"home": "", "cheat sheet": "cheatsheet/", "grading": "grading/", "authors": "authors/"}
KINDS.update({f"{folder}/{name}": f"{folder}/{name}/" for folder in ("lessons", "solutions") for name in lesson_names()})
NBCONVERT_ALT = "No description has been provided for this image"


def axe_violations(page):
    """[(rule id, impact, help, [the first nodes' selectors], node count)] of axe's violations."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `npm ci --prefix tests/site` (.ci/run does)")
    page.add_script_tag(path=str(AXE))  # on a page opened by Visit.open: every cell rendered
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [(rule["id"], rule["impact"], rule["help"], [node["target"] for node in rule["nodes"][:3]],
             len(rule["nodes"])) for rule in results["violations"]]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("kind", KINDS)
def test_no_serious_or_critical_axe_violation(open_tab, kind, scheme):
    tab = open_tab(scheme=scheme)
    page = tab.open(KINDS[kind])
    expected = "slate" if scheme == "dark" else "default"
    assert page.locator("body").get_attribute("data-md-color-scheme") == expected
    serious = [violation for violation in axe_violations(page) if violation[1] in ("serious", "critical")]
    assert not serious, json.dumps(serious, indent=1)
    tab.check()


@pytest.mark.parametrize("folder", ["lessons", "solutions"])
def test_every_figure_says_what_it_shows(visit, folder):
    """A figure's alt text is its titles and axis labels (website/figure_text.py), and the
    image has its width and height, so the page does not move while it loads."""
    found = 0
    for name in lesson_names():
        source = (SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8")
        titles = re.findall(r'(?:set_title|suptitle)\("([^"{}\\]+)"', source)  # the literal ones
        page = visit.open(f"{folder}/{name}/")
        figures = page.locator(".jp-OutputArea-output img")
        alts = [figures.nth(i).get_attribute("alt") for i in range(figures.count())]
        for index, alt in enumerate(alts):
            assert alt and alt != NBCONVERT_ALT, f"{name}: figure {index} has no alt text of its own"
            assert figures.nth(index).get_attribute("width") and figures.nth(index).get_attribute("height")
        if folder == "solutions":  # a solved lesson draws every figure
            for title in titles:
                assert any(title in alt for alt in alts), f"{name}: no figure's alt text has the title {title!r}"
        found += len(alts)
    assert found >= 10, "the lessons draw figures"
    visit.check()


def test_hints_show_a_focus_ring(visit):
    page = visit.open(f"lessons/{FIRST}/")
    summary = page.locator("article details.tip > summary").first
    page.keyboard.press("Tab")  # keyboard use: the browser shows focus rings from now on
    summary.focus()
    ring = summary.evaluate("""s => { const style = getComputedStyle(s);
        return [s.matches(':focus-visible'), style.outlineStyle, parseFloat(style.outlineWidth)]; }""")
    assert ring[0] and ring[1] == "solid" and ring[2] >= 2, ring
    visit.check()


def test_skip_to_content_lands_before_the_download_bar(visit):
    page = visit.open(f"lessons/{FIRST}/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('md-skip')")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # the next stop is the bar's first link: the bar was not skipped
    assert page.evaluate("document.activeElement.closest('[data-hooked=downloads]') !== null"), \
        page.evaluate("document.activeElement.outerHTML")
    visit.check()


def test_code_regions_take_the_keyboard_focus(visit):
    page = visit.open(f"lessons/{FIRST}/")
    inputs = page.locator(".highlight-ipynb")
    assert inputs.count() >= 10
    assert all(inputs.nth(i).get_attribute("tabindex") == "0" for i in range(inputs.count()))
    visit.check()
