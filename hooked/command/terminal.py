"""How the `hooked` command prints, with rich: colour only on a terminal and never
when NO_COLOR is set; plain text, not wrapped, when the output is piped or saved.
Text from files and from the grader is never read as rich markup."""

from rich.console import Console
from rich.text import Text

from hooked.feedback.progress import status_words

STATUS_STYLES = {"passed": "green", "failed": "red", "not_attempted": "yellow", "error": "magenta"}


def _console(stderr=False):
    return Console(stderr=stderr, highlight=False, markup=False, emoji=False, soft_wrap=True)


class Terminal:
    def __init__(self):
        self.out = _console()
        self.err = _console(stderr=True)

    def line(self, *parts):
        """Print one line made of strings and (string, style) pairs."""
        text = Text()
        for part in parts:
            if isinstance(part, tuple):
                text.append(*part)
            else:
                text.append(part)
        self.out.print(text)

    def status(self, status, width=0):
        """A (words, style) part for a status, padded to `width`."""
        return (status_words(status).ljust(width), STATUS_STYLES[status])

    def dim(self, text):
        return (text, "dim")

    def _styled(self):
        """A terminal that shows styles: rendering for a dumb one (TERM=dumb) would drop the
        marks that set code apart, such as `backticks`, and show nothing in their place."""
        return self.out.is_terminal and not self.out.is_dumb_terminal

    def show_markdown(self, text):
        """Rendered on a terminal; the markdown text itself when piped or on a dumb terminal."""
        if self._styled():
            from rich.markdown import Markdown
            self.out.print(Markdown(text, code_theme="ansi_dark"), soft_wrap=False)
        else:
            self.out.print(Text(text))

    def code(self, source):
        if self._styled():
            from rich.syntax import Syntax
            self.out.print(Syntax(source, "python", theme="ansi_dark", background_color="default"))
        else:
            self.out.print(Text(source))

    def error(self, message):
        text = Text("hooked: error: ", style="red")
        text.append(message)
        self.err.print(text)
