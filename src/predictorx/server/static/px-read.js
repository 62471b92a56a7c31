// The phone (issue 26 §9), on every page: the sidebar's Menu button on a narrow screen (Escape
// closes it), and a box that scrolls sideways made reachable by keyboard. No htmx needed.
(function () {
  "use strict";
  function setMenu(button, open) {
    button.setAttribute("aria-expanded", String(open));
    document.getElementById(button.getAttribute("aria-controls")).classList.toggle("open", open);
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest(".menu-button");
    if (b) setMenu(b, b.getAttribute("aria-expanded") !== "true");
  });
  document.addEventListener("keydown", function (ev) {
    var b = ev.key === "Escape" && document.querySelector(".menu-button[aria-expanded=true]");
    if (b) { setMenu(b, false); b.focus(); }
  });
  // A box that overflows with nothing focusable inside gets tabindex=0, so it can be scrolled
  // without a mouse (axe: scrollable-region-focusable); checked again after each htmx swap.
  function reach() {
    document.querySelectorAll(".main :is(table, code, pre, .board)").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== "visible" &&
          !box.querySelector("a[href], button, input, select, textarea, summary, [tabindex]")) box.tabIndex = 0;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    reach();
    document.body.addEventListener("htmx:afterSwap", reach);
    window.addEventListener("resize", reach);
  });
})();
