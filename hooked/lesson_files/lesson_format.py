"""The lesson file format, read in one place. A lesson (solutions/NN_slug.py, and the learner's
lessons/NN_slug.py it generates) is a Python script in jupytext's percent format:

    # %% [markdown]
    # ## Exercise 2: `make_scale_hook` · easy · about 5 min
    # ...
    # %% tags=["exercise"]
    # Exercise: make_scale_hook — write your code in this cell.
    def make_scale_hook(factor):

Here are its cells as the marker lines divide the file, with their tags and lines
(split_cells), and as jupytext reads them (read_percent_script); the cells tagged `exercise`
and `prediction`; each exercise's heading with its level and minutes, and a HeadingError that
says where a heading departs from the format; the lesson's title; the names a code cell
defines. The manifest (hooked/course.py), the grader, the hints and the prediction checks ask
here.

All of it reads text: no jupytext (importing it costs more than reading every lesson here),
no torch, no nbformat.

What an author writes (README, "Add a lesson"):
- No jupytext header. The first markdown cell has the title `# # Lesson NN — Title`, says what
  the learner will be able to do and that all of their code goes in exercise cells; the first
  code cell imports `from hooked.notebook import check, hint, try_it`.
- Each exercise's heading, in the markdown cell that introduces it:
  ``# ## Exercise N: `name` · <level> · about M min``, <level> one of DIFFICULTIES: `easy` (one
  idea and an API the lesson has just shown, a few lines), `medium` (several clauses to keep:
  names at any depth, clean-up when something raises, `None` entries, modes) or `hard` (a design
  of the learner's own that combines several hooks or autograd's internals). A heading without
  them, or with another level, is a HeadingError naming the exercise, the line and what differs
  (a `-` or a `.` for the `·`, a non-breaking space, a space after `min`); a heading inside a
  code fence is an example, not a heading.
- The exercise cell, tagged `exercise`, starts with `# Exercise: <name> — write your code in this
  cell.`, imports what it uses and defines one top-level `def` or `class` whose docstring states
  the contract. The answer sits between `# BEGIN SOLUTION` and `# END SOLUTION` (optionally
  `# BEGIN SOLUTION: <the TODO line the learner sees>`), after the docstring; in a class, one
  region per method (hooked/lesson_files/solution_markers.py makes the stub).
- Then a cell `check(<name>)`, then the hints: a markdown cell tagged `hints` with three
  `<details class="tip"><summary>Hint K of 3: ...</summary>` blocks (1 the idea, 2 the API, 3
  almost the solution, never all of it), each with blank lines around its text
  (hooked/feedback/hints.py reads them for `hooked hint`, `hint(...)` and the website).
- A demonstration that calls an exercise runs inside `with try_it():`, so that the learner's
  version prints "Not done yet" instead of failing.
- A prediction exercise's code is a cell tagged `prediction` defining `<code>(log)`; the lesson
  shows it and never calls it (hooked/checks/event_predictions.py)."""

import ast
import collections
import dataclasses
import json
import re
import unicodedata

EXERCISE_TAG = "exercise"
PREDICTION_TAG = "prediction"

# A line that starts a cell, and a marker as the course writes it (and Jupyter's pairing keeps).
_CELL_START = "# %%"
_MARKER = re.compile(r'^# %%(?: \[(?P<kind>markdown|md)\])?(?: tags=(?P<tags>\[[^\]\n]*\]))?$')
_TITLE = re.compile(r"^# # (?P<title>.+)$", re.MULTILINE)


# The small records here are named tuples, much cheaper to define than frozen dataclasses: this
# module is imported in pytest's process and in every grading worker.
class MarkedCell(collections.namedtuple("MarkedCell", "marker marker_line lines text")):
    """A cell as the marker lines divide the file: its `marker` line ('# %% tags=["exercise"]'),
    the `marker_line` it stands at (1-based), and what follows up to the next marker: its `lines`
    without their line ends, and its `text` as the file has it. The lines before the first
    marker, if any, form a cell with marker '' at line 0."""
    __slots__ = ()

    @property
    def first_line(self):
        """The line in the file of the cell's first line after its marker."""
        return self.marker_line + 1

    @property
    def kind(self):
        """'code' or 'markdown'; None when the marker is not one the course writes."""
        marker = _MARKER.match(self.marker)
        return None if marker is None else "markdown" if marker["kind"] else "code"

    @property
    def tags(self):
        """The tags on the marker line: () when it has none, or none that can be read."""
        tags = _marker_tags(self.marker)
        return tuple(tags) if tags else ()

    def is_code_tagged(self, tag):
        return self.kind == "code" and tag in self.tags


