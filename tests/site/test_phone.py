"""The site on a 390 px phone: no prompt column, code scrolls sideways, text outputs wrap at
spaces (never inside a word), figures fit the column (a button shows one at full size),
identifiers in the home page's and the cheat sheet's tables break only after a "." or "_"."""

import pytest

from hooked.course import lesson_names

PHONE = {"width": 390, "height": 844}

# [(the text around it, the element's selector)] for each place where a line wraps between two
# word characters (letters, digits, "_") of one text node: a word broken inside an identifier.
BROKEN_WORDS = """selector => {
    const broken = [];
    for (const element of document.querySelectorAll(selector)) {
        const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const text = node.textContent;
            if (!/\\w\\w/.test(text)) continue;
            const range = document.createRange();
            const top = index => { range.setStart(node, index); range.setEnd(node, index + 1);
                                   const rect = range.getBoundingClientRect(); return rect.top; };
            let previous = null;
            for (let i = 0; i < text.length; i++) {
                if (!/\\w/.test(text[i])) { previous = null; continue; }
                const here = top(i);
                if (previous !== null && here > previous + 2)
                    broken.push([text.slice(Math.max(0, i - 12), i) + "|" + text.slice(i, i + 12), selector]);
                previous = here;
            }
        }
    }
    return broken.slice(0, 10);
}"""


@pytest.mark.parametrize("path", [f"lessons/{lesson_names()[0]}/", f"solutions/{lesson_names()[-1]}/",
                                  "lessons/06_cnn_activations/"])
def test_a_notebook_page_on_a_phone(open_tab, path):
    tab = open_tab(**PHONE)
    page = tab.open(path)
    prompts = page.evaluate("""() => Array.from(document.querySelectorAll('.jp-InputPrompt, .jp-OutputPrompt'))
        .filter(prompt => prompt.getBoundingClientRect().width > 0).length""")
    assert prompts == 0, f"{prompts} prompts take a column"
    # the code starts at the cell's left edge (the prompt took 64 px of 390)
    indent = page.evaluate("""() => { const cell = document.querySelector('.jp-CodeCell');
        return cell.querySelector('.highlight-ipynb').getBoundingClientRect().left - cell.getBoundingClientRect().left; }""")
    assert indent < 16, f"the code starts {indent} px into its cell"
    for selector in (".highlight-ipynb pre", ".jp-OutputArea-output pre"):
        assert page.evaluate(BROKEN_WORDS, selector) == [], selector
    wraps = page.evaluate("""() => Array.from(document.querySelectorAll('.jp-OutputArea-output pre')).some(pre => {
        const wrapped = pre.getBoundingClientRect().height;
        pre.style.whiteSpace = 'pre'; pre.style.overflowX = 'visible';
        const unwrapped = pre.getBoundingClientRect().height;
        pre.style.whiteSpace = pre.style.overflowX = '';
        return wrapped > unwrapped + 2; })""")
    assert wraps, "no output wraps on the phone: the test would not see a broken word"
    # the page itself does not scroll sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    tab.check()


# The code in a table that takes more than one line: where it wraps, the test can see a break.
WRAPPED_CODE = """selector => Array.from(document.querySelectorAll(selector))
    .filter(code => new Set(Array.from(code.getClientRects(), rect => Math.round(rect.top))).size > 1).length"""


@pytest.mark.parametrize("path, width", [("", 390), ("", 1280), ("cheatsheet/", 390), ("cheatsheet/", 1280)])
def test_identifiers_in_tables_break_only_after_a_dot_or_underscore(open_tab, path, width):
    """The home page's lessons and the cheat sheet: an identifier wraps after a "." or "_" (a
    <wbr>, a text node's end, which BROKEN_WORDS does not look across), never inside a word
    ("Tensor.regi|ster_hook" on a phone, "m.register_forward_pr|e_hook" at 1,280 px)."""
    tab = open_tab(width=width, height=844)
    page = tab.open(path)
    assert page.locator(".md-typeset td code").count() >= 30
    assert page.evaluate(BROKEN_WORDS, ".md-typeset td code") == []
    assert page.evaluate(WRAPPED_CODE, ".md-typeset td code") > 0, "no code wraps: the test would see no break"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    tab.check()


# The text outputs wider than their box ([the start of its text, scrollWidth, clientWidth]).
WIDE_OUTPUTS = """() => Array.from(document.querySelectorAll('.jp-OutputArea-output pre'))
    .filter(pre => pre.scrollWidth > pre.clientWidth)
    .map(pre => [pre.textContent.slice(0, 60), pre.scrollWidth, pre.clientWidth])"""
TEXT_OUTPUT_PAGES = ["lessons/01_tensor_hooks/", "lessons/06_cnn_activations/",
                     "lessons/13_distributed_hooks/", "solutions/06_cnn_activations/"]


