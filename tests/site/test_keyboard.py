"""The site with a keyboard: every tab stop shows where the focus is and lies on the screen.

Lesson 01's first 60 tab stops, on a desktop and on a phone, in both palettes. Before the
course's focus ring outweighed the notebook stylesheet's ".jupyter-wrapper :focus { outline:
unset }", 17 of them showed no focus at 1,280 px; on a phone, 48 were links of the closed side
menu, off the screen."""

import pytest

from hooked.course import lesson_names

STOPS = 60

# The focused element: [a short description, whether it shows the focus (an outline or a box
# shadow), whether it lies within the viewport, once the browser has scrolled it into view].
FOCUSED = """() => {
    // Material's palette switch is a pair of radio buttons of no size, one label shown: the
    // label shows the focus
    const focused = document.activeElement;
    const element = focused.matches('.md-option')
        ? focused.closest('form').querySelector('label:not([hidden])') : focused;
    const style = getComputedStyle(element);
    const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0)
                 || style.boxShadow !== 'none';
    const box = element.getBoundingClientRect();
    const inside = box.width > 0 && box.height > 0 && box.right > 0 && box.bottom > 0
                   && box.left < innerWidth && box.top < innerHeight
                   && getComputedStyle(element).visibility !== 'hidden';
    focused.dataset.hookedStop ||= String(document.querySelectorAll('[data-hooked-stop]').length);  // which element
    const name = focused.dataset.hookedStop + ' ' + focused.tagName.toLowerCase() + (focused.className && typeof focused.className === 'string'
        ? '.' + focused.className.trim().split(/\\s+/).join('.') : '')
        + ' "' + (focused.textContent || '').trim().slice(0, 30) + '"';
    return [name, ring, inside];
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_every_tab_stop_shows_the_focus_on_the_screen(open_tab, scheme, width, height):
    tab = open_tab(scheme=scheme, width=width, height=height)
    page = tab.open(f"lessons/{lesson_names()[0]}/")
    unseen, away, stops = [], [], []
    for _ in range(STOPS):
        page.keyboard.press("Tab")
        name, ring, inside = page.evaluate(FOCUSED)
        stops.append(name)
        if not ring:
            unseen.append(name)
        if not inside:
            away.append(name)
    assert len(set(stops)) > STOPS // 2, f"the focus did not move through the page: {stops[:10]}"
    assert (unseen, away) == ([], []), (f"of {STOPS} tab stops, {len(unseen)} show no focus: {unseen[:6]}; "
                                        f"{len(away)} are off the screen: {away[:6]}")
    tab.check()


def test_cell_inputs_are_not_tab_stops(open_tab):
    """A cell's input is no tab stop (nbconvert made each one, 67 on lesson 01): a markdown cell
    is text, and a code cell's code region, which scrolls, is a tab stop of its own."""
    tab = open_tab()
    page = tab.open(f"lessons/{lesson_names()[0]}/")
    assert page.locator(".jp-Cell-inputWrapper[tabindex]").count() == 0
    assert page.locator(".jp-CodeCell .highlight-ipynb[tabindex='0']").count() > 0
    tab.check()


def test_the_closed_side_menu_is_out_of_the_tab_order_on_a_phone(open_tab):
    """Closed, the drawer takes no focus; opened (its button in the header), its links do."""
    tab = open_tab(width=390, height=844)
    page = tab.open(f"lessons/{lesson_names()[0]}/")
    link = page.locator(".md-sidebar--primary .md-nav__link").first
    assert not link.is_visible()
    page.locator("label.md-header__button[for='__drawer']").click()
    link.wait_for(state="visible")
    page.wait_for_timeout(300)
    assert link.evaluate("a => a.getBoundingClientRect().left >= 0")
    tab.check()


# A notebook's elements made tab stops (code regions, outputs, copy buttons) with nothing in
# them or no size: a keyboard user can do nothing there. (Its links, which show only while
# focused, are the tab-through's.)
EMPTY_STOPS = """() => Array.from(document.querySelectorAll('.jupyter-wrapper [tabindex]:not([tabindex^="-"])'))
    .filter(stop => {
        const box = stop.getBoundingClientRect();
        return box.width === 0 || box.height === 0 || (!stop.textContent.trim() && !stop.querySelector('img, svg'));
    })
    .map(stop => stop.tagName.toLowerCase() + '.' + String(stop.className).trim().split(/\\s+/).join('.')
                 + ' after "' + (stop.parentElement.previousElementSibling || stop.parentElement).textContent.trim().slice(-40) + '"')"""