def _marker_tags(marker):
    """The list after `tags=` on a marker line; None when it has no tags or they are not a
    JSON list of strings."""
    match = _MARKER.match(marker)
    if match is None or not match["tags"]:
        return None
    try:
        tags = json.loads(match["tags"])
    except ValueError:
        return None
    return tags if all(isinstance(tag, str) for tag in tags) else None


def split_cells(text):
    """(MarkedCell, ...) of `text`, split at each line that starts with `# %%`. Lines end at
    "\\n" only, as Python counts them (and so the line numbers of tracebacks)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the text ends with a line end (or is empty)
    starts = [index for index, line in enumerate(lines) if line.startswith(_CELL_START)]
    bounds = ([0] if lines and (not starts or starts[0] > 0) else []) + starts
    cells = []
    for begin, end in zip(bounds, bounds[1:] + [len(lines)]):
        marked = lines[begin].startswith(_CELL_START)
        body = lines[begin + marked:end]
        ended = body and (end < len(lines) or text.endswith("\n"))  # the file's last line may have no line end
        cells.append(MarkedCell(lines[begin] if marked else "", begin + 1 if marked else 0, tuple(body),
                                "\n".join(body) + "\n" if ended else "\n".join(body)))
    return tuple(cells)


def code_cells_tagged(text, tag):
    """The code cells of `text` that carry `tag`, in order."""
    return [cell for cell in split_cells(text) if cell.is_code_tagged(tag)]


def prediction_cells(text):
    """(source, line it starts at) of each cell tagged `prediction`, its text as the file has it."""
    return [(cell.text, cell.first_line) for cell in code_cells_tagged(text, PREDICTION_TAG)]


def lesson_title(text):
    """The lesson's title: its first `# # ` line without the marks; None when it has none."""
    title = _TITLE.search(text)
    return title["title"].strip() if title else None


# ---- The cells as jupytext reads them ----

# A comment line jupytext might uncomment or unescape in a code cell: magics (`# %time`),
# shell and help escapes (`# !pip`, `# ?x`, `# x?`), bare shell commands (`# ls`), magic
# assignments (`# x = %who`), escaped markers (`# # %%`). Broader than jupytext's rules.
_MAYBE_CHANGED_COMMENT = re.compile(
    r"^\s*#[#\s]*(?:[%!?]|<codecell>|In\[|(?:cat|cd|cp|mv|rm|rmdir|mkdir|copy|ddir|echo|ls|ldir|ren)(?:$|\s)"
    r"|[A-Za-z_]\w*\s*=\s*[%!])|^\s*#[#\s]*\S*\?\s*$")
# Anything jupytext might take for a cell marker (start_code_re, alternative_start_code_re).
_MARKER_LIKE = re.compile(r"^\s*#\s*(?:%%|<codecell>|In\[[0-9 ]*\]:?\s*$)")
# Line ends other than "\n": jupytext's lines end there too, Python's do not.
_OTHER_LINE_END = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")  # as jupytext finds a fence in a markdown cell
_BLANK = re.compile(r"^\s*$")


@dataclasses.dataclass
class ScriptCell:
    cell_type: str   # "code" or "markdown"
    source: str
    metadata: dict


@dataclasses.dataclass
class Script:
    cells: list


