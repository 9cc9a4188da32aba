"""report.html: what a class got right and wrong, on one page an instructor opens in a browser.

`report_html(results)` turns the parsed results.json ("hooked-class-results/1") into the page and
`write_report(results, path)` writes it. The page is self-contained (figures inline as SVG drawn
by matplotlib, styles inline, no script) so it opens offline, from a mail or a learning platform,
and makes no request. Every number a figure shows is also in a table, for screen readers and
for narrow screens. The same results give the same bytes."""

import collections
import html
import io
import pathlib
import re

STATUSES = ("passed", "failed", "not_attempted", "error")
STATUS_NAMES = {"passed": "passed", "failed": "failed", "not_attempted": "not attempted", "error": "error"}
# At least 3:1 against both the light and the dark page, WCAG's bar for parts of a graphic.
STATUS_COLOURS = {"passed": "#2f7dd1", "failed": "#d9601a", "not_attempted": "#7d838c", "error": "#a05ad0"}
# Ids the runner gives any exercise: they say how the learner's code ended, not what the learner
# misunderstood, so they are kept out of the "what to re-teach" ranking and listed on their own.
RUNNER_OUTCOMES = {".raised": "raised an exception", ".timed-out": "timed out", ".crashed": "crashed its process",
                   ".tampered": "tampered with the grading"}
LOST = (".crashed", ".timed-out", ".tampered")
TOP_MISTAKES = 15
TABLE_MISTAKES = 30  # rows of the mistakes table shown at once; the others fold under it
_WIDTH = 4.4  # inches: the figures' width, at which a phone shows them at about their own size
# The figures' text and axes are drawn in this colour, which the SVG then hands to CSS as
# currentColor: they take the page's text colour, light or dark.
_INK = "#010203"
_PROGRESS_BANDS = (("all", "all passed"), ("most", "half or more passed"), ("some", "fewer than half passed"),
                   ("none", "none passed"))

Mistake = collections.namedtuple("Mistake", "id learners exercises description")


def write_report(results, path):
    """Write the report of `results` to `path` as UTF-8."""
    pathlib.Path(path).write_text(report_html(results), encoding="utf-8")


def report_html(results):
    """The report page of `results`, the parsed results.json, as a string."""
    counts = _status_counts(results)
    sections = [_summary(results, counts), _pass_rate_section(results, counts), _mistakes_section(results),
                _progress_section(results), _lost_section(results)]
    return _page("".join(sections))


def _e(text):
    return html.escape(str(text), quote=True)


def _breakable(identifier):
    """`identifier` escaped, free to wrap after its dots and underscores but nowhere else."""
    return re.sub(r"([._])", r"\1<wbr>", _e(identifier))


def _plural(count, noun):
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _percent(part, whole):
    return f"{(200 * part + whole) // (2 * whole)}%" if whole else "–"  # rounded half up, in integers


def _exercise_keys(results):
    return [(lesson["lesson"], exercise) for lesson in results["lessons"] for exercise in lesson["exercises"]]


def _exercise_label(results, lesson_name, exercise):
    numbers = {lesson["lesson"]: lesson["number"] for lesson in results["lessons"]}
    return f"{numbers.get(lesson_name, lesson_name)} {exercise}"


def _lesson_label(results, lesson_name):
    lesson = next((lesson for lesson in results["lessons"] if lesson["lesson"] == lesson_name), None)
    return f"{lesson['number']} {lesson['title']}" if lesson else lesson_name


def _status_counts(results):
    """{(lesson, exercise): Counter of statuses over the learners}."""
    counts = collections.defaultdict(collections.Counter)
    for row in results["rows"]:
        counts[row["lesson"], row["exercise"]][row["status"]] += 1
    return counts


def _summary(results, counts):
    overall = sum(counts.values(), collections.Counter())
    total = sum(overall.values())
    graded = (f"{_plural(len(results['learners']), 'learner')}, {_plural(len(results['lessons']), 'lesson')} "
              f"and {_plural(len(_exercise_keys(results)), 'exercise')} graded")
    if total:
        shares = ", ".join(f"{_percent(overall[status], total)} {STATUS_NAMES[status]}" for status in STATUSES)
        graded += f". Of the {total} results, one per learner and exercise: {shares}."
    else:
        graded += ": there is no result to show."
    nav = "".join(f'<li><a href="#{anchor}">{title}</a></li>' for anchor, title in
                  (("pass-rates", "Pass rates"), ("mistakes", "Most common mistakes"),
                   ("progress", "Progress grid"), ("lost", "Crashed, timed out or tampered")))
    return (f'<h1>Class report</h1><p class="summary">{_e(graded)}</p>'
            f'<nav aria-label="Sections of the report"><ul>{nav}</ul></nav>')


