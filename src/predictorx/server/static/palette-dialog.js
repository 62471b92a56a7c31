// Predictor X: the command palette (Ctrl-K / Cmd-K) and the shortcuts' help, loaded by
// palette.js the first time one is asked for (pages stay light: issue 13 §7). window.pxPalette
// opens them: pxPalette("palette") or pxPalette("help").
(function () {
  "use strict";
  var SHORTCUTS = [["Ctrl K", "Open the command palette (⌘ K on a Mac)"], ["c", "New issue"],
    ["/", "Search issues"], ["g i", "Go to issues"], ["g p", "Go to projects"], ["?", "Show these shortcuts"],
    ["Ctrl Enter", "Submit the form you are typing in (⌘ Enter on a Mac)"], ["Esc", "Close a dialog"]];
  var palette, input, list, helpDialog, active = -1, timer = null, asked = 0, opener = null;

  function go(href) { window.location.assign(href); }

  // A dialog keeps the keyboard inside it: Tab from its last control goes to its first.
  function trapFocus(dialog) {
    dialog.addEventListener("keydown", function (ev) {
      if (ev.key !== "Tab") return;
      var items = dialog.querySelectorAll("input, button, a[href], select, textarea");
      if (!items.length) return;
      var first = items[0], last = items[items.length - 1];
      if (ev.shiftKey && document.activeElement === first) { ev.preventDefault(); last.focus(); }
      else if (!ev.shiftKey && document.activeElement === last) { ev.preventDefault(); first.focus(); }
    });
    dialog.addEventListener("close", function () { if (opener && opener.focus) opener.focus(); });
  }

  function option(id, href, kind, text) {
    var li = document.createElement("li");
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", "false");
    li.id = id;
    li.dataset.href = href;
    var k = document.createElement("span");
    k.className = "pal-kind";
    k.textContent = kind;
    li.appendChild(k);
    li.appendChild(document.createTextNode(" " + text));
    return li;
  }

  // The server's matches (issues, projects, agents), then "Create issue" and the sidebar's pages.
  function show(serverHtml, q) {
    list.innerHTML = serverHtml;
    var want = q.trim().toLowerCase();
    if (!want || "create issue new issue".indexOf(want) >= 0 || want.length > 2) {
      list.appendChild(option("pal-new", "/issues?new=1", "Action", "Create issue"));
    }
    document.querySelectorAll(".nav a[href]").forEach(function (a, n) {
      var name = a.textContent.trim();
      if (!want || name.toLowerCase().indexOf(want) >= 0) list.appendChild(option("pal-page" + n, a.getAttribute("href"), "Page", name));
    });
    if (!list.children.length) {
      var none = document.createElement("li");
      none.className = "muted small";
      none.id = "pal-none";
      none.setAttribute("role", "option");
      none.setAttribute("aria-disabled", "true");
      none.textContent = "Nothing matches “" + q + "”";
      list.appendChild(none);
    }
    select(0);
  }

  function options() { return list.querySelectorAll("[role=option]"); }
  function select(n) {
    var all = options();
    if (!all.length) { active = -1; input.removeAttribute("aria-activedescendant"); return; }
    active = (n + all.length) % all.length;
    all.forEach(function (li, i) { li.setAttribute("aria-selected", i === active ? "true" : "false"); });
    input.setAttribute("aria-activedescendant", all[active].id);
    all[active].scrollIntoView({block: "nearest"});
  }

  function ask() {
    var q = input.value, mine = ++asked;
    fetch("/palette?q=" + encodeURIComponent(q), {credentials: "same-origin", headers: {"HX-Request": "true"}})
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (body) { if (mine === asked) show(body, q); })
      .catch(function () { if (mine === asked) show("", q); });
  }

  function buildPalette() {
    palette = document.createElement("dialog");
    palette.className = "modal palette";
    palette.id = "palette";
    palette.setAttribute("aria-labelledby", "palette-title");
    palette.innerHTML = '<h2 id="palette-title" class="sr-only">Command palette</h2>' +
      '<input type="text" id="palette-input" role="combobox" aria-expanded="true" aria-controls="palette-list" ' +
      'aria-autocomplete="list" autocomplete="off" spellcheck="false" ' +
      'aria-label="Jump to an issue, project, agent or page" placeholder="Jump to an issue, project, agent or page…">' +
      '<ul id="palette-list" role="listbox" aria-label="Results"></ul>' +
      '<p class="muted small pal-help">↑ ↓ choose · Enter opens · Esc closes · ? all shortcuts</p>';
    document.body.appendChild(palette);
    input = palette.querySelector("input");
    list = palette.querySelector("ul");
    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(ask, 120); });
    input.addEventListener("keydown", function (ev) {
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") { ev.preventDefault(); select(active + (ev.key === "ArrowDown" ? 1 : -1)); }
      else if (ev.key === "Enter") {
        ev.preventDefault();
        var all = options();
        if (active >= 0 && all[active] && all[active].dataset.href) go(all[active].dataset.href);
      }
    });
    list.addEventListener("click", function (ev) {
      var li = ev.target.closest("[role=option]");
      if (li && li.dataset.href) go(li.dataset.href);
    });
    trapFocus(palette);
  }

  function openPalette() {
    if (!palette) buildPalette();
    if (palette.open) return;
    opener = document.activeElement;
    palette.showModal();
    input.value = "";
    input.focus();
    ask();
  }

  function openHelp() {
    if (!helpDialog) {
      helpDialog = document.createElement("dialog");
      helpDialog.className = "modal shortcuts";
      helpDialog.id = "shortcuts";
      helpDialog.setAttribute("aria-labelledby", "shortcuts-title");
      var rows = SHORTCUTS.map(function (s) {
        var keys = s[0].split(" ").map(function (k) { return "<kbd>" + k + "</kbd>"; }).join(" ");
        return "<tr><td>" + keys + "</td><td>" + s[1] + "</td></tr>";
      }).join("");
      helpDialog.innerHTML = '<header class="modal-head"><h2 id="shortcuts-title">Keyboard shortcuts</h2>' +
        '<button type="button" class="icon" data-close aria-label="Close">×</button></header>' +
        '<table class="table"><thead><tr><th>Keys</th><th>Does</th></tr></thead><tbody>' + rows + "</tbody></table>";
      document.body.appendChild(helpDialog);
      trapFocus(helpDialog);
    }
    if (helpDialog.open) return;
    opener = document.activeElement;
    helpDialog.showModal();
    helpDialog.querySelector("button").focus();
  }

  window.pxPalette = function (which) { if (which === "help") openHelp(); else openPalette(); };
})();