def read_percent_script(text):
    """Script(cells) as jupytext.reads(text, fmt="py:percent") gives them (type, source, tags),
    or None when the text uses something this reader does not handle: it knows the plain form
    the course writes, `# %%`, `# %% [markdown]` (or `[md]`) and `tags=[...]` on the marker
    line, and an optional `# ---` header. Wherever jupytext would do more (uncomment a magic,
    unescape a marker, keep a marker inside a string or a fenced block, read other options),
    the caller asks jupytext."""
    if _OTHER_LINE_END.search(text):
        return None
    cells = list(split_cells(text))
    if cells and not cells[0].marker:
        header = list(cells.pop(0).lines)
        if _header_end(header) != len(header):
            return None
    if not cells or any(cell.kind is None or any(map(_MARKER_LIKE.match, cell.lines)) for cell in cells):
        return None
    read = [_as_jupytext_reads(cell) for cell in cells]
    return None if None in read else Script(read)


def _header_end(lines):
    """Index of the first line after a `# ---` header and the blank lines after it."""
    if not lines or lines[0] != "# ---":
        return 0
    for index in range(1, len(lines)):
        if lines[index] == "# ---":
            index += 1
            while index < len(lines) and lines[index] == "":
                index += 1
            return index
        if not lines[index].startswith("#"):
            return None
    return None


def _as_jupytext_reads(cell):
    """The ScriptCell jupytext reads from `cell`, or None when it might read it otherwise."""
    metadata = {}
    if _MARKER.match(cell.marker)["tags"]:
        tags = _marker_tags(cell.marker)
        if tags is None:
            return None
        metadata["tags"] = tags
    lines = [cell.marker, *cell.lines]
    # The blank lines that separate cells are not part of them (jupytext's find_cell_end).
    if len(lines) >= 3 and not _BLANK.match(lines[-3]) and _BLANK.match(lines[-2]) and _BLANK.match(lines[-1]):
        body = lines[1:-2]
    elif len(lines) >= 2 and lines[-1] == "":
        body = lines[1:-1]
    else:
        body = lines[1:]
    if cell.kind == "code":
        if any(_MAYBE_CHANGED_COMMENT.match(line) for line in body) or _string_may_hold_a_marker(body):
            return None
        return ScriptCell("code", "\n".join(body), metadata)
    if any(line and not line.startswith("#") for line in body):
        return None  # not a plain markdown cell
    if sum(bool(_FENCE.match(line.lstrip("#"))) for line in body) % 2:
        return None  # a fenced block left open: jupytext would read on past the next marker
    return ScriptCell("markdown", "\n".join(re.sub(r"^# ?", "", line) for line in body), metadata)


def _string_may_hold_a_marker(body):
    """True when a triple-quoted string is still open at the cell's end: jupytext would
    then read on past the next marker. Follows jupytext's StringParser for Python."""
    if not any('"""' in line or "'''" in line for line in body):
        return False  # no triple quote, so no triple-quoted string to leave open
    triple = None
    for line in body:
        if triple is None and line.lstrip().startswith("#"):
            continue
        single, triple_start = None, -1
        for i, char in enumerate(line):
            if single is None and triple is None and char == "#":
                break
            if char not in "\"'" or line[i - 1:i] == "\\":
                continue
            if single == char:
                single = None
            elif single is not None:
                continue
            elif line[i - 2:i + 1] == 3 * char and i >= triple_start + 3:
                if triple == char:
                    triple, triple_start = None, i
                elif triple is None:
                    triple, triple_start = char, i
            elif triple is None:
                single = char
    return triple is not None


# ---- The names a code cell defines ----

# `line` in the source it was read from; `statement` "def" (or async def), "class" or "assignment".
Definition = collections.namedtuple("Definition", "name line statement")