@pytest.mark.parametrize("path", TEXT_OUTPUT_PAGES)
def test_text_outputs_wrap_on_a_phone(open_tab, path):
    """Prints and the grader's feedback wrap at spaces: none scrolls sideways at 390 px (28 of
    lesson 01's 29 did; the grader's "not attempted yet" was 1,511 px wide in a 313 px box)."""
    tab = open_tab(**PHONE)
    page = tab.open(path)
    assert page.locator(".jp-OutputArea-output pre").count() > 0
    wide, count = page.evaluate(WIDE_OUTPUTS), page.locator(".jp-OutputArea-output pre").count()
    assert wide == [], f"{len(wide)} of {count} text outputs scroll sideways: {wide[:4]}"
    assert page.evaluate(BROKEN_WORDS, ".jp-OutputArea-output pre") == []
    tab.check()


@pytest.mark.parametrize("path", ["lessons/06_cnn_activations/", "solutions/06_cnn_activations/"])
def test_figures_fit_the_column_on_a_phone(open_tab, path):
    """Each figure is as wide as its column at most (lesson 06's feature maps were 473 px, cut),
    keeps its alt text, and its button shows it at full size and back."""
    tab = open_tab(**PHONE)
    page = tab.open(path)
    figures = page.locator(".jp-OutputArea-output img")
    assert figures.count() > 0
    for index in range(figures.count()):
        width, column, alt = figures.nth(index).evaluate("""img => [img.getBoundingClientRect().width,
            img.closest('.jp-OutputArea-output').clientWidth, img.alt]""")
        assert width <= column, f"figure {index} is {width} px wide in a {column} px column"
        assert alt and "No description" not in alt
    wide = page.locator(".hooked-zoom").first
    natural = wide.evaluate("button => button.querySelector('img').naturalWidth")
    wide.focus()
    page.keyboard.press("Enter")
    assert wide.get_attribute("aria-pressed") == "true"
    assert wide.evaluate("button => button.querySelector('img').getBoundingClientRect().width") == natural
    page.keyboard.press("Enter")
    assert wide.get_attribute("aria-pressed") == "false"
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    tab.check()


# The home page's lessons table: (its height, the height of the same cells' text set one under
# the other in the table's column, at the cells' font size and without their padding; how many
# px its cells and the table reach past the column or need to scroll).
LESSONS_TABLE = """() => {
    const table = Array.from(document.querySelectorAll('.md-typeset table'))
        .find(table => table.querySelector('th') && table.querySelector('th').textContent.trim() === '#');
    const column = document.querySelector('.md-content__inner').getBoundingClientRect();
    const text = document.createElement('div');
    text.style.cssText = `width: ${column.width}px; font-size: ${getComputedStyle(table.querySelector('td')).fontSize}`;
    for (const cell of table.querySelectorAll('td')) text.appendChild(document.createElement('div')).textContent = cell.textContent;
    document.querySelector('.md-content__inner').appendChild(text);
    const textHeight = text.getBoundingClientRect().height;
    text.remove();
    const past = Array.from(table.querySelectorAll('td')).concat([table]).map(element =>
        Math.max(element.getBoundingClientRect().right - column.right, element.scrollWidth - element.clientWidth));
    return [table.getBoundingClientRect().height, textHeight, Math.max(...past), table.querySelectorAll('td').length];
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_home_pages_lessons_table_is_cards_on_a_phone(open_tab, scheme):
    """At 390 px the lessons table reads as cards, one a lesson, each cell on the column's whole
    width: the table is at most 1.25 times as tall as its text set in the column (the rest is each
    card's frame and each cell's label). It was 9,644 px, four narrow columns, the Exercises one
    cut. To a screen reader it stays a table of 4 columns and a row a lesson."""
    tab = open_tab(scheme=scheme, **PHONE)
    page = tab.open("")
    height, text_height, past, cells = page.evaluate(LESSONS_TABLE)
    assert cells == 4 * len(lesson_names())
    assert past <= 1, f"a cell or the table reaches {past} px past the column or scrolls"
    assert height <= 1.25 * text_height, f"the table is {height:.0f} px tall, its text {text_height:.0f} px"
    roles = [node["role"]["value"] for node in
             tab.context.new_cdp_session(page).send("Accessibility.getFullAXTree")["nodes"] if "role" in node]
    assert roles.count("table") >= 1 and roles.count("columnheader") >= 4
    assert roles.count("cell") >= 4 * len(lesson_names()), "the cards are no table to a screen reader"
    tab.check()


def test_the_home_pages_lessons_table_is_a_table_on_a_wide_screen(open_tab):
    """Cards are for phones: at 1,280 px the lessons are a table's rows, four cells side by side."""
    page = open_tab(width=1280, height=900).open("")
    tops = page.evaluate("""() => Array.from(document.querySelector('.md-typeset table tbody tr').cells,
        cell => Math.round(cell.getBoundingClientRect().top))""")
    assert len(tops) == 4 and len(set(tops)) == 1, tops
