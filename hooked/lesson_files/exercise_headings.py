"""Finding an exercise's heading in a solution file, and saying where a heading departs from
the format `# ## Exercise N: `name` · <level> · about M min`. Used by the manifest
(hooked/course.py), which reads the level and minutes from the heading."""

import re
import unicodedata

# Any line that starts an exercise's heading.
_ANY_HEADING = re.compile(r"^# ## Exercise\b.*$", re.MULTILINE)
# A markdown fence in a percent-format file (the line of a markdown cell starts with "# "), and a cell's start.
_FENCE = re.compile(r"^# {0,3}(?P<marker>`{3,}|~{3,})")
_CELL = re.compile(r"^# %%")

# The parts of a heading, with whatever stands between them, to name the first that differs.
_PARTS = re.compile(r"^# ## Exercise(?P<s0>\W*?)(?P<number>\d+)(?P<s1>\W*?)`(?P<name>[^`]+)`(?P<s2>\W*?)"
                    r"(?P<level>[A-Za-z]+)(?P<s3>\W*?)(?P<about>about)?(?P<s4>\W*?)(?P<minutes>\d+)(?P<s5>\W*?)"
                    r"(?P<unit>[A-Za-z]+)(?P<tail>.*)$")
_SEPARATOR = " · "
_EXPECTED = (("s0", " ", "between 'Exercise' and the number"), ("s1", ": ", "between the number and the name"),
             ("s2", _SEPARATOR, "between the name and the level"), ("s3", _SEPARATOR, "between the level and 'about'"),
             ("s4", " ", "between 'about' and the minutes"), ("s5", " ", "between the minutes and 'min'"))


def headings_outside_fences(text, start, end):
    """The exercise headings (re.Match objects) in text[start:end], leaving out the lines inside a
    markdown code fence (an example of a heading in the lesson's prose is not a heading)."""
    fence, outside = None, []
    headings = {match.start(): match for match in _ANY_HEADING.finditer(text, start, end)}
    position = start
    for line in text[start:end].splitlines(keepends=True):
        if _CELL.match(line):
            fence = None  # a fence ends with its cell
        elif (opened := _FENCE.match(line)) and (fence is None or opened["marker"].startswith(fence)):
            fence = None if fence else opened["marker"]
        elif fence is None and position in headings:
            outside.append(headings[position])
        position += len(line)
    return outside


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