def definitions(source):
    """The top-level definitions of a code cell, in order: defs, classes and plain assignments
    (`double_grad = lambda grad: 2 * grad` defines an exercise too). A cell that does not
    parse defines nothing here: where it matters, its syntax error is reported on its own."""
    try:
        tree = ast.parse(without_magics(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(Definition(node.name, node.lineno, "class" if isinstance(node, ast.ClassDef) else "def"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.extend(Definition(target.id, node.lineno, "assignment")
                         for target in targets if isinstance(target, ast.Name))
    return found


def defined_names(source):
    """{name: line in the source} of what a code cell defines at its top level, in the order
    first defined (a name defined twice keeps its last line)."""
    names = {}
    for definition in definitions(source):
        names[definition.name] = definition.line
    return names


def functions_and_classes(source):
    """The top-level defs and classes of a code cell (Definition, ...), in order: the exercises a
    solution's exercise cell offers, and the lines the grader names for them."""
    return [definition for definition in definitions(source) if definition.statement != "assignment"]


def exercise_definition_lines(text):
    """{name: line in the file} of each top-level def and class of the exercise cells of `text`."""
    return {definition.name: cell.first_line + definition.line - 1
            for cell in code_cells_tagged(text, EXERCISE_TAG) for definition in functions_and_classes(cell.text)}


def definition_line_at_or_above(text, name, line):
    """The line of the top-level `def name` or `class name` of `text` nearest at or above
    `line` (each cell read on its own, up to the one that holds the line); None when there is none."""
    lines = [cell.first_line + definition.line - 1 for cell in split_cells(text) if cell.marker_line <= line
             for definition in functions_and_classes(cell.text) if definition.name == name]
    return max((number for number in lines if number <= line), default=None)


def without_magics(source):
    """The cell with IPython magics and shell escapes (`%time ...`, `%%capture`, `!pip ...`)
    turned into `pass`: they work in Jupyter, and mean nothing to the grader."""
    lines = source.split("\n")
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            lines[number] = line[:len(line) - len(stripped)] + "pass  # IPython magic, skipped by the grader"
    return "\n".join(lines)


# ---- Exercise headings ----

DIFFICULTIES = ("easy", "medium", "hard")  # an exercise's <level> in its heading
HEADING_FORMAT = "# ## Exercise N: `name` · <level> · about M min"
_HEADING = re.compile(r"^# ## Exercise (?P<number>\d+): `(?P<name>[^`]+)` · (?P<level>\S+) · about (?P<minutes>\d+) min$")
# The same heading without the level and time, to say what is missing.
_BARE_HEADING = re.compile(r"^# ## Exercise (?P<number>\d+): `(?P<name>[^`]+)`$")
# Any line that starts an exercise's heading.
_ANY_HEADING = re.compile(r"^# ## Exercise\b")
# A markdown code fence, at most 3 spaces in (the line of a markdown cell starts with "# ").
_HEADING_FENCE = re.compile(r"^# {0,3}(?P<marker>`{3,}|~{3,})")
# The parts of a heading, with whatever stands between them, to name the first that differs.
_PARTS = re.compile(r"^# ## Exercise(?P<s0>\W*?)(?P<number>\d+)(?P<s1>\W*?)`(?P<name>[^`]+)`(?P<s2>\W*?)"
                    r"(?P<level>[A-Za-z]+)(?P<s3>\W*?)(?P<about>about)?(?P<s4>\W*?)(?P<minutes>\d+)(?P<s5>\W*?)"
                    r"(?P<unit>[A-Za-z]+)(?P<tail>.*)$")
_SEPARATOR = " · "
_EXPECTED = (("s0", " ", "between 'Exercise' and the number"), ("s1", ": ", "between the number and the name"),
             ("s2", _SEPARATOR, "between the name and the level"), ("s3", _SEPARATOR, "between the level and 'about'"),
             ("s4", " ", "between 'about' and the minutes"), ("s5", " ", "between the minutes and 'min'"))


class HeadingError(ValueError):
    """An exercise's heading in solutions/ lacks its level and time, or has them in another form."""


# One exercise of a solution file: the name its exercise cell defines, that MarkedCell, and the
# level and minutes of its heading.
ExerciseCell = collections.namedtuple("ExerciseCell", "name cell level minutes")


def exercise_cells(text, filename):
    """[ExerciseCell, ...] of a solution file, in order: each top-level def and class of a cell
    tagged `exercise`, with the level and minutes of the last exercise heading between the
    previous exercise cell and its own (HeadingError when it has none in the format)."""
    cells, found, after_previous = split_cells(text), [], 0
    for index, cell in enumerate(cells):
        if not cell.is_code_tagged(EXERCISE_TAG):
            continue
        headings = _headings_outside_fences(cells[after_previous:index])
        for definition in functions_and_classes(cell.text):
            level, minutes = _level_and_minutes(headings, definition.name, cell.marker_line, filename)
            found.append(ExerciseCell(definition.name, cell, level, minutes))
        after_previous = index + 1
    return found


def _headings_outside_fences(cells):
    """(line, text) of each exercise heading in `cells`, leaving out the lines inside a markdown
    code fence (an example of a heading in the lesson's prose is not a heading)."""
    outside = []
    for cell in cells:
        fence = None  # a fence ends with its cell
        for number, line in enumerate(cell.lines, start=cell.first_line):
            if (opened := _HEADING_FENCE.match(line)) and (fence is None or opened["marker"].startswith(fence)):
                fence = None if fence else opened["marker"]
            elif fence is None and _ANY_HEADING.match(line):
                outside.append((number, line))
    return outside


def _level_and_minutes(headings, name, cell_line, filename):
    """(level, minutes) from the last of `headings`, the heading of exercise `name`, whose cell
    starts at line `cell_line` of `filename`."""
    if not headings:
        raise HeadingError(f"{filename} line {cell_line}: exercise {name} has no heading before its "
                           f"exercise cell; write one that reads '{HEADING_FORMAT}', with <level> one of "
                           f"{', '.join(DIFFICULTIES)} and M the minutes a learner usually takes.")
    number, line = headings[-1]
    where = f"{filename} line {number}"
    expected = (f"it must read '{HEADING_FORMAT.replace('name', name)}', with <level> one of "
                f"{', '.join(DIFFICULTIES)} and M the minutes a learner usually takes (a whole number)")
    match = _HEADING.match(line)
    if match is None:
        wrong = departures(line)
        missing = "has no level and time" if _BARE_HEADING.match(line) else "is not in the heading format"
        if wrong and not _BARE_HEADING.match(line):
            missing += f" ({'; '.join(wrong)})"
        raise HeadingError(f"{where}: the heading of exercise {name} {missing}: {line!r}; {expected}.")
    if match["name"] != name:
        raise HeadingError(f"{where}: the heading names `{match['name']}`, but the exercise cell after it "
                           f"defines {name}: {line!r}; {expected}.")
    if match["level"] not in DIFFICULTIES:
        raise HeadingError(f"{where}: the heading of exercise {name} gives the level {match['level']!r}, "
                           f"which is not one of {', '.join(DIFFICULTIES)}: {line!r}; {expected}.")
    if int(match["minutes"]) < 1:
        raise HeadingError(f"{where}: the heading of exercise {name} gives {match['minutes']} minutes: {line!r}; "
                           f"{expected}, at least 1.")
    return match["level"], int(match["minutes"])


_NAMES = {"\t": "TAB"}  # unicodedata names no control character


def _shown(characters):
    """'  ·\\xa0' (U+00A0 NO-BREAK SPACE): the characters as written, naming those that look alike."""
    odd = [f"U+{ord(c):04X} {_NAMES.get(c) or unicodedata.name(c, 'a control character')}"
           for c in dict.fromkeys(characters) if not c.isascii() and c != "·" or not c.isprintable()]
    return repr(characters) + (f" ({', '.join(odd)})" if odd else "")


def departures(line):
    """Where `line`, a heading that is not in the format, departs from it ('between the name and
    the level it has ' - ' where ' · ' is expected'), or [] when its parts cannot be told apart."""
    parts = _PARTS.match(line)
    if parts is None:
        return ["the name is not between backticks"] if line.count("`") < 2 else []
    checked = [part for part in _EXPECTED if parts["about"] or part[0] not in ("s3", "s4")]
    found = [f"{where} it has {_shown(parts[group])} where {expected!r} is expected"
             for group, expected, where in checked if parts[group] != expected]
    if parts["about"] is None:
        found.append(f"between the level and the minutes it has {_shown(parts['s3'] + parts['s4'])} where "
                     f"{_SEPARATOR + 'about '!r} is expected")
    if parts["s2"] != _SEPARATOR or parts["s3"] != _SEPARATOR and parts["about"]:
        found.append("the separator is a space, the middle dot · (U+00B7) and a space")
    if parts["unit"] != "min":
        found.append(f"it gives the time in {parts['unit']!r} where 'min' is expected")
    if parts["tail"]:
        found.append(f"it goes on after 'min' with {_shown(parts['tail'])}")
    return found
