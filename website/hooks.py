"""MkDocs hooks that make the course website out of the course's own files.

- Lessons: every lesson of the course manifest (hooked.course, read from solutions/) becomes
  two pages, lessons/NN_slug/ (the learner's version: its checks say "not attempted yet") and
  solutions/NN_slug/ (solved), executed here (all cores, in a temporary folder) and rendered by
  mkdocs-jupyter, in two nav sections "Lessons" and "Solutions". A new lesson needs no edit
  here or in mkdocs.yml.
- Pristine lessons: a lesson page and its downloads are made of the text the generator makes
  from solutions/ (hooked.command.generate), never of the working file lessons/NN_slug.py, which holds
  a learner's answers once they work in it: a learner who builds and publishes the site
  publishes no answer of theirs.
- Downloads: downloads/<lessons|solutions>/NN_slug.ipynb (made from the .py with jupytext)
  and .py, linked from each notebook page by website/overrides/main.html.
- README: `<!-- readme: SECTION -->` in a docs page includes that section of README.md
  (`intro` is the text before the first `##`); `<!-- readme-page: SECTION -->` also lifts its
  headings one level, for a page of its own. Links into the repository are fixed for the site.
- `<!-- hooks-cheatsheet -->` becomes the table of the rows in website/cheatsheet.yml.
- Progress: `mkdocs serve` logs a line per notebook executed (INFO); a build stays quiet.
"""

import base64
import concurrent.futures
import functools
import hashlib
import importlib.util
import inspect
import io
import itertools
import json
import logging
import os
import pathlib
import posixpath
import re
import tempfile
import time
from html import escape, unescape

import jupytext
import mkdocs_jupyter
import nbclient
import nbclient.exceptions
import nbformat
import zmq
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority, get_plugin_logger
from mkdocs.structure.files import File
from mkdocs.structure.toc import get_toc
from mkdocs.utils import get_relative_url
from PIL import Image
from traitlets.config import Config

from hooked.course import DIFFICULTIES, LESSON_FILE, ROOT, lesson_named, lessons
from hooked.lesson_files.solution_markers import MarkerError, lesson_text_from_solution

BRANCH = "main"  # links to repository files that are not on the site point at this branch
FOLDERS = {"lessons": "Lesson", "solutions": "Solution"}
_DIRECTIVE = re.compile(r"^<!-- (readme|readme-page): (.+?) -->$", re.MULTILINE)
_LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")
_KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXECUTED_DIR = ROOT / ".cache" / "hooked-site"  # executed notebooks (gitignored)
LOG = get_plugin_logger("hooked")  # "INFO    -  hooked: ..."