def _pass_rate_section(results, counts):
    keys = _exercise_keys(results)
    heading = '<section aria-labelledby="pass-rates"><h2 id="pass-rates">Pass rates by exercise</h2>'
    if not keys or not results["learners"]:
        return heading + '<p class="empty">No exercise was graded.</p></section>'
    labels = [_exercise_label(results, *key) for key in keys]
    shares = {status: [100 * counts[key][status] / max(1, sum(counts[key].values())) for key in keys]
              for status in STATUSES}
    label = (f"Stacked horizontal bars, one per exercise ({len(keys)}): the share of the "
             f"{_plural(len(results['learners']), 'learner')} who passed, failed, did not attempt it or hit an "
             "error. The table of pass rates gives the same numbers.")
    figure = _svg(lambda figure: _draw_pass_rates(figure, labels, shares), (_WIDTH, 0.95 + 0.42 * len(keys)),
                  "pass-rate-chart", label)
    return (heading + f'<div class="beside"><figure>{figure}<figcaption>{_e(label)}</figcaption></figure>'
            + _pass_rate_table(results, counts) + "</div></section>")


def _draw_pass_rates(figure, labels, shares):
    axes = _rows_axes(figure, labels)
    left = [0.0] * len(labels)
    for status in STATUSES:
        axes.barh(_bar_rows(labels), shares[status], left=left, height=_BAR, color=STATUS_COLOURS[status],
                  label=STATUS_NAMES[status])
        left = [start + width for start, width in zip(left, shares[status])]
    axes.set_xlim(0, 100)
    axes.set_xlabel("share of learners (%)")
    figure.legend(loc="outside upper left", ncols=4, handlelength=1, columnspacing=0.9, handletextpad=0.4)


# Each bar has its label on a line of its own above it, so that the bars get the figure's whole
# width and the figure can be narrow enough to be read on a phone at its own size.
_BAR = 0.42


def _rows_axes(figure, labels, fontsize=10):
    """Axes with one row per label, the label above its bar, the first row on top."""
    axes = figure.add_subplot()
    for row, label in enumerate(labels):
        axes.text(0, row, label, va="top", ha="left", fontsize=fontsize)
    axes.set_ylim(len(labels), -0.05)
    axes.set_yticks([])
    axes.spines["left"].set_visible(False)
    axes.xaxis.grid(True, color=_INK, alpha=0.25, linewidth=0.6)
    axes.set_axisbelow(True)
    return axes


def _bar_rows(labels):
    return [row + 0.4 + _BAR / 2 for row in range(len(labels))]


def _pass_rate_table(results, counts):
    head = "".join(f'<th scope="col">{STATUS_NAMES[status].capitalize()}</th>' for status in STATUSES)
    bodies = []
    for lesson in results["lessons"]:
        rows = [f'<tr><th scope="colgroup" colspan="{len(STATUSES) + 1}" class="group">'
                f'{_e(lesson["number"])} {_e(lesson["title"])}</th></tr>']
        for exercise in lesson["exercises"]:
            tally = counts[lesson["lesson"], exercise]
            cells = "".join(f'<td class="num">{tally[status]} ({_percent(tally[status], sum(tally.values()))})</td>'
                            for status in STATUSES)
            rows.append(f'<tr><th scope="row">{_e(exercise)}</th>{cells}</tr>')
        bodies.append(f"<tbody>{''.join(rows)}</tbody>")
    return _scrolling_table("Pass rates by exercise: learners (share)",
                            f'<thead><tr><th scope="col">Exercise</th>{head}</tr></thead>{"".join(bodies)}')


def _scrolling_table(label, inner, table_class=""):
    """A table inside a region that scrolls sideways on a narrow screen, reachable by keyboard."""
    attribute = f' class="{table_class}"' if table_class else ""
    return (f'<div class="scroll" tabindex="0" role="region" aria-label="{_e(label)}">'
            f"<table{attribute}><caption>{_e(label)}</caption>{inner}</table></div>")


def _runner_outcome(mistake_id):
    """What the runner saw happen ("timed out"), or None for a named misconception."""
    return next((said for ending, said in RUNNER_OUTCOMES.items() if mistake_id.endswith(ending)), None)


