"""The build hooks (website/hooks.py) on their own: which text each page and download is made
of, and how a notebook is executed."""

import logging
import re

import nbformat
import pytest

from hooked.course import SOLUTIONS_DIR, fresh_lesson_text, lesson_names


def test_lesson_pages_are_the_generators_text(hooks):
    for name in lesson_names():
        assert hooks.page_text("lessons", name) == fresh_lesson_text(name), name
        assert hooks.page_text("solutions", name) == (SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8")
    assert set(hooks.page_texts()) == {(folder, name) for folder in ("lessons", "solutions") for name in lesson_names()}


def test_a_checkout_whose_lessons_are_solved_gets_pristine_lesson_pages(hooks, tmp_path):
    name = lesson_names()[0]
    solution = (SOLUTIONS_DIR / f"{name}.py").read_text(encoding="utf-8")
    for folder in ("solutions", "lessons"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{name}.py").write_text(solution, encoding="utf-8")  # lessons/: all solved
    text = hooks.page_text("lessons", name, root=tmp_path)
    assert text == fresh_lesson_text(name)
    assert "# BEGIN SOLUTION" not in text and "is not written yet" in text


def test_a_notebook_runs_without_warnings_and_a_raising_cell_stops_the_build(hooks, tmp_path, capfd):
    """The build is quiet (the kernel's "running over TCP without encryption" warning came once
    per notebook), and a real error is still shown, with the cell's exception."""
    notebook = hooks.execute("# %%\nprint(6 * 7)\n", tmp_path, "quiet.py")
    assert notebook.cells[0].outputs[0]["text"] == "42\n"
    captured = capfd.readouterr()
    assert captured.out + captured.err == "", captured.out + captured.err

    with pytest.raises(hooks.PluginError) as raised:
        hooks.execute("# %%\nraise ValueError('the cell broke')\n", tmp_path, "broken.py")
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(raised.value))  # IPython colours the traceback
    assert "broken.py: a cell raised" in message and "ValueError: the cell broke" in message, message


@pytest.mark.parametrize("command", ["serve", "build"])
def test_serve_says_when_each_notebook_is_executed_and_a_build_does_not(hooks, tmp_path, monkeypatch, caplog,
                                                                         command):
    """`mkdocs serve` executes every notebook before it serves: a line per notebook, as it ends."""
    monkeypatch.setattr(hooks, "EXECUTED_DIR", tmp_path)
    monkeypatch.setenv("HOOKED_SITE_CACHE", "false")
    hooks.on_startup(command=command, dirty=False)
    try:
        with caplog.at_level(logging.DEBUG):  # the handler's level: the logger's own decides
            hooks.execute_all({("lessons", "probe"): "# %%\nprint(6 * 7)\n"})
    finally:
        hooks.LOG.logger.setLevel(logging.NOTSET)
    said = [(record.levelname, record.getMessage()) for record in caplog.records if record.name == hooks.LOG.logger.name]
    if command == "build":
        assert said == []
    else:
        assert said[0] == ("INFO", "hooked: executing 1 of 1 notebooks, 1 at a time")
        assert said[1][0] == "INFO" and re.fullmatch(r"hooked: executed lessons/probe in \d+\.\d s \(1 of 1\)",
                                                     said[1][1]), said
        assert len(said) == 2


# What a quiet build prints: mkdocs's own three lines, nothing else.
QUIET = [r"INFO    -  Cleaning site directory", r"INFO    -  Building documentation to directory: .+",
         r"INFO    -  Documentation built in [\d.]+ seconds"]


def test_the_build_is_quiet(build_log):
    """No kernel warning, no theme banner, no line per notebook: only mkdocs's own lines (a
    warning fails the strict build, and an error would show here)."""
    noise = [line for line in build_log.splitlines() if not any(re.fullmatch(quiet, line) for quiet in QUIET)]
    assert not noise, "the build printed:\n" + "\n".join(noise)


def test_the_notebook_stylesheet_keeps_what_a_page_can_use(hooks):
    cut = hooks._website_module("notebook_stylesheet").trimmed(
        ".w{--used: red; --chained: var(--used); --unused: blue}\n"
        ".w .cell, .w .dialog {color: var(--chained)}\n"
        ".w .cell:not(.jp-mod-active) {margin: 0}\n"
        ".w .menu {color: blue}\n"
        "@media (max-width: 10em) {.w .menu {color: red} .w .cell {padding: 0}}\n"
        "@keyframes spin {to {transform: rotate(1turn)}}\n",
        ['<div class="w"><div class="cell">x</div></div>'])
    assert cut.splitlines() == [
        ".w{--used:red;--chained:var(--used)}",
        ".w .cell{color:var(--chained)}",
        ".w .cell:not(.jp-mod-active){margin:0}",
        "@media (max-width: 10em){.w .cell{padding:0}}",
        "@keyframes spin {to {transform: rotate(1turn)}}",
    ]


def test_code_loses_only_the_spans_that_no_stylesheet_names(hooks):
    html = ('<div class="highlight-ipynb hl-python"><pre><span class="k">def</span> <span class="nf">f</span>'
            '<span class="p">():</span></pre></div><p><span class="nf">kept outside code</span></p>')
    assert hooks._without_plain_tokens(html, [".highlight-ipynb .k{color:green}", ".p{color:blue}"]) == (
        '<div class="highlight-ipynb hl-python"><pre><span class="k">def</span> f'
        '<span class="p">():</span></pre></div><p><span class="nf">kept outside code</span></p>')


def test_a_print_is_one_output_however_the_kernel_sent_it(hooks):
    """The kernel sends printed text as its timer flushes it: one print() came as one output or
    as two ("⏳ ... your code." then "\\n") as the machine was busy, and the second was an empty
    frame on the page, a tab stop with nothing in it (lesson 01, in one build of two). The build
    joins a stream's pieces and drops blank ones, as JupyterLab shows them."""
    stream = lambda name, text: nbformat.v4.new_output("stream", name=name, text=text)
    figure = nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>"})
    outputs = [stream("stdout", "⏳ not attempted yet"), stream("stdout", "\n"), figure,
               stream("stdout", "\n"), stream("stderr", "a warning\n"), stream("stdout", "after\n")]
    assert [(o.output_type, o.get("name"), o.get("text")) for o in hooks.joined_streams(outputs)] == [
        ("stream", "stdout", "⏳ not attempted yet\n"), ("display_data", None, None),
        ("stream", "stderr", "a warning\n"), ("stream", "stdout", "after\n")]


def test_executed_notebooks_hold_no_blank_or_split_output(hooks, tmp_path):
    """What a kernel really sends: print() writes its text and its end apart, each flushed."""
    notebook = hooks.execute("# %%\nimport sys\nprint('feedback', flush=True); print(flush=True)\n"
                             "sys.stdout.write('a'); sys.stdout.flush(); _ = sys.stdout.write('b\\n')\n",
                             tmp_path, "split.py")
    assert [(o.name, o.text) for o in notebook.cells[0].outputs] == [("stdout", "feedback\n\nab\n")]


def test_a_figure_with_nothing_drawn_stops_the_build(hooks, tmp_path):
    """Lesson 12 made its last chart before calling the learner's attribution_table: on the
    learner's page, blank axes with a generic alt text. A figure is made once it has data."""
    made_first = ("# %%\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('Patching')\n"
                  "ax.set_xlabel('share')\nplt.show()\n")
    with pytest.raises(hooks.PluginError) as raised:
        hooks.execute(made_first, tmp_path, "empty.py")
    assert "empty.py: a figure with nothing drawn in it" in str(raised.value)
    assert "Patching (x: share)" in str(raised.value)
    drawn = hooks.execute(made_first.replace("ax.set_title", "ax.scatter([0, 1], [1, 0])\nax.set_title"),
                          tmp_path, "drawn.py")
    figure = next(o for o in drawn.cells[0].outputs if "image/png" in o.get("data", {}))
    assert figure["metadata"]["hooked_alt"] == "Patching (x: share)"
