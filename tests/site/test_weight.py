"""Weight and speed: what a page costs a phone. Every kind of page weighs at most 500 KiB
gzipped (as GitHub Pages serves it), with everything it loads and the search index; the
notebook stylesheet, cut to what the pages use (website/notebook_stylesheet.py), styles every
element of every notebook page as JupyterLab's whole stylesheet does; search leaves code and
outputs out. (benchmarks/lighthouse.py gives Lighthouse's scores; it is not a test.)"""

import gzip
import json
import urllib.parse

import jupytext
import pytest

from hooked.course import lessons

MAX_GZIPPED = 500 * 1024
OTHER_PAGES = {"home": "", "cheat sheet": "cheatsheet/", "grading": "grading/", "authors": "authors/"}
NOTEBOOK_PAGES = {f"{folder}/{lesson.name}": f"{folder}/{lesson.name}/"
                  for folder in ("lessons", "solutions") for lesson in lessons()}
SEARCH_INDEX = "search/search_index.json"
TEXT = (".html", ".css", ".js", ".json", ".svg")  # what a static host gzips


def _gzipped_size(path):
    data = path.read_bytes()
    return len(gzip.compress(data, compresslevel=6)) if path.suffix in TEXT else len(data)


@pytest.mark.parametrize("kind", {**OTHER_PAGES, **NOTEBOOK_PAGES})
def test_a_page_weighs_at_most_500_kib_gzipped(open_tab, site_dir, kind):
    """Everything the browser fetched for the page (its HTML, with the figures inlined, its
    stylesheets, scripts, images, and the search index its search worker loads once search is
    used, here by its "/" key), each file gzipped as a static host sends it."""
    tab = open_tab()
    fetched = set()
    tab.context.on("request", lambda request: fetched.add(urllib.parse.urlsplit(request.url).path))
    page = tab.open({**OTHER_PAGES, **NOTEBOOK_PAGES}[kind])
    page.wait_for_load_state("networkidle")
    with page.expect_response(lambda response: response.url.endswith("/" + SEARCH_INDEX)):
        page.keyboard.press("/")
    page.wait_for_load_state("networkidle")
    files = {site_dir / path.lstrip("/") for path in fetched}
    files = {file / "index.html" if file.is_dir() else file for file in files}
    assert site_dir / SEARCH_INDEX in files, f"the search index was not fetched: {sorted(fetched)}"
    assert all(file.is_file() for file in files), sorted(fetched)
    weights = {file.relative_to(site_dir).as_posix(): _gzipped_size(file) for file in files}
    heaviest = sorted(weights.items(), key=lambda item: -item[1])[:4]
    assert sum(weights.values()) <= MAX_GZIPPED, \
        f"{sum(weights.values()) / 1024:.0f} KiB gzipped; the heaviest files: {heaviest}"
    tab.check()


# The computed style of one element of each kind ({its tag, classes and those of its ancestors,
# whether it has siblings: style}), pseudo-elements with content included; custom properties
# left out (the cut stylesheet drops those nothing uses).
COMPUTED_STYLES = """() => {
    const kind = element => { const parts = [];
        for (let node = element; node; node = node.parentElement)
            parts.push(node.tagName + '.' + Array.from(node.classList).sort().join('.'));
        return parts.join('<') + ':' + !!element.previousElementSibling + !!element.nextElementSibling; };
    const style = (element, pseudo) => { const computed = getComputedStyle(element, pseudo), out = [];
        for (let i = 0; i < computed.length; i++)
            if (!computed[i].startsWith('--')) out.push(computed[i] + ': ' + computed.getPropertyValue(computed[i]));
        return out.join('; '); };
    const styles = {};
    for (const element of document.querySelectorAll('article, article *')) {
        const key = kind(element);
        if (key in styles) continue;
        styles[key] = [null, '::before', '::after']
            .filter(pseudo => !pseudo || !['none', 'normal'].includes(getComputedStyle(element, pseudo).content))
            .map(pseudo => (pseudo || '') + ' ' + style(element, pseudo)).join(' | ');
    }
    return styles;
}"""


def _serving(css):
    return lambda route: route.fulfill(body=css, content_type="text/css")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("kind", NOTEBOOK_PAGES)
def test_the_cut_notebook_stylesheet_styles_the_page_as_the_whole_one(open_tab, hooks, site_dir, kind, scheme):
    cut = (site_dir / hooks.NOTEBOOK_CSS).read_text(encoding="utf-8")
    whole = hooks._notebook_css()
    assert len(cut) < len(whole) / 10, "the stylesheet was not cut"
    styles = {}
    for name, stylesheet in (("cut", cut), ("whole", whole)):
        tab = open_tab(scheme=scheme)
        tab.context.route(f"**/{hooks.NOTEBOOK_CSS}", _serving(stylesheet))
        page = tab.open(NOTEBOOK_PAGES[kind])
        styles[name] = page.evaluate(COMPUTED_STYLES)
        tab.check()
    assert len(styles["whole"]) >= 50 and styles["cut"].keys() == styles["whole"].keys()
    differ = {key: sorted(set(styles["whole"][key].split("; ")) - set(styles["cut"][key].split("; ")))
              for key in styles["whole"] if styles["whole"][key] != styles["cut"][key]}
    assert not differ, json.dumps(dict(list(differ.items())[:3]), indent=1)


def test_search_finds_the_lessons_text_but_not_their_code_or_outputs(site_dir):
    docs = json.loads((site_dir / SEARCH_INDEX).read_text(encoding="utf-8"))["docs"]
    for lesson in lessons():
        texts = [doc["text"] for doc in docs if doc["location"].startswith(f"lessons/{lesson.name}/")]
        assert texts, f"search does not find lesson {lesson.name}"
        indexed = "\n".join(texts)
        cells = jupytext.read(lesson.solution_path).cells
        prose = " ".join(" ".join(cell.source.split()) for cell in cells if cell.cell_type == "markdown")
        code_only = [line.strip() for cell in cells if cell.cell_type == "code" for line in cell.source.splitlines()
                     if len(line.strip()) >= 30 and " ".join(line.split()) not in prose]
        assert code_only, lesson.name
        found = [line for line in code_only if line in indexed]
        assert not found, f"search holds code of {lesson.name}: {found[:3]}"
        for exercise in lesson.exercises:  # what the page's check cells print
            assert f"{exercise.name}: not attempted yet" not in indexed, exercise.name
            # but a learner who searches for an exercise by its name finds it (its heading)
            assert exercise.name in indexed, f"search does not find the exercise {exercise.name}"