def _mistakes(results):
    """Every mistake id in the rows, as Mistakes, the most learners first, then by id."""
    order = {key: index for index, key in enumerate(_exercise_keys(results))}
    learners, exercises = collections.defaultdict(set), collections.defaultdict(set)
    for row in results["rows"]:
        if row.get("mistake"):
            learners[row["mistake"]].add(row["learner"])
            exercises[row["mistake"]].add((row["lesson"], row["exercise"]))
    described = results.get("mistakes", {})
    found = [Mistake(mistake_id, len(learners[mistake_id]),
                     sorted(exercises[mistake_id], key=lambda key: (order.get(key, len(order)), key)),
                     described.get(mistake_id, "")) for mistake_id in learners]
    return sorted(found, key=lambda mistake: (-mistake.learners, mistake.id))


def _mistakes_section(results):
    mistakes = _mistakes(results)
    taught = [mistake for mistake in mistakes if _runner_outcome(mistake.id) is None]
    runner = [mistake for mistake in mistakes if _runner_outcome(mistake.id) is not None]
    parts = ['<section aria-labelledby="mistakes"><h2 id="mistakes">Most common mistakes: what to re-teach</h2>']
    if taught:
        parts.append(_mistakes_figure(results, taught[:TOP_MISTAKES]))
        parts.append(_mistakes_table(results, taught[:TABLE_MISTAKES], "Named mistakes, the most learners first"))
        if len(taught) > TABLE_MISTAKES:  # a class can make hundreds: the rest on request, not in the way
            rest = taught[TABLE_MISTAKES:]
            parts.append(f"<details><summary>The other {_plural(len(rest), 'named mistake')}</summary>"
                         f"{_mistakes_table(results, rest, 'The other named mistakes, the most learners first')}"
                         "</details>")
    else:
        parts.append('<p class="empty">No named mistake was recognised in this class.</p>')
    parts.append('<h3 id="runner-outcomes">Runner outcomes</h3><p>Not misconceptions: how the code ran '
                 "(an exception, the time limit, a crash, tampering with the grading).</p>")
    if runner:
        parts.append(_mistakes_table(results, runner, "Runner outcomes, the most learners first"))
    else:
        parts.append('<p class="empty">No learner\'s code raised, timed out, crashed or tampered.</p>')
    return "".join(parts) + "</section>"


def _mistakes_figure(results, shown):
    listed = "; ".join(f"{mistake.id}: {_plural(mistake.learners, 'learner')}" for mistake in shown)
    label = (f"Horizontal bars: the {_plural(len(shown), 'most common named mistake')} and how many learners "
             f"made each. {listed}.")
    labels = [_short_id(mistake.id) for mistake in shown]
    learners = [mistake.learners for mistake in shown]
    figure = _svg(lambda figure: _draw_mistakes(figure, labels, learners, len(results["learners"])),
                  (_WIDTH, 0.75 + 0.4 * len(shown)), "mistakes-chart", label)
    caption = (f"The {_plural(len(shown), 'most common named mistake')}, learners who made each; "
               "the table below says what each one is.")
    return f"<figure>{figure}<figcaption>{_e(caption)}</figcaption></figure>"


def _short_id(mistake_id, length=52):
    """The id, its exercise part shortened if need be: the mistake's own name is what says most."""
    if len(mistake_id) <= length:
        return mistake_id
    head, _, name = mistake_id.rpartition(".")
    room = length - len(name) - 2
    return f"{head[:room]}….{name}" if room >= 8 else _shortened(mistake_id, length)


def _shortened(text, length):
    return text if len(text) <= length else text[:length - 1] + "…"


def _draw_mistakes(figure, labels, learners, class_size):
    from matplotlib.ticker import MaxNLocator

    axes = _rows_axes(figure, labels, fontsize=9)
    bars = axes.barh(_bar_rows(labels), learners, height=_BAR, color=STATUS_COLOURS["failed"])
    axes.bar_label(bars, padding=3)
    axes.set_xlim(0, max(learners) * 1.15)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel(f"learners who made it, of {class_size}")


def _mistakes_table(results, mistakes, label):
    rows = []
    for mistake in mistakes:
        where = ", ".join(_exercise_label(results, *key) for key in mistake.exercises)
        description = mistake.description or "(no description)"
        rows.append(f'<tr><th scope="row" class="id">{_breakable(mistake.id)}</th>'
                    f'<td class="num">{mistake.learners}</td>'
                    f"<td>{_e(where)}</td><td>{_e(description)}</td></tr>")
    head = ('<thead><tr><th scope="col">Mistake</th><th scope="col">Learners</th><th scope="col">Exercises</th>'
            '<th scope="col">What it is</th></tr></thead>')
    return _scrolling_table(label, f"{head}<tbody>{''.join(rows)}</tbody>", "mistakes")


