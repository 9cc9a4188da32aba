"""What a reader sees of the built pages' text: Markdown fully rendered, no code mark (a
backtick) left in the text, as a code span nested in another one leaves it."""

from html.parser import HTMLParser

# Text inside these elements is code or not shown as text: a backtick there is the code's own.
CODE_ELEMENTS = {"code", "pre", "kbd", "samp", "script", "style", "textarea"}
# A notebook cell's source again, hidden, for its copy button (clipboard-copy-txt).
CODE_CLASSES = {"clipboard-copy-txt"}


class _StrayBackticks(HTMLParser):
    """Collects the text around each backtick outside the code of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.code = None  # [tag, depth] of the code element the parser is in
        self.found = []

    def handle_starttag(self, tag, attrs):
        if self.code is None:
            classes = set((dict(attrs).get("class") or "").split())
            if tag in CODE_ELEMENTS or classes & CODE_CLASSES:
                self.code = [tag, 1]
        elif tag == self.code[0]:
            self.code[1] += 1  # the same tag nested: its end is not the code's end

    def handle_endtag(self, tag):
        if self.code is not None and tag == self.code[0]:
            self.code[1] -= 1
            if self.code[1] == 0:
                self.code = None

    def handle_data(self, data):
        if self.code is None and "`" in data:
            self.found.append(" ".join(data.split())[:120])


def stray_backticks(html):
    parser = _StrayBackticks()
    parser.feed(html)
    parser.close()
    return parser.found


def test_stray_backticks_finds_one_outside_code_and_none_inside():
    broken = "<td><code>hook(optimizer)</code> for <code>opt.</code>step()`</td>"  # what nested spans made
    assert stray_backticks(broken) == ["step()`"]
    assert stray_backticks("<p>a <code>`x`</code> and <pre><code>s = `y`</code></pre> <kbd>`</kbd></p>") == []
    copy_text = '<div class="clipboard-copy-txt" id="cell-1"><div>s = `y`</div>"""`z`"""</div><p>`</p>'
    assert stray_backticks(copy_text) == ["`"]


def test_no_page_shows_a_backtick_outside_code(site_dir):
    pages = sorted(site_dir.rglob("*.html"))
    assert len(pages) > 30
    shown = {str(path.relative_to(site_dir)): found for path in pages
             if (found := stray_backticks(path.read_text(encoding="utf-8")))}
    assert not shown, "backticks in the rendered text (a code span not rendered):\n" + "\n".join(
        f"{page}: {text}" for page, texts in shown.items() for text in texts)


def test_calls_already_in_code_stay_as_they_are(hooks):
    """The cheat sheet marks up the calls of its "called as" column, never inside a code span."""
    assert hooks._code_calls("hook(optimizer, args, kwargs): `(opt,)` for `opt.step()`") == \
        "`hook(optimizer, args, kwargs)`: `(opt,)` for `opt.step()`"
    assert hooks._code_calls("register `functools.partial(method)` or a function") == \
        "register `functools.partial(method)` or a function"
