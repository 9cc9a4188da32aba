"""The solution markers of solutions/NN_slug.py, read as text: each region between
`# BEGIN SOLUTION` and `# END SOLUTION` is the reference answer; the learner's version
replaces it with a stub that raises NotImplementedError, keeping the signature and
docstring above it.

A marker may carry the TODO line the learner sees:
    # BEGIN SOLUTION: return a new tensor; do not change grad in place

The generator, the course manifest, the website and the tests all read markers here."""

import re

_BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION(?::\s*(?P<todo>.*\S))?\s*$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")
_DEFINITION = re.compile(r"^(?P<indent>\s*)(?:async\s+)?(?:def|class)\s+(?P<name>\w+)")


class MarkerError(ValueError):
    """The solution markers of a file are not well formed."""


def stub_lines(indent, name, todo):
    return [f"{indent}# TODO: {todo or 'write this, as its docstring says.'}",
            f'{indent}raise NotImplementedError("{name} is not written yet")']


def lesson_text_from_solution(text, filename="solution"):
    """The learner's version of a solution file's text."""
    out, enclosing, region_start = [], [], None
    for number, line in enumerate(text.splitlines(), start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if region_start is not None:
            if begin:
                raise MarkerError(f"{filename} line {number}: BEGIN SOLUTION inside the region opened "
                                  f"at line {region_start}; close it with # END SOLUTION first.")
            if end:
                region_start = None
            continue
        if end:
            raise MarkerError(f"{filename} line {number}: END SOLUTION without a BEGIN SOLUTION before it.")
        if begin:
            indent = begin["indent"]
            names = [name for depth, name in enclosing if len(depth) < len(indent)]
            if not names:
                raise MarkerError(f"{filename} line {number}: a solution region must sit inside a def.")
            out.extend(stub_lines(indent, ".".join(names), begin["todo"]))
            region_start = number
            continue
        definition = _DEFINITION.match(line)
        if line.strip():
            indent = re.match(r"\s*", line).group()
            enclosing = [(depth, name) for depth, name in enclosing if len(depth) < len(indent)]
            if definition:
                enclosing.append((definition["indent"], definition["name"]))
        out.append(line)
    if region_start is not None:
        raise MarkerError(f"{filename} line {region_start}: BEGIN SOLUTION is never closed by # END SOLUTION.")
    return "\n".join(out) + "\n"


def is_solution_marker(line):
    """True for a `# BEGIN SOLUTION[: ...]` or `# END SOLUTION` line."""
    return bool(_BEGIN.match(line) or _END.match(line))


def solution_region_lines(text):
    """The lines between the markers of `text`: the reference answer, which the learner's
    version never shows."""
    lines, inside = [], False
    for line in text.splitlines():
        if is_solution_marker(line):
            inside = bool(_BEGIN.match(line))
        elif inside:
            lines.append(line)
    return lines


def without_markers(text):
    """`text` with its marker lines taken out: the reference solution as it runs."""
    return "".join(line for line in text.splitlines(True) if not is_solution_marker(line))