@pytest.mark.parametrize("folder", ["lessons", "solutions"])
def test_no_notebook_tab_stop_is_empty(open_tab, folder):
    """An output with nothing in it was a tab stop of no size, off the screen when focused
    (nbconvert makes every output a tab stop, so that it can scroll): lesson 01's "check" cell
    printed its feedback as two outputs, the second a bare newline, when the build was busy."""
    tab = open_tab(width=390, height=844)
    empty = []
    for name in lesson_names():
        page = tab.open(f"{folder}/{name}/")
        # every page has outputs (an output is a tab stop only while it scrolls: not counted here)
        assert page.locator(".jupyter-wrapper .jp-OutputArea-output").count() > 0
        empty += [f"{name}: {stop}" for stop in page.evaluate(EMPTY_STOPS)]
    assert empty == [], f"{len(empty)} empty tab stops:\n" + "\n".join(empty)
    tab.check()


# The focused element if it is a notebook output: [a short description, whether it scrolls
# (sideways, or down)]; else null.
FOCUSED_OUTPUT = """() => {
    const focused = document.activeElement;
    if (!focused.matches('.jupyter-wrapper .jp-OutputArea-output')) return null;
    return ['output "' + focused.textContent.trim().slice(0, 40) + '" (' + focused.scrollWidth + ' px in '
            + focused.clientWidth + ')',
            focused.scrollWidth > focused.clientWidth || focused.scrollHeight > focused.clientHeight];
}"""


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_no_tab_stop_is_an_output_that_does_not_scroll(open_tab, width, height):
    """nbconvert makes every output a tab stop, so that a keyboard can scroll it; yet most fit
    their column (a print wraps at spaces), and a Tab press there does nothing for a keyboard
    user (docs/javascripts/hooked.js). Lesson 01's first 60 tab stops."""
    tab = open_tab(width=width, height=height)
    page = tab.open(f"lessons/{lesson_names()[0]}/")
    idle, stops = [], []
    for _ in range(STOPS):
        page.keyboard.press("Tab")
        found = page.evaluate(FOCUSED_OUTPUT)
        stops.append(page.evaluate("() => document.activeElement.tagName"))
        if found and not found[1]:
            idle.append(found[0])
    assert stops.count("BODY") < STOPS // 2, f"the focus did not move through the page: {stops[:10]}"
    assert idle == [], f"of {STOPS} tab stops, {len(idle)} are outputs that do not scroll: {idle[:6]}"
    tab.check()


# Whether each output of the page scrolls (sideways, or down).
SCROLLS = """() => Array.from(document.querySelectorAll('.jupyter-wrapper .jp-OutputArea-output'))
    .map(output => output.scrollWidth > output.clientWidth || output.scrollHeight > output.clientHeight)"""
WIDE_PAGE = "lessons/02_removing_hooks/"  # its hook table is wider than a phone, narrower than 1,280 px


def test_an_output_is_a_tab_stop_while_it_scrolls_and_the_window_is_resized(open_tab):
    """An output whose token is wider than a phone scrolls there and is a tab stop; at 1,280 px
    it fits and is none; back at 390 px, a tab stop again."""
    tab = open_tab(width=390, height=844)
    page = tab.open(WIDE_PAGE)
    wide = page.evaluate(SCROLLS).index(True)  # (ValueError: no output scrolls on a phone here)
    output = page.locator(".jupyter-wrapper .jp-OutputArea-output").nth(wide)
    output.scroll_into_view_if_needed()
    for width, scrolls in [(390, True), (1280, False), (390, True)]:
        page.set_viewport_size({"width": width, "height": 844})
        page.wait_for_timeout(300)
        assert page.evaluate(SCROLLS)[wide] is scrolls
        assert (output.get_attribute("tabindex") == "0") is scrolls, \
            f"at {width} px, output {wide} {'scrolls' if scrolls else 'fits'}: tabindex={output.get_attribute('tabindex')}"
    tab.check()