def _band(passed, total):
    if total and passed == total:
        return _PROGRESS_BANDS[0]
    if total and 2 * passed >= total:
        return _PROGRESS_BANDS[1]
    return _PROGRESS_BANDS[2] if passed else _PROGRESS_BANDS[3]


def _progress_cell(passed, total, tag="td"):
    band, said = _band(passed, total)
    return f'<{tag} class="band-{band}"><span>{passed}/{total}</span><span class="sr"> ({said})</span></{tag}>'


def _progress_section(results):
    heading = ('<section aria-labelledby="progress"><h2 id="progress">Progress grid</h2>'
               "<p>Exercises passed of the lesson's exercises, per learner and lesson.</p>")
    if not results["learners"] or not results["lessons"]:
        return heading + '<p class="empty">No learner or lesson was graded.</p></section>'
    passed = collections.Counter((row["learner"], row["lesson"]) for row in results["rows"]
                                 if row["status"] == "passed")
    legend = "".join(f'<li><span class="swatch band-{band}" aria-hidden="true"></span>{said}</li>'
                     for band, said in _PROGRESS_BANDS)
    head = "".join(f'<th scope="col"><span class="number">{_e(lesson["number"])}</span> '
                   f'<span class="title">{_e(lesson["title"])}</span></th>' for lesson in results["lessons"])
    rows = []
    for learner in results["learners"]:
        cells = "".join(_progress_cell(passed[learner["learner"], lesson["lesson"]], len(lesson["exercises"]))
                        for lesson in results["lessons"])
        total = _progress_cell(learner["passed"], learner["exercises"])
        rows.append(f'<tr><th scope="row">{_e(learner["learner"])}</th>{cells}{total}</tr>')
    table = _scrolling_table("Progress grid: exercises passed per learner and lesson",
                             f'<thead><tr><th scope="col">Learner</th>{head}<th scope="col">All lessons</th>'
                             f"</tr></thead><tbody>{''.join(rows)}</tbody>", "grid")
    return heading + f'<ul class="legend" aria-label="Cell colours">{legend}</ul>{table}</section>'


def _lost_section(results):
    lost = [row for row in results["rows"] if (row.get("mistake") or "").endswith(LOST)]
    heading = ('<section aria-labelledby="lost"><h2 id="lost">Learners whose code crashed, timed out or '
               "tampered with the grading</h2>")
    if not lost:
        return heading + '<p class="empty">No learner\'s code crashed, timed out or tampered.</p></section>'
    rows = "".join(f'<tr><th scope="row">{_e(row["learner"])}</th>'
                   f'<td>{_e(_lesson_label(results, row["lesson"]))}</td><td>{_e(row["exercise"])}</td>'
                   f'<td>{_e(_runner_outcome(row["mistake"]))}</td><td>{_message(row["message"])}</td></tr>'
                   for row in lost)
    head = ('<thead><tr><th scope="col">Learner</th><th scope="col">Lesson</th><th scope="col">Exercise</th>'
            '<th scope="col">What happened</th><th scope="col">Message</th></tr></thead>')
    return heading + _scrolling_table("Crashed, timed out or tampered", f"{head}<tbody>{rows}</tbody>",
                                      "lost") + "</section>"


def _message(message):
    """A message in full; a long one folded under its first line, so the table stays scannable."""
    message = message or ""
    first = message.split("\n", 1)[0]
    if len(message) <= 160 and "\n" not in message:
        return f'<div class="message">{_e(message)}</div>'
    return (f'<details><summary>{_e(_shortened(first, 100))}</summary>'
            f'<div class="message">{_e(message)}</div></details>')


_RC = {"svg.hashsalt": "hooked-class-report", "svg.fonttype": "path", "font.family": "DejaVu Sans",
       "font.size": 10, "text.color": _INK, "axes.edgecolor": _INK, "axes.labelcolor": _INK,
       "xtick.color": _INK, "ytick.color": _INK, "figure.facecolor": "none", "axes.facecolor": "none",
       "savefig.facecolor": "none", "savefig.edgecolor": "none", "legend.frameon": False,
       "axes.spines.top": False, "axes.spines.right": False}


