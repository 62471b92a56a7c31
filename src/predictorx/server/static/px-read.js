// Reading and the phone (issue 26 §8, §9): the sidebar's menu button on a narrow screen, and
// consoles (a run's output lines as one block: "Show all", and a block that arrives live joined
// to the one before it). Plain DOM code, no htmx needed.
(function () {
  "use strict";
  var FOLD_LINES = 20;  // web/console.py FOLD_LINES; px-read.css folds past it

  // -- the sidebar's menu (narrow screens) ------------------------------------------------------
  function setMenu(button, open) {
    var menu = document.getElementById(button.getAttribute("aria-controls"));
    if (!menu) return;
    button.setAttribute("aria-expanded", open ? "true" : "false");
    menu.classList.toggle("open", open);
  }

  document.addEventListener("click", function (ev) {
    var button = ev.target.closest(".menu-button");
    if (button) {
      setMenu(button, button.getAttribute("aria-expanded") !== "true");
      return;
    }
    var all = ev.target.closest(".console-all");
    if (all) toggleConsole(all);
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape") return;
    var button = document.querySelector(".menu-button[aria-expanded=true]");
    if (button) { setMenu(button, false); button.focus(); }
  });

  // -- consoles ---------------------------------------------------------------------------------
  function lineCount(block) { return block.querySelectorAll(".cl").length; }

  function label(block) {
    var button = block.querySelector(".console-all");
    var n = lineCount(block);
    if (!button) return;
    button.hidden = n <= FOLD_LINES;
    var open = !block.classList.contains("folded");
    button.setAttribute("aria-expanded", open ? "true" : "false");
    button.textContent = open ? "Show the last " + FOLD_LINES + " lines" : "Show all " + n + " lines";
  }

  function toggleConsole(button) {
    var block = button.closest(".console");
    block.classList.toggle("folded");
    label(block);
  }

  // A console message appended live right after another console joins it: one block per stream.
  function join(li) {
    var before = li.previousElementSibling;
    if (!before || !before.matches("li.msg-console") || !li.matches("li.msg-console")) return;
    var into = before.querySelector(".console-out");
    li.querySelectorAll(".console-out .cl").forEach(function (line) { into.appendChild(line); });
    before.dataset.seq = li.dataset.seq;
    var block = before.querySelector(".console");
    if (lineCount(block) > FOLD_LINES && block.querySelector(".console-all").hidden) block.classList.add("folded");
    label(block);
    var stick = into.scrollHeight - into.scrollTop - into.clientHeight < 40;
    li.remove();
    if (stick) into.scrollTop = into.scrollHeight;
  }

  function watch(list) {
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        change.addedNodes.forEach(function (node) { if (node.nodeType === 1) join(node); });
      });
    }).observe(list, { childList: true });
  }

  // -- boxes that scroll sideways (a table or a command on a phone) -----------------------------
  // A box that scrolls must be reachable by keyboard to be scrolled without a mouse: one with
  // nothing focusable inside gets tabindex=0 while it overflows (axe: scrollable-region-focusable).
  var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  function reachScrollers() {
    document.querySelectorAll(".main table, .main code, .main pre, .main .board").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== "visible";
      if (box.dataset.reach === "1" && !scrolls) { box.removeAttribute("tabindex"); delete box.dataset.reach; }
      if (!scrolls || box.hasAttribute("tabindex") || box.querySelector(FOCUSABLE)) return;
      box.setAttribute("tabindex", "0");
      box.dataset.reach = "1";
    });
  }
  var pending = 0;
  function soon() { clearTimeout(pending); pending = setTimeout(reachScrollers, 100); }

  function start() {
    document.querySelectorAll("ol.messages").forEach(watch);
    reachScrollers();
    window.addEventListener("resize", soon);
    document.body.addEventListener("htmx:afterSwap", reachScrollers);  // at once: nothing may see it unreachable
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
