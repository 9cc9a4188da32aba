"""Run in each kernel that builds the website (website/hooks.py starts it with
`--IPKernelApp.exec_files`): a matplotlib figure's plain-text form, which Jupyter stores next
to its PNG, says what the figure shows (its titles and axis labels). The build hooks make it
the figure's alt text. Its names are removed again, so the lesson's namespace is as in Jupyter."""


def _hooked_describe_figure(figure, printer, cycle):
    def clean(text):
        return " ".join(text.split())

    parts = []
    if getattr(figure, "_suptitle", None) is not None and figure._suptitle.get_text().strip():
        parts.append(clean(figure._suptitle.get_text()))
    panels = []
    for axes in figure.axes:
        title = clean(axes.get_title() or axes.get_title("left") or "")
        labels = [f"{name}: {clean(label)}" for name, label in (("x", axes.get_xlabel()), ("y", axes.get_ylabel()))
                  if label.strip()]
        panel = title + (f" ({'; '.join(labels)})" if labels else "") if title else "; ".join(labels)
        if panel and panel not in panels:
            panels.append(panel)
    if len(panels) > 6:
        panels = panels[:6] + [f"and {len(panels) - 6} more panels"]
    parts.extend(panels)
    # A figure with nothing drawn in it (made before an exercise not yet written raised): the
    # build stops on it (website/hooks.py) rather than show a learner an empty chart.
    if not any(axes.has_data() for axes in figure.axes) and not figure.images:
        printer.text("Nothing drawn: " + ". ".join(parts))
        return
    printer.text("Figure: " + ". ".join(parts) if parts else repr(figure))


# Setting up the inline backend (Jupyter does it at a lesson's first figure) clears every
# formatter of figures, so it is set up first, as `%matplotlib inline` does, and the figure's
# text registered after it.
get_ipython().run_line_magic("matplotlib", "inline")  # noqa: F821 (IPython's)
import matplotlib.figure as _hooked_figure  # noqa: E402

get_ipython().display_formatter.formatters["text/plain"].for_type(  # noqa: F821
    _hooked_figure.Figure, _hooked_describe_figure)
del _hooked_describe_figure, _hooked_figure