def _svg(draw, size, name, label):
    """`draw(figure)` on a new figure of `size` inches, as inline SVG named `name` that says `label`."""
    import matplotlib  # only here: a page of tables need not pay for matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=size, layout="constrained")
        draw(figure)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return _inline(buffer.getvalue(), name, label)


def _inline(svg, name, label):
    """matplotlib's SVG made fit to sit inside HTML, and to say what it shows."""
    svg = svg[svg.index("<svg"):]  # the XML prolog and DOCTYPE have no place inside HTML
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = svg.replace(_INK, "currentColor")
    ids = re.findall(r'\bid="([^"]+)"', svg)
    if ids:  # two figures on one page must not share the ids of their glyphs and clip paths
        pattern = "|".join(re.escape(found) for found in sorted(ids, key=len, reverse=True))
        svg = re.sub(rf'(\bid="|"#|\(#)({pattern})(?=[")])', rf"\g<1>{name}-\g<2>", svg)
    opening = svg.index(">") + 1
    return (f'<svg class="chart" role="img" aria-labelledby="{name}-title" focusable="false"'
            f'{svg[len("<svg"):opening]}<title id="{name}-title">{_e(label)}</title>{svg[opening:]}').strip()


def _page(body):
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="color-scheme" content="light dark">'
            f"<title>Class report</title><style>{_STYLE}</style></head>"
            f"<body><main>{body}</main></body></html>\n")


_STYLE = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #4d5560; --line: #c9ced6;
  --head: #f1f3f6; --link: #0b57d0; --focus: #0b57d0;
  --all: #b9e3c6; --most: #efe7a6; --some: #fbd0a4; --none: #f5c4c4; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #121417; --fg: #e8eaed; --muted: #b3b9c2; --line: #454b54; --head: #1e2227;
    --link: #8ab4f8; --focus: #8ab4f8;
    --all: #1f5634; --most: #4c4713; --some: #6a3a10; --none: #6e2626; } }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 74rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.8rem; margin: 0.5rem 0; }
h2 { font-size: 1.35rem; margin: 2.2rem 0 0.6rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1rem; margin: 1.6rem 0 0.4rem; }
a { color: var(--link); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
nav ul { display: flex; flex-wrap: wrap; gap: 0.3rem 1.2rem; padding: 0; list-style: none; }
.empty { color: var(--muted); font-style: italic; }
figure { margin: 1rem 0; }
/* On a wide screen the pass-rate table stands beside its chart, row for row, not a screen below it. */
@media (min-width: 64rem) { .beside { display: grid; grid-template-columns: 30rem minmax(0, 1fr); gap: 2rem;
  align-items: start; } }
svg.chart { display: block; width: 100%; max-width: 30rem; height: auto; overflow: hidden; color: var(--fg); }
figcaption { color: var(--muted); font-size: 0.9rem; }
.scroll { position: relative; max-width: 100%; overflow-x: auto; margin: 0.8rem 0; }  /* holds the .sr spans too */
table { border-collapse: collapse; font-size: 0.92rem; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid var(--line); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
thead th, th.group { background: var(--head); }
.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.id { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: normal; min-width: 12rem; }
table.mistakes td:last-child { min-width: 14rem; }
.grid th, .grid td { text-align: center; white-space: nowrap; }
.grid thead th { vertical-align: bottom; }
.grid .title { display: block; max-width: 9rem; white-space: normal; font-weight: normal; font-size: 0.8rem; }
.grid tbody th { position: sticky; left: 0; z-index: 1; background: var(--bg); text-align: left;
  min-width: 7rem; max-width: 12rem; overflow-wrap: break-word; white-space: normal; }
.band-all { background: var(--all); } .band-most { background: var(--most); }
.band-some { background: var(--some); } .band-none { background: var(--none); }
.legend { display: flex; flex-wrap: wrap; gap: 0.3rem 1rem; padding: 0; list-style: none; font-size: 0.9rem; }
.swatch { display: inline-block; width: 1rem; height: 1rem; margin-right: 0.35rem; vertical-align: -0.15rem;
  border: 1px solid var(--line); }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
table.lost th[scope=row] { min-width: 7rem; max-width: 12rem; overflow-wrap: break-word; }
table.lost td:nth-child(2) { min-width: 8rem; } table.lost td:nth-child(4) { min-width: 7rem; }
table.lost td:nth-child(3) { white-space: nowrap; } table.lost td:last-child { min-width: 18rem; }
.message { white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, "DejaVu Sans Mono",
  monospace; font-size: 0.85rem; }
summary { cursor: pointer; overflow-wrap: anywhere; }
"""
