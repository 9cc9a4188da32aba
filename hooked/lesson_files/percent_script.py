"""Read the cells of a lesson script in jupytext's percent format (`# %%` cells) as
jupytext reads them, without jupytext: importing it and reading the eleven lessons
with it cost 0.7 s of CPU in pytest's process, the fast reader a few ms.

The reader knows only the plain form the course writes (and Jupyter's pairing keeps):
`# %%`, `# %% [markdown]` (or `[md]`) and `tags=[...]` on the marker line, an optional `# ---`
header. Wherever jupytext would do more (uncomment a magic, unescape a marker, keep a
marker inside a string or a fenced block, read other options), it returns None and the
caller asks jupytext. tests/course/test_lesson_file.py holds it to jupytext's cells."""

import dataclasses
import json
import re

_MARKER = re.compile(r'^# %%(?: \[(?P<kind>markdown|md)\])?(?: tags=(?P<tags>\[[^\]\n]*\]))?$')
# Anything jupytext might take for a cell marker (start_code_re, alternative_start_code_re).
_MARKER_LIKE = re.compile(r"^\s*#\s*(?:%%|<codecell>|In\[[0-9 ]*\]:?\s*$)")
# A comment line jupytext might uncomment or unescape in a code cell: magics (`# %time`),
# shell and help escapes (`# !pip`, `# ?x`, `# x?`), bare shell commands (`# ls`), magic
# assignments (`# x = %who`), escaped markers (`# # %%`). Broader than jupytext's rules.
_MAYBE_CHANGED_COMMENT = re.compile(
    r"^\s*#[#\s]*(?:[%!?]|<codecell>|In\[|(?:cat|cd|cp|mv|rm|rmdir|mkdir|copy|ddir|echo|ls|ldir|ren)(?:$|\s)"
    r"|[A-Za-z_]\w*\s*=\s*[%!])|^\s*#[#\s]*\S*\?\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
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
    """Script(cells) as jupytext.reads(text, fmt="py:percent") gives them (type, source,
    tags), or None when the text uses something this reader does not handle."""
    lines = text.splitlines()
    start = _header_end(lines)
    if start is None or start >= len(lines) or not _MARKER.match(lines[start]):
        return None
    markers = [index for index in range(start, len(lines)) if _MARKER_LIKE.match(lines[index])]
    if any(not _MARKER.match(lines[index]) for index in markers):
        return None
    cells = []
    for begin, end in zip(markers, markers[1:] + [len(lines)]):
        cell = _cell(lines[begin:end])
        if cell is None:
            return None
        cells.append(cell)
    return Script(cells)


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


def _cell(lines):
    """One cell from its marker line and the lines up to the next marker."""
    marker = _MARKER.match(lines[0])
    kind = "markdown" if marker["kind"] else "code"
    metadata = {}
    if marker["tags"]:
        try:
            tags = json.loads(marker["tags"])
        except ValueError:
            return None
        if not all(isinstance(tag, str) for tag in tags):
            return None
        metadata["tags"] = tags
    # The blank lines that separate cells are not part of them (jupytext's find_cell_end).
    if len(lines) >= 3 and not _BLANK.match(lines[-3]) and _BLANK.match(lines[-2]) and _BLANK.match(lines[-1]):
        body = lines[1:-2]
    elif len(lines) >= 2 and lines[-1] == "":
        body = lines[1:-1]
    else:
        body = lines[1:]
    if kind == "code":
        if any(_MAYBE_CHANGED_COMMENT.match(line) for line in body) or _string_may_hold_a_marker(body):
            return None
        return ScriptCell("code", "\n".join(body), metadata)
    if any(line and not line.startswith("#") for line in body):
        return None  # not a plain markdown cell
    if sum(bool(_FENCE.match(line.lstrip("#"))) for line in body) % 2:
        return None  # a fenced block left open: jupytext would read on past the next marker
    text = [re.sub(r"^# ?", "", line) for line in body]
    return ScriptCell(kind, "\n".join(text), metadata)


def _string_may_hold_a_marker(body):
    """True when a triple-quoted string is still open at the cell's end: jupytext would
    then read on past the next marker. Follows jupytext's StringParser for Python."""
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
