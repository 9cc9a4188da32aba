"""Colour only on a terminal, never with NO_COLOR; plain text when the output is piped."""

import os
import re

import pytest

from hooked_cli import environment, hooked, make_course, start_hooked

COLOUR = re.compile(r"\x1b\[(?:\d+;)*(?:3[0-8]|9[0-7])(?:;\d+)*m")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


def _on_a_terminal(course, *arguments, **env):
    """Start `hooked ARGUMENTS` with a pseudo-terminal as stdout and stderr; return a function
    that waits for it and returns what it wrote."""
    pty = pytest.importorskip("pty")  # pseudo-terminals: POSIX only
    main, terminal = pty.openpty()
    process = start_hooked(course, *arguments, env=environment(**{"TERM": "xterm-256color", **env}),
                           stdout=terminal, stderr=terminal)
    os.close(terminal)

    def output():
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal is closed once the process has ended
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
        os.close(main)
        return b"".join(chunks).decode()

    return output


def test_a_terminal_gets_colour_unless_no_color_is_set(course):
    coloured = _on_a_terminal(course, "status", "02")
    plain = _on_a_terminal(course, "status", "02", NO_COLOR="1")  # both run at once
    coloured, plain = coloured(), plain()
    assert re.search(r"\x1b\[33mnot attempted", coloured), coloured
    assert "not attempted" in plain and not COLOUR.search(plain), plain


def test_piped_output_is_plain_text_even_on_a_colour_terminal(course):
    completed = hooked(course, "hint", "01", "double_grad", env=environment(TERM="xterm-256color"))
    assert completed.stdout.startswith("**Hint 1 of 3: the idea**\n")
    assert "\x1b" not in completed.stdout
    errors = hooked(course, "hint", "01", "nope", env=environment(TERM="xterm-256color"))
    assert errors.stderr.startswith("hooked: error: no exercise nope") and "\x1b" not in errors.stderr


def test_a_dumb_terminal_gets_the_hint_as_markdown_with_its_code_marks(course):
    dumb = _on_a_terminal(course, "hint", "01", "double_grad", TERM="dumb")()
    assert dumb.startswith("**Hint 1 of 3: the idea**"), dumb
    assert "`double_grad`" in dumb and "\x1b" not in dumb
