// A run's page only (task.html): consoles, a run's output lines as one block (web/console.py):
// "Show all", and a block that arrives live joined to the one before it (issue 26 §8).
(function () {
  "use strict";
  var FOLD_LINES = 20;  // web/console.py FOLD_LINES; px-console.css folds past it

  document.addEventListener("click", function (ev) {
    var all = ev.target.closest(".console-all");
    if (all) toggleConsole(all);
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

  function start() {
    document.querySelectorAll("ol.messages").forEach(watch);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
