// A figure fits the column (docs/stylesheets/hooked.css); its button (website/hooks.py) shows
// it at full size, its frame scrolling sideways, and back: a click, Enter or Space.
document.addEventListener("click", event => {
  const button = event.target.closest && event.target.closest(".hooked-zoom");
  if (!button) return;
  button.setAttribute("aria-pressed", String(button.getAttribute("aria-pressed") !== "true"));
  const output = button.closest(".jp-OutputArea-output");
  if (output) hookedTabStops.update(output);  // at full size it may scroll: a tab stop again
});

// nbconvert makes every output a tab stop, so that a keyboard can scroll it; yet most fit their
// column (a print wraps at spaces), and a tab stop there is one more Tab press for nothing (lesson
// 01's 31 outputs all fit: 6 of its first 60 tab stops at 1,280 px, 15 at 390 px). An output
// stays a tab stop only while it scrolls; which ones do is measured again when the window's
// width changes. Only outputs near the screen are
// measured: a code cell off the screen is not laid out (hooked.css, content-visibility) and
// measuring it would lay it out; until it comes near, it keeps nbconvert's tab stop.
// tests/site/test_keyboard.py: no tab stop is an output that does not scroll; one that comes to
// scroll on a resize is a tab stop.
const hookedTabStops = (() => {
  const outputs = Array.from(document.querySelectorAll(".jupyter-wrapper .jp-OutputArea-output[tabindex='0']"));
  const near = new Set();  // cells within a screen's height of the screen

  function scrolls(output) {
    return output.scrollWidth > output.clientWidth || output.scrollHeight > output.clientHeight;
  }

  function setTabStop(output, stop) {
    if (stop) {
      output.setAttribute("tabindex", "0");
    } else if (output.hasAttribute("tabindex")) {
      if (output === document.activeElement) {
        // not under the focus: once the focus leaves it
        output.addEventListener("focusout", () => update(output), { once: true });
      } else {
        output.removeAttribute("tabindex");
      }
    }
  }

  function update(output) {
    setTabStop(output, scrolls(output));
  }

  const cells = new Map();  // the cell around each output -> its outputs
  for (const output of outputs) {
    const cell = output.closest(".jp-Cell") || output;
    cells.set(cell, (cells.get(cell) || []).concat([output]));
  }
  const observer = "IntersectionObserver" in window && new IntersectionObserver(entries => {
    for (const entry of entries) {
      if (entry.isIntersecting) {
        near.add(entry.target);
        cells.get(entry.target).forEach(update);
      } else {
        near.delete(entry.target);
      }
    }
  }, { rootMargin: "100% 0px" });
  if (observer) {
    cells.forEach((_, cell) => observer.observe(cell));
  } else {
    outputs.forEach(update);
  }

  // The keyboard outruns the observer (it reports after the next frame, and one Tab press can
  // scroll a screen): the outputs next to the focus, both ways, are measured as it moves.
  document.addEventListener("focusin", event => {
    const next = outputs.findIndex(output => event.target.compareDocumentPosition(output) & Node.DOCUMENT_POSITION_FOLLOWING);
    const from = next === -1 ? outputs.length : next;
    outputs.slice(Math.max(0, from - 3), from + 3).forEach(output => output !== event.target && update(output));
  });

  let pending = false;
  addEventListener("resize", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      // near the screen: measured again; farther: a tab stop again until it comes near
      cells.forEach((found, cell) => found.forEach(output => (near.has(cell) || !observer)
        ? update(output) : setTabStop(output, true)));
    });
  });

  return { update };
})();