@functools.cache
def _website_module(name):
    """website/<name>.py as a module (website/ is a folder of build files, not a package)."""
    spec = importlib.util.spec_from_file_location(f"hooked_site_{name}", ROOT / "website" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def short_title(lesson):
    """'Tensor hooks' of a Lesson titled 'Lesson 01 — Tensor hooks'; a page title is plain
    text, so without code marks."""
    return lesson.short_title.replace("`", "")


# ---------------------------------------------------------------- nav and files

def page_text(folder, name, root=ROOT):
    """The text the page `folder/name` and its downloads are made of: for "solutions" the
    solution file, for "lessons" the learner's version the generator makes from it (what
    `python -m hooked generate` writes to lessons/). The working lessons/ folder is never read:
    it holds a learner's answers once they work in it."""
    solution = (root / "solutions" / f"{name}.py").read_text(encoding="utf-8")
    if folder == "solutions":
        return solution
    try:
        return lesson_text_from_solution(solution, f"solutions/{name}.py")
    except MarkerError as error:
        raise PluginError(str(error)) from None


def page_texts():
    """{(folder, lesson name): page_text(folder, name)} for every page of Lessons and Solutions."""
    return {(folder, lesson.name): page_text(folder, lesson.name) for folder in FOLDERS for lesson in lessons()}


def on_startup(command, dirty):
    # `mkdocs serve` executes every notebook before it serves: a line per notebook shows how far
    # it is. A build stays quiet (tests/site/test_build.py). The level is the logger's, which
    # outlives this module: `mkdocs serve` loads this file again for each rebuild.
    LOG.logger.setLevel(logging.INFO if command == "serve" else logging.WARNING)


def on_config(config):
    # mkdocs-jupyter says "Converting notebook" for each of the 22 pages: the build stays quiet
    # (its warnings and errors still show)
    logging.getLogger("mkdocs.mkdocs-jupyter").setLevel(logging.WARNING)
    sections = []
    for folder, word in FOLDERS.items():
        entries = [{f"{word} {lesson.short}: {short_title(lesson)}": f"{folder}/{lesson.name}.ipynb"}
                   for lesson in lessons()]
        sections.append({f"{word}s": entries})
    nav = list(config.nav or [])
    config.nav = nav[:1] + sections + nav[1:]  # right after Home
    return config


@event_priority(50)  # before mkdocs-jupyter's on_files, which turns these files into notebook pages
def on_files(files, config):
    texts = page_texts()
    execute_all(texts)
    for (folder, name), text in texts.items():
        # the page is the executed notebook: .cache/hooked-site/lessons/NN_slug.ipynb -> lessons/NN_slug/
        files.append(File(f"{folder}/{name}.ipynb", src_dir=str(EXECUTED_DIR), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
        files.append(File.generated(config, f"downloads/{folder}/{name}.py", content=text))
        files.append(File.generated(config, f"downloads/{folder}/{name}.ipynb", content=_notebook(text)))
    return files  # and NOTEBOOK_CSS, written once the pages are (on_post_build)


def execute_all(texts):
    """Execute {(folder, name): text} into .cache/hooked-site/<folder>/<name>.ipynb, side by side
    on all cores (mkdocs-jupyter would run them one after another). Each kernel starts in a
    temporary folder of its own kind (lessons/ or solutions/), not in the repository, so a
    learner's files there play no part. A cell that raises stops the build. Results are cached
    by the page's text, the course package's code, FIGURE_TEXT and joined_streams, unless
    HOOKED_SITE_CACHE=false.
    Returns {(folder, name): the executed notebook's path}."""
    use_cache = os.environ.get("HOOKED_SITE_CACHE", "true").lower() not in ("false", "0", "no")
    machinery = hashlib.sha256()
    for path in sorted((ROOT / "hooked").rglob("*.py")) + [FIGURE_TEXT]:
        machinery.update(path.read_bytes())
    machinery.update(inspect.getsource(joined_streams).encode())  # it shapes what is cached
    keys = {page: hashlib.sha256(machinery.digest() + text.encode("utf-8")).hexdigest() for page, text in texts.items()}
    targets = {(folder, name): EXECUTED_DIR / folder / f"{name}.ipynb" for folder, name in texts}
    todo = [page for page in texts if not (use_cache and _cached_key(targets[page]) == keys[page])]
    workers = max(1, min(len(todo), os.cpu_count() or 1))
    if todo:
        LOG.info(f"executing {len(todo)} of {len(texts)} notebooks, {workers} at a time")
    finished = itertools.count(1)
    with tempfile.TemporaryDirectory(prefix="hooked-site-") as workdir, \
            concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        def run(page):
            folder, name = page
            (pathlib.Path(workdir) / folder).mkdir(exist_ok=True)
            started = time.perf_counter()
            notebook = execute(texts[page], pathlib.Path(workdir) / folder, f"{folder}/{name}.py")
            LOG.info(f"executed {folder}/{name} in {time.perf_counter() - started:.1f} s "
                     f"({next(finished)} of {len(todo)})")
            return notebook

        for page, notebook in zip(todo, pool.map(run, todo)):
            notebook.metadata["hooked_site_key"] = keys[page]
            targets[page].parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, targets[page])
    return targets


def _cached_key(path):
    try:
        return nbformat.read(path, as_version=4).metadata.get("hooked_site_key")
    except (OSError, ValueError):
        return None


def execute(text, folder, label):
    """The notebook of a jupytext percent-format `text`, executed with its kernel in `folder`.
    `label` names it in the error a raising cell stops the build with."""
    notebook = jupytext.reads(text, fmt="py:percent")
    notebook.metadata["kernelspec"] = dict(_KERNELSPEC)
    # The kernel talks to this process over local TCP; with CurveZMQ keys (which ipykernel's
    # kernelspec says it supports) that talk is encrypted, and the kernel does not warn, once
    # per notebook, that it is not.
    encryption = Config({"KernelManager": {"transport_encryption": "auto" if zmq.has("curve") else "disabled"}})
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=300, config=encryption,
                                     extra_arguments=[f"--IPKernelApp.exec_files={FIGURE_TEXT}"],
                                     resources={"metadata": {"path": str(folder)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        raise PluginError(f"{label}: a cell raised while the site was built:\n{error}") from None
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
    _describe_figures(notebook, label)
    return notebook


def joined_streams(outputs):
    """A cell's outputs as JupyterLab shows them: a stream's consecutive pieces joined, and no
    piece of blank text. The kernel sends what a cell prints as its timer flushes it, so the same
    print() came as one output or two ("⏳ ... your code." then "\n") as the machine was busy,
    and the second was an empty frame on the page, a tab stop with nothing in it."""
    joined = []
    for output in outputs:
        if (output.output_type == "stream" and joined and joined[-1].output_type == "stream"
                and joined[-1].name == output.name):
            joined[-1] = nbformat.from_dict({**joined[-1], "text": joined[-1].text + output.text})
        else:
            joined.append(output)
    return [output for output in joined if output.output_type != "stream" or output.text.strip()]


FIGURE_TEXT = ROOT / "website" / "figure_text.py"  # run in each kernel: a figure's text names what it shows


def _describe_figures(notebook, label):
    """Give each figure of the executed notebook its alt text, in the output's metadata
    ("hooked_alt"): what website/figure_text.py made its plain text (its titles and axis labels),
    or, for a figure without any, the heading of the section it is in. A figure with nothing
    drawn in it stops the build (`label` names the notebook)."""
    heading = "this lesson"
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            found = re.findall(r"^#+\s+(.+)$", cell.source, flags=re.MULTILINE)
            heading = found[-1].replace("`", "").strip() if found else heading
            continue
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                text = output["data"].get("text/plain", "")
                text = "".join(text) if isinstance(text, list) else text
                if text.startswith("Nothing drawn: "):
                    raise PluginError(f"{label}: a figure with nothing drawn in it, in the section “{heading}” "
                                      f"({text}): make it once what it shows is computed")
                alt = text[len("Figure: "):] if text.startswith("Figure: ") else f"A figure in the section “{heading}”"
                output.setdefault("metadata", {})["hooked_alt"] = alt


def _notebook(text):
    """The paired notebook Jupyter would write for this .py (unexecuted), ready to open."""
    notebook = jupytext.reads(text, fmt="py:percent")
    notebook.metadata["kernelspec"] = dict(_KERNELSPEC)
    notebook.metadata["language_info"] = {"name": "python"}
    nbformat.validate(notebook)
    return jupytext.writes(notebook, fmt="ipynb")


def notebook_page(page):
    """('lessons' or 'solutions', lesson name) for a notebook page, else None."""
    folder, _, filename = page.file.src_uri.partition("/")
    name = filename.removesuffix(".ipynb")
    if folder in FOLDERS and filename.endswith(".ipynb") and lesson_named(name):
        return folder, name
    return None


def on_page_context(context, page, config, nav):
    found = notebook_page(page)
    if found:
        folder, name = found
        other = "solutions" if folder == "lessons" else "lessons"
        context["notebook"] = {  # for website/overrides/main.html
            "kind": FOLDERS[folder].lower(),
            "ipynb": f"downloads/{folder}/{name}.ipynb",
            "py": f"downloads/{folder}/{name}.py",
            "lesson_file": f"lessons/{name}.py",
            "test_file": f"tests/test_{name}.py",
            "other_page": f"{other}/{name}/" if config.use_directory_urls else f"{other}/{name}.html",
        }
    return context


# ---------------------------------------------------------------- notebook pages

_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)
_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)
NOTEBOOK_CSS = "assets/hooked/notebook.css"


@functools.cache  # a file of the installed package: read once per build
def _notebook_css():
    """mkdocs-jupyter's stylesheet for notebooks (about 0.6 MB), which it inlines in every page."""
    return (pathlib.Path(mkdocs_jupyter.__file__).parent / "templates" / "mkdocs_html" / "assets"
            / "index.css").read_text(encoding="utf-8")


def on_page_content(html, page, config, files):
    if notebook_page(page):
        # nbconvert's template loads MathJax from a CDN on every page; the lessons use no
        # LaTeX and the site must work offline, so drop it.
        html = _MATHJAX.sub("", html)
        # One shared, cacheable stylesheet instead of the same 0.6 MB inlined in every page.
        css = _notebook_css().strip()
        link = f'<link rel="stylesheet" href="{get_relative_url(NOTEBOOK_CSS, page.url)}">'
        html = _STYLE.sub(lambda m: _keep_style(m, css, link), html)
        html = _figures(html, _figure_alts(page))
        html = _CODE_CELL.sub(lambda match: match.group(0) + _estimated_height(html, match.end()), html)
        extra = [pathlib.Path(config.docs_dir, path).read_text(encoding="utf-8") for path in config.extra_css]
        html = _without_plain_tokens(html, [css] + [match.group(1) for match in _STYLE.finditer(html)] + extra)
        html = _FOCUSABLE_SCROLL.sub(r'\1 tabindex="0"\2', html)
        html = _FOCUSABLE_MARKDOWN_CODE.sub(r'\1 tabindex="0"\2', html)
        html = html.replace(_CELL_TAB_STOP, _CELL_TAB_STOP.replace(' tabindex="0"', ""))
        html = _NOT_SEARCHED.sub(r"\1 data-search-exclude", html)
        html = _EXERCISE_ID.sub(r'\1\2"', html)
        page.toc = get_toc(_toc_tokens(html))
        if notebook_page(page)[0] == "solutions":
            page.meta["search"] = {"exclude": True}  # search finds the lesson, not its answers
    else:
        html = _TABLE.sub(lambda table: _TABLE_CODE.sub(_breakable, table.group(0)), html)
        if page.file.src_uri == "index.md":
            html = _TABLE.sub(lambda table: _as_cards(table.group(0)) if _columns(table.group(0)) >= 4
                              else table.group(0), html)
    return html


# The home page's lessons table becomes cards on a phone (docs/stylesheets/hooked.css): its four
# columns do not fit a phone's width. Each cell carries its column's heading, shown as its label;
# the ARIA roles keep it a table for a screen reader once the stylesheet lays it out as blocks (a
# browser may drop a table's semantics then).
_TABLE_HEADING = re.compile(r"<th[^>]*>(.*?)</th>", re.DOTALL)
_ROW = re.compile(r"<tr>(.*?)</tr>", re.DOTALL)
_DATA_CELL = re.compile(r"<td(?=[ >])")
_ROLES = {"<table>": '<table data-hooked-cards role="table">', "<thead>": '<thead role="rowgroup">',
          "<tbody>": '<tbody role="rowgroup">', "<tr>": '<tr role="row">', "<th>": '<th role="columnheader">'}


def _columns(table):
    return len(_TABLE_HEADING.findall(table))


def _as_cards(table):
    """The table's HTML with its roles and each data cell labelled with its column's heading."""
    labels = [escape(re.sub(r"<[^>]+>", "", heading).strip(), quote=True) for heading in _TABLE_HEADING.findall(table)]

    def labelled(row):
        cells = iter(labels)
        return _DATA_CELL.sub(lambda cell: f'<td role="cell" data-label="{next(cells, "")}"', row.group(0))

    table = _ROW.sub(labelled, table)
    for tag, with_role in _ROLES.items():
        table = table.replace(tag, with_role)
    return table


# In a table's narrow columns (the home page's lessons, the cheat sheet), an identifier breaks
# after a "." or "_" (a <wbr>) and nowhere else (its class, docs/stylesheets/hooked.css): the
# browser broke them anywhere, "Tensor.regi|ster_hook". Inline code holds escaped text only.
# (The notebooks' few tables keep Material's breaking, which keeps them in their column.)
_TABLE = re.compile(r"<table>.*?</table>", re.DOTALL)
_TABLE_CODE = re.compile(r"(<code>)([^<]*)(</code>)")
_BREAK_AFTER = re.compile(r"(?<=[A-Za-z0-9)\]])([._])(?=[A-Za-z0-9])")  # not inside "__init__"


def _breakable(match):
    return '<code class="hooked-wbr">' + _BREAK_AFTER.sub(r"\1<wbr>", match.group(2)) + match.group(3)


# An exercise's heading ends with its level and time ("Exercise 1: `double_grad` · easy · about 5
# min"); its id leaves them out, "exercise-1-double_grad", so that a link to an exercise still
# lands when its estimate changes.
_EXERCISE_ID = re.compile(rf'(id="|href="#)(exercise-\d+-[\w-]+?)-(?:{"|".join(DIFFICULTIES)})-about-\d+-min"')
# A code cell's input scrolls sideways: a keyboard reaches (and scrolls) it once it can take
# the focus (nbconvert already makes each output focusable).
_FOCUSABLE_SCROLL = re.compile(r'(<div class="highlight-ipynb hl-python")(>)')
# So does a code block in a markdown cell (lesson 13's torchrun commands are wider than a phone).
_FOCUSABLE_MARKDOWN_CODE = re.compile(r'(<div class="highlight"><pre)(>)')
# nbconvert makes each cell's input a tab stop: a markdown cell is text, and a code cell's code
# region is its own tab stop (above); nothing there for a keyboard to do.
_CELL_TAB_STOP = '<div class="jp-Cell-inputWrapper" tabindex="0">'
# Search finds the lessons' text, not their code (shown, and again for the copy button), prompts
# and outputs: they were 0.3 MB of its 0.97 MB. Material's search skips a marked element only up
# to the first end tag of its name inside it (it tells elements apart by tag), so the marks go
# on elements that hold none of their own tag.
_NOT_SEARCHED = re.compile(r'(<div class="(?:highlight-ipynb hl-python|clipboard-copy-txt|jp-InputPrompt jp-InputArea-prompt)"'
                           r'|<span class="notice"|<div class="jp-RenderedText jp-OutputArea-output[^>]*>\s*<pre)(?=[ >])')
_CODE = re.compile(r'(<div class="highlight-ipynb[^>]*>\s*<pre>)(.*?)(</pre>)', re.DOTALL)
_TOKEN = re.compile(r'<span class="([\w-]+)">([^<]*)</span>')
_CLASS_IN_CSS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")


def _without_plain_tokens(html, stylesheets):
    """The code cells without the highlighter's spans whose class no stylesheet names (names,
    builtins: about 2,300 of a lesson page's 9,000 elements). Fewer elements, less work for a
    phone to lay the page out; the code looks the same."""
    named = {name for css in stylesheets for name in _CLASS_IN_CSS.findall(css)}

    def plain(match):
        return match.group(0) if match.group(1) in named else match.group(2)

    return _CODE.sub(lambda code: code.group(1) + _TOKEN.sub(plain, code.group(2)) + code.group(3), html)


# A code cell off the screen is laid out only once near it (docs/stylesheets/hooked.css,
# content-visibility) and holds the place of its estimated height until then. One height for
# all (300 px) made a lesson page grow by 9-28% as it was read, the scrollbar moving under the
# reader's hand; the estimate from the cell's lines and figures was 11-29 px off per cell (at
# 390 and 1,280 px wide, five lessons) where 300 px was 250 px off: the page now stays within
# 1-6% of its height.
_CODE_CELL = re.compile(r'<div class="jp-Cell jp-CodeCell[^"]*"(?=[ >])')
_NEXT_CELL = re.compile(r'<div class="jp-Cell ')
_PRE = re.compile(r"<pre[^>]*>(.*?)</pre>", re.DOTALL)
_IMAGE_HEIGHT = re.compile(r'<img [^>]*\bheight="(\d+)"')


def _estimated_height(html, start):
    """' style="contain-intrinsic-size: ..."' for the code cell whose tag ends at `start`:
    80 px, 18 px a line of code or of text output, and its figures' height."""
    start = html.index(">", start) + 1
    following = _NEXT_CELL.search(html, start)
    while following and not html[start:following.start()].strip():
        # nbconvert wraps each code cell in another of the same classes: the wrapper holds the
        # place of the cell it holds
        start = html.index(">", following.start()) + 1
        following = _NEXT_CELL.search(html, start)
    cell = html[start:following.start() if following else len(html)]
    lines = sum(text.rstrip("\n").count("\n") + 1 for text in _PRE.findall(cell))
    height = 80 + 18 * lines + sum(int(value) for value in _IMAGE_HEIGHT.findall(cell))
    return f' style="contain-intrinsic-size: auto {height}px"'


_FIGURE = re.compile(r'<img alt="No description has been provided for this image"([^>]*?) '
                     r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"\s*/?>')


def _figure_alts(page):
    """The alt text of each figure of a notebook page, in order (see _describe_figures)."""
    notebook = nbformat.read(page.file.abs_src_path, as_version=4)
    return [output.metadata["hooked_alt"] for cell in notebook.cells for output in cell.get("outputs", [])
            if "image/png" in output.get("data", {})]


def _figures(html, alts):
    """Each figure: its alt text, its width and height (the page does not jump while it loads),
    a smaller PNG, and a button around it that shows it at full size."""
    figures = _FIGURE.findall(html)
    if len(figures) != len(alts):
        raise PluginError(f"{len(figures)} figures on the page but {len(alts)} in the notebook")
    alts = iter(alts)

    def figure(match):
        attributes, data = match.groups()
        width, height = Image.open(io.BytesIO(base64.b64decode(data))).size
        # the figure fits the column; its button shows it at full size (docs/javascripts/hooked.js)
        return (f'<button type="button" class="hooked-zoom" aria-pressed="false" title="Full size">'
                f'<img alt="{escape(next(alts), quote=True)}"{attributes} width="{width}" height="{height}" '
                f'src="data:image/png;base64,{_smaller_png(data)}"/></button>')

    return _FIGURE.sub(figure, html)


def _smaller_png(data):
    """A matplotlib figure (base64 PNG) as a 256-colour PNG: it looks the same and is about 3x smaller."""
    original = base64.b64decode(data)
    image = Image.open(io.BytesIO(original))
    smaller = io.BytesIO()
    image.convert("RGBA").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(smaller, "PNG", optimize=True)
    if smaller.tell() >= len(original):
        return data
    return base64.b64encode(smaller.getvalue()).decode("ascii")


def _keep_style(match, notebook_css, link):
    body = match.group(1).strip()
    if body == notebook_css:
        return link
    if body.startswith("['"):
        return ""  # mkdocs-jupyter appends the highlighting CSS again, as a Python list: not CSS
    return match.group(0)


_HEADING = re.compile(r'<h([1-3]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.DOTALL)


def _toc_tokens(html):
    """The table of contents of a rendered notebook, from its headings' real ids.
    (mkdocs-jupyter builds it from a markdown export that drops inline code, so a heading
    such as "... reaches `.grad`" got a link to an id that is not on the page.)"""
    roots, open_levels = [], []
    for level, anchor, inner in _HEADING.findall(html):
        name = unescape(re.sub(r"<[^>]+>", "", inner)).replace("\u00b6", "").strip()
        token = {"level": int(level), "id": anchor, "name": name, "children": []}
        while open_levels and open_levels[-1]["level"] >= token["level"]:
            open_levels.pop()
        (open_levels[-1]["children"] if open_levels else roots).append(token)
        open_levels.append(token)
    return roots


_SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog">'
_SKIP = re.compile(r'<a href="[^"]*" class="md-skip">')


def on_post_page(output, page, config):
    # Material's search is a dialog without a name
    output = output.replace(_SEARCH_DIALOG, _SEARCH_DIALOG[:-1] + ' aria-label="Search">')
    if notebook_page(page):
        # "Skip to content" goes to the first heading, past the download bar above it
        output = _SKIP.sub('<a href="#hooked-downloads" class="md-skip">', output, count=1)
        _NOTEBOOK_PAGES[page.file.src_uri] = output
    return output


# The notebook pages of this build ({source path: HTML}): what the notebook stylesheet is cut to.
_NOTEBOOK_PAGES = {}


def on_post_build(config):
    """Write the notebook stylesheet, cut to the rules the notebook pages can use (0.6 MB of
    JupyterLab's whole stylesheet, which blocked their rendering, became about 40 KB)."""
    site = pathlib.Path(config.site_dir)
    target = site / NOTEBOOK_CSS
    # Material's stylesheets and ours may use the notebook stylesheet's custom properties, and
    # Material's scripts add elements and classes
    stylesheets = [path.read_text(encoding="utf-8") for path in site.rglob("*.css") if path != target]
    scripts = [path.read_text(encoding="utf-8") for path in site.rglob("*.js")]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_website_module("notebook_stylesheet").trimmed(
        _notebook_css(), list(_NOTEBOOK_PAGES.values()) + stylesheets, scripts), encoding="utf-8")
    _index_taught_apis(site / "search" / "search_index.json")


# ---------------------------------------------------------------- search

# Search shows the lesson that teaches an API above the pages that only name it (home's lessons
# table, the cheat sheet, other lessons): each lesson's page entry in the search index holds the
# hook APIs it teaches as its keywords (Material's "tags" field, which outweighs titles and text),
# the API's name and the words that tell it apart ("comm" of register_comm_hook). Only the
# lesson's own entry carries them, so a query that names no API ranks the pages as before
# ("hooked status" finds home's section). tests/site/test_search.py.
_YOU_LEARN_ROW = re.compile(r"^\| (\d\d) \|[^|]*\|([^|]*)\|", re.MULTILINE)
_HOOK_API = re.compile(r"`(?:[\w.]*\.)?(\w*hooks?\w*)(?:\(\))?`")
# in most APIs' names, or in too many other places: they tell no API apart
_COMMON_WORDS = {"register", "hook", "hooks", "module", "pre", "post", "on", "full"}


def taught_apis():
    """{lesson name: sorted hook APIs it teaches}: the cheat sheet's rows for the lesson and the
    hook APIs of its "You learn" cell in README.md's lessons table."""
    taught = {lesson.name: set() for lesson in lessons()}
    for row in _website_module("cheatsheet").ROWS:
        if row.get("lesson") in taught:
            taught[row["lesson"]].add(row["api"].rsplit(".", 1)[-1])
    names = {lesson.name[:2]: lesson.name for lesson in lessons()}
    for number, you_learn in _YOU_LEARN_ROW.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        if number in names:
            taught[names[number]].update(_HOOK_API.findall(you_learn))
    return {name: sorted(apis) for name, apis in taught.items()}


def search_keywords(apis):
    """The keywords of a lesson that teaches `apis`: each name and its telling words."""
    words = {word for api in apis for word in api.split("_") if word not in _COMMON_WORDS}
    return sorted(set(apis)) + sorted(words - set(apis))


def _index_taught_apis(index_path):
    """Each lesson's page entry in the built search index gets the keywords of what it teaches."""
    index = json.loads(index_path.read_text(encoding="utf-8"))
    keywords = {f"lessons/{name}/": search_keywords(apis) for name, apis in taught_apis().items() if apis}
    for entry in index["docs"]:
        if entry["location"] in keywords:
            entry["tags"] = keywords[entry["location"]]
    index_path.write_text(json.dumps(index, separators=(",", ":")), encoding="utf-8")


# ---------------------------------------------------------------- README and cheat sheet

def on_page_markdown(markdown, page, config, files):
    if notebook_page(page):
        return markdown
    if "<!-- hooks-cheatsheet -->" in markdown:
        markdown = markdown.replace("<!-- hooks-cheatsheet -->", cheatsheet_table(page, files))
    readme = _readme_sections()
    homes = _section_pages(files)

    def include(match):
        kind, title = match.group(1), match.group(2).strip()
        if title not in readme:
            raise PluginError(f"{page.file.src_uri}: README.md has no section {title!r}; "
                             f"its sections are: {', '.join(readme)}")
        text = readme[title]
        if kind == "readme-page":
            text = re.sub(r"^(#+) ", lambda m: m.group(1)[1:] + " " if len(m.group(1)) > 1 else "# ",
                          text, flags=re.MULTILINE)
        return _fix_links(text, page, files, config, homes, readme)

    return _DIRECTIVE.sub(include, markdown)


def _readme_sections():
    """{'intro': ..., 'Quick start': ..., ...}: README.md cut at its `## ` headings."""
    sections, title, lines, fenced = {}, "intro", [], False
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if line.startswith("## ") and not fenced:
            sections[title] = "\n".join(lines).strip() + "\n"
            title, lines = line[3:].strip(), []
        lines.append(line)
    sections[title] = "\n".join(lines).strip() + "\n"
    return sections


def _section_pages(files):
    """{README section title: the docs page that includes it}."""
    homes = {}
    for file in files.documentation_pages():
        if file.abs_src_path and file.src_uri.endswith(".md"):
            text = pathlib.Path(file.abs_src_path).read_text(encoding="utf-8")
            for _, title in _DIRECTIVE.findall(text):
                homes.setdefault(title.strip(), file.src_uri)
    return homes


def _slug(text):
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def _fix_links(text, page, files, config, homes, readme):
    """README links are relative to the repository root; make them work on the site.
    `readme` is README.md cut into its sections (_readme_sections)."""
    anchors = {}  # heading slug -> README section it is in
    for title, section in readme.items():
        for heading in re.findall(r"^#+ (.+)$", section, flags=re.MULTILINE):
            anchors[_slug(heading)] = title
    page_dir = posixpath.dirname(page.file.src_uri)
    repo = (config.repo_url or "").rstrip("/")

    def fix(match):
        label, target = match.group(1), match.group(2)
        if re.match(r"^[a-z]+:", target):
            return match.group(0)  # http:, mailto: ...
        path, _, anchor = target.partition("#")
        if not path:  # an anchor in README: go to the page that includes its section
            home = homes.get(anchors.get(anchor, ""), page.file.src_uri)
            return f"{label}({posixpath.relpath(home, page_dir or '.')}#{anchor})" if home != page.file.src_uri \
                else match.group(0)
        resolved = (ROOT / path).resolve()
        if not resolved.is_relative_to(ROOT):
            return label[1:-1] if not label.startswith("!") else ""  # outside the repository: text only
        relative = resolved.relative_to(ROOT).as_posix()
        folder, _, filename = relative.partition("/")
        if folder in FOLDERS and filename.endswith(".py") and LESSON_FILE.match(filename):
            relative = relative[:-len(".py")] + ".ipynb"  # a lesson: its page
        if folder == "docs" and files.get_file_from_path(filename) is not None:
            relative = filename  # a file of the site itself, such as a README picture in docs/images/
        if files.get_file_from_path(relative) is not None:
            return f"{label}({posixpath.relpath(relative, page_dir or '.')}{'#' + anchor if anchor else ''})"
        kind = "tree" if resolved.is_dir() else "blob"
        return f"{label}({repo}/{kind}/{BRANCH}/{relative}{'#' + anchor if anchor else ''})"

    return _LINK.sub(fix, text)


def cheatsheet_table(page, files):
    cheatsheet = _website_module("cheatsheet")
    page_dir = posixpath.dirname(page.file.src_uri)
    titles = {lesson.name: (lesson.short, short_title(lesson)) for lesson in lessons()}
    lines = ["| Kind | API | Your hook is called as | When it fires | What its return value does | Lesson |",
             "|---|---|---|---|---|---|"]
    for row in cheatsheet.ROWS:
        lesson = row["lesson"]
        if lesson and lesson in titles and files.get_file_from_path(f"lessons/{lesson}.ipynb"):
            number, title = titles[lesson]
            taught = f"[{number} {title}]({posixpath.relpath(f'lessons/{lesson}.ipynb', page_dir or '.')})"
        elif lesson:
            taught = f"lesson {lesson[:2]} (coming)"
        else:
            taught = f"coming: {row['planned']}"
        cells = [row["group"], f"`{row['call']}`", _code_calls(row["hook"]), row["fires"], row["returns"], taught]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return '<div class="hooked-cheatsheet" markdown>\n\n' + "\n".join(lines) + "\n\n</div>\n"


def _code_calls(text):
    """Mark up the calls in a description: 'hook(t): the tensor' -> '`hook(t)`: the tensor'.
    Code already in backticks is left as it is (a call inside it, `opt.step()`, is code already)."""
    parts = re.split(r"(`[^`]*`)", text)  # odd items: the code spans
    return "".join(part if index % 2 else re.sub(r"\b([a-z_]+\([a-z_, ]*\))", r"`\1`", part)
                   for index, part in enumerate(parts))
