"""The course website in headless Chromium: the home page, every lesson page (stub state)
and every solution page (solved), their figures and downloads, search, the dark palette,
no console errors and no request to other hosts."""

import re

import jupytext
import nbformat
import pytest

from hooked.course import ROOT, SOLUTIONS_DIR, fresh_lesson_text, lesson_named, lesson_names
from hooked.lesson_files.solution_markers import solution_region_lines

MAX_PAGE_BYTES = 1.5e6
SCREENSHOTS = ROOT / "site-screenshots"  # gitignored; CI keeps it
PAGES = [(folder, name) for folder in ("lessons", "solutions") for name in lesson_names()]


def _text(folder, name):
    """What the page must be made of: the solution, or the learner's version the generator
    makes from it (never the working lessons/ file)."""
    if folder == "lessons":
        return fresh_lesson_text(name)
    return (SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8")


def _cells(text):
    return jupytext.reads(text, fmt="py:percent").cells


def _exercises(text):
    """The exercises a lesson checks: the names in its `check(name)` cells."""
    return [cell.source.strip()[len("check("):-1] for cell in _cells(text)
            if cell.cell_type == "code" and re.fullmatch(r"check\(\w+\)", cell.source.strip())]


def _reveals(text):
    """The prediction exercises whose log a `reveal(name)` cell prints once they are right."""
    return [match[1] for match in re.finditer(r"^reveal\((\w+)\)$", text, re.MULTILINE)]


def _draws(text, solved):
    """Whether the page must show a figure: a learner's page draws only in cells that need
    no exercise (a cell `with try_it():` draws once its exercise is solved)."""
    return any("plt." in cell.source and (solved or "try_it()" not in cell.source)
               for cell in _cells(text) if cell.cell_type == "code")


def solution_only_lines(name):
    """The lines of the lesson's solutions that the generator strips: lines inside its
    `# BEGIN SOLUTION` ... `# END SOLUTION` regions that appear nowhere in the learner's version."""
    kept = {line.strip() for line in fresh_lesson_text(name).splitlines()}
    kept |= {line[1:].strip() for line in kept if line.startswith("#")}  # markdown cells, as shown
    region = solution_region_lines((SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8"))
    return [line.strip() for line in region if len(line.strip()) >= 12 and line.strip() not in kept]


def test_home_page_shows_the_readme(visit):
    page = visit.open("")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    heading = readme.splitlines()[0].lstrip("# ").strip()
    assert page.title() == "Hooked"
    assert page.locator("article h1").first.inner_text().strip().rstrip("¶").strip() == heading
    for section in ("Lessons", "Quick start", "Read the course as a website"):
        assert page.locator("article h2", has_text=section).count() == 1, section
    # the README's lesson links lead to the lesson pages
    first = lesson_names()[0]
    assert page.locator(f'article a[href="lessons/{first}/"]').count() >= 1
    visit.check()


@pytest.mark.parametrize("folder, name", PAGES, ids=[f"{folder}/{name}" for folder, name in PAGES])
def test_notebook_page(visit, folder, name):
    text = _text(folder, name)
    page = visit.open(f"{folder}/{name}/")
    word = "Lesson" if folder == "lessons" else "Solution"
    number = name[:2]
    heading = page.locator("article h1").first.inner_text().replace("¶", "").strip()
    short_title = re.sub(r"^Lesson \d+\s*[—:-]\s*", "", heading)
    assert page.title() == f"{word} {number}: {short_title} - Hooked"

    outputs = page.locator(".jp-OutputArea-output")
    assert outputs.count() >= 1 and outputs.first.inner_text().strip(), "no executed output"
    shown = page.locator("article").inner_text()
    exercises = _exercises(text)
    assert exercises, "no check cells"
    for exercise in exercises:
        expected = f"{exercise}: not attempted yet" if folder == "lessons" else f"{exercise}: passed"
        assert expected in shown, f"the check of {exercise} did not print {expected!r}"

    for code in re.findall(r"^def (\w+)\(log\):", text, re.MULTILINE):  # the code a prediction is about
        assert f"def {code}(log):" in shown, f"the page does not show the code of {code}"
    for prediction in _reveals(text):  # the log of a prediction exercise: on the solution page only
        stub = f'raise NotImplementedError("{prediction} is not written yet")'
        assert (stub in shown) == (folder == "lessons"), f"{prediction}: the learner's page shows an empty prediction"
        revealed = "What fires, recorded by running this code on torch" in shown
        assert (f"Not done yet: write your prediction in {prediction}'s cell" in shown) == (folder == "lessons")
        assert revealed == (folder == "solutions"), f"{prediction}: the log shows on the {folder} page: {revealed}"

    figures = page.locator(".jp-OutputArea-output img")
    if _draws(text, solved=folder == "solutions"):
        assert figures.count() >= 1, "the lesson draws, but the page shows no figure"
    for index in range(figures.count()):
        figure = figures.nth(index)
        assert figure.get_attribute("src").startswith("data:image/png;base64,"), "figures are PNG"
        assert figure.evaluate("img => img.complete && img.naturalWidth > 0"), "a figure does not display"

    hints = page.locator("article details.tip")
    if '# %% [markdown] tags=["hints"]' in text:
        assert hints.count() == 3 * len(exercises), "three hints per exercise"
        assert all(not hints.nth(i).evaluate("d => d.open") for i in range(hints.count())), "hints start collapsed"
        assert hints.first.locator("summary").inner_text().startswith("Hint 1 of 3")

    _check_no_answers(visit, page, folder, name)
    _check_downloads(visit, page, text)
    assert visit.weight() <= MAX_PAGE_BYTES, f"page weight {visit.weight()} bytes"
    if folder == "lessons":
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.jpeg"), full_page=True, type="jpeg", quality=70)
    visit.check()


def _download(visit, page, suffix):
    url = page.locator('[data-hooked="downloads"]').locator(f'a[href$="{suffix}"]').evaluate("a => a.href")
    response = visit.context.request.get(url)
    assert response.status == 200, url
    return response.text()


def _check_no_answers(visit, page, folder, name):
    """A lesson page and its downloads hold none of the lines the generator strips from the
    solution; the solution page holds every one of them (so the lines are the right ones)."""
    answers = solution_only_lines(name)
    assert answers, f"solutions/{name}.py: no solution line that its lesson lacks"
    shown = {line.strip() for line in page.locator("article").inner_text().splitlines()}
    for text in (_download(visit, page, ".py"),
                 "\n".join(cell.source for cell in nbformat.reads(_download(visit, page, ".ipynb"), 4).cells)):
        shown |= {line.strip() for line in text.splitlines()}
    if folder == "lessons":
        leaked = [line for line in answers if line in shown]
        assert not leaked, f"the lesson page or its downloads show solution lines: {leaked[:5]}"
    else:
        missing = [line for line in answers if line not in shown]
        assert not missing, f"the solution page lacks solution lines: {missing[:5]}"


def _check_downloads(visit, page, text):
    notebook = nbformat.reads(_download(visit, page, ".ipynb"), as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    assert [cell.source for cell in notebook.cells] == [cell.source for cell in _cells(text)]
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "unexecuted"
    tags = {tag for cell in notebook.cells for tag in cell.metadata.get("tags", [])}
    assert "exercise" in tags, "the exercise tags survive, so the grader finds the exercise cells"
    assert _download(visit, page, ".py") == text


def test_lesson_pages_link_to_their_solution_and_back(visit):
    name = lesson_names()[0]
    page = visit.open(f"lessons/{name}/")
    page.locator(".hooked-solution-link a").click()
    page.wait_for_url(f"**/solutions/{name}/")
    page.locator('[data-hooked="downloads"] a', has_text="Back to the lesson").click()
    page.wait_for_url(f"**/lessons/{name}/")
    visit.check()


def test_search_finds_register_full_backward_hook(visit):
    page = visit.open("")
    search = page.locator(".md-search__input")
    search.click()
    search.press_sequentially("register_full_backward_hook", delay=10)  # as a person types
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15000)
    assert "register_full_backward_hook" in page.locator(".md-search-result").inner_text()
    links = [results.nth(i).locator("a").first.get_attribute("href") for i in range(results.count())]
    assert not any("solutions/" in link for link in links), f"search shows the solutions: {links}"
    visit.check()


@pytest.mark.parametrize("path", ["", f"lessons/{lesson_names()[0]}/"])
def test_the_search_index_loads_when_search_is_first_used(visit, path):
    """Every page fetched search's index as it loaded (110 KB gzipped, 42-59% of its weight):
    now only once search is used, here by its "/" key; then search works as before."""
    asked = []
    visit.page.on("request", lambda request: request.url.endswith("/search/search_index.json") and asked.append(1))
    page = visit.open(path, every_cell=False)
    page.wait_for_load_state("networkidle")
    assert asked == [], "the search index was fetched before search was used"
    page.keyboard.press("/")
    search = page.locator(".md-search__input")
    assert search.evaluate("input => input === document.activeElement")
    search.press_sequentially("register_forward_pre_hook", delay=10)
    page.locator(".md-search-result__item").first.wait_for(timeout=15000)
    assert "register_forward_pre_hook" in page.locator(".md-search-result").inner_text()
    assert asked == [1]
    visit.check()


@pytest.mark.parametrize("path", ["", f"lessons/{lesson_names()[0]}/"])
def test_palette_toggle_switches_to_dark(visit, path):
    page = visit.open(path)
    body = page.locator("body")
    assert body.get_attribute("data-md-color-scheme") == "default"
    page.locator('label[title="Switch to dark mode"]').click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'")
    background = page.evaluate("getComputedStyle(document.querySelector('.md-main')).backgroundColor")
    assert _brightness(background) < 0.3, background
    if path:  # notebook cells follow the dark palette too
        cell = page.evaluate("getComputedStyle(document.querySelector('.jp-InputArea-editor')).backgroundColor")
        assert _brightness(cell) < 0.3, cell
    page.locator('label[title="Switch to light mode"]').click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'default'")
    visit.check()


def _brightness(css_color):
    """0 (black) .. 1 (white) for 'rgb(r, g, b)' or 'rgba(r, g, b, a)'; a transparent colour
    counts as the page behind it, which the caller checks separately."""
    values = [float(v) for v in re.findall(r"[\d.]+", css_color)]
    if len(values) == 4 and values[3] == 0:
        return 0.0
    return sum(values[:3]) / (3 * 255)


def test_cheat_sheet_links_the_lessons_that_exist(visit):
    page = visit.open("cheatsheet/")
    rows = page.locator("article table tbody tr")
    assert rows.count() >= 30
    linked = page.locator('article table a[href^="../lessons/"]')
    assert linked.count() >= 1
    for index in range(linked.count()):
        href = linked.nth(index).get_attribute("href")
        assert href.split("/")[2] in lesson_names(), href
    visit.check()


def test_site_needs_no_other_host(site_dir):
    """No page references a script, stylesheet, image or font on another host."""
    for path in site_dir.rglob("*.html"):
        tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", path.read_text(encoding="utf-8"))
        remote = [tag for tag in tags if re.search(r'(?:src|href)="(?:https?:)?//', tag) and 'rel="canonical"' not in tag]
        assert not remote, f"{path.relative_to(site_dir)} loads {remote}"


@pytest.mark.parametrize("folder, name", PAGES)
def test_each_exercise_heading_shows_its_level_and_time_under_an_anchor_without_them(site_dir, folder, name):
    """The heading reads "Exercise 1: double_grad · easy · about 5 min", in the page and in its
    table of contents; its id stays "exercise-1-double_grad", so that a link to an exercise
    still lands when its estimate changes."""
    html = (site_dir / folder / name / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r'<h2 id="(exercise-[^"]+)">(.*?)<a class="anchor-link" href="#([^"]+)">', html)
    exercises = lesson_named(name).exercises
    assert len(headings) == len(exercises), [heading[0] for heading in headings]
    for number, (exercise, (anchor, inner, link)) in enumerate(zip(exercises, headings), 1):
        text = re.sub(r"<[^>]+>", "", inner).strip()
        assert text == f"Exercise {number}: {exercise.name} · {exercise.level} · about {exercise.minutes} min", text
        assert anchor == link == f"exercise-{number}-{exercise.name.lower()}"
        assert f'href="#{anchor}"' in html.split('<div class="md-content"', 1)[0], f"the contents lack #{anchor}"


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_link_to_a_heading_deep_in_a_lesson_lands_on_it(open_tab, site_dir, width, height):
    """Code cells off the screen are laid out only near it (content-visibility), at an estimated
    height: the page must lay out the cells above a linked heading before it goes there, on
    arrival (a search result, a link from elsewhere) and on a jump within the page (a link in
    it, a heading's ¶). The headings: each exercise's and every other one, the last left out (it
    may be too near the page's end to reach the top of the window)."""
    tab = open_tab(width=width, height=height)
    missed = []
    for name in lesson_names():
        html = (site_dir / "lessons" / name / "index.html").read_text(encoding="utf-8")
        ids = re.findall(r'<h[23] id="([^"]+)"', html)[1:-1]
        anchors = [i for i in ids if i.startswith("exercise-")] + [i for i in ids[::2] if not i.startswith("exercise-")]
        tab.page.goto("about:blank")  # a page load, not a jump within the page open before
        page = tab.open(f"lessons/{name}/#{anchors[0]}", every_cell=False)
        for number, anchor in enumerate(anchors):
            if number:
                page.evaluate("id => { location.hash = id; }", anchor)
            page.wait_for_timeout(400)  # cells near the screen render; the page settles
            top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", anchor)
            header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().bottom")
            if not header <= top <= header + 120:
                how = "on arrival" if not number else "on a jump"
                missed.append(f"{name}#{anchor} {how}: its top at {top:.0f} px (the header ends at {header:.0f})")
    tab.check()
    assert not missed, "links that land elsewhere than their heading:\n" + "\n".join(missed)


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_lesson_page_keeps_its_height_as_its_cells_render(open_tab, width, height):
    """Code cells off the screen hold the place of an estimated height until the reader nears
    them: the page (and the scrollbar's thumb) must not grow or shrink by more than a tenth
    as they render."""
    tab = open_tab(width=width, height=height)
    changed = []
    for name in lesson_names():
        tab.page.goto("about:blank")
        page = tab.open(f"lessons/{name}/", every_cell=False)
        estimated = page.evaluate("document.documentElement.scrollHeight")
        page.add_style_tag(content=".jupyter-wrapper .jp-Cell { content-visibility: visible !important; }")
        rendered = page.evaluate("document.documentElement.scrollHeight")
        if abs(estimated - rendered) > rendered / 10:
            changed.append(f"{name}: {estimated} px on arrival, {rendered} px with every cell rendered")
    tab.check()
    assert not changed, "\n".join(changed)
