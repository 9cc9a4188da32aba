// A figure fits the column (docs/stylesheets/hooked.css); its button (website/hooks.py) shows
// it at full size, its frame scrolling sideways, and back: a click, Enter or Space.
document.addEventListener("click", event => {
  const button = event.target.closest && event.target.closest(".hooked-zoom");
  if (button) button.setAttribute("aria-pressed", String(button.getAttribute("aria-pressed") !== "true"));
});
