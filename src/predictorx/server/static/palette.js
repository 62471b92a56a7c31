// Predictor X: keyboard shortcuts (issue 26 §3). None fires while the person types in a field,
// except Ctrl-Enter (submit that form). The palette and the help (palette-dialog.js) load on
// first use. The issue list's view: a changed select applies it, empty fields stay out of the
// URL (a copied link says only what the view is).
(function () {
  "use strict";
  var g = false, loading = false, d = document;
  function go(href) { location.assign(href); }
  function open(which) {
    if (window.pxPalette) return window.pxPalette(which);
    if (loading) return;
    loading = true;
    var css = d.createElement("link"), js = d.createElement("script");
    css.rel = "stylesheet";
    css.href = "/static/palette-dialog.css";
    js.src = "/static/palette-dialog.js";
    js.onload = function () { window.pxPalette(which); };
    d.head.append(css, js);
  }
  d.addEventListener("keydown", function (ev) {
    var k = ev.key, t = ev.target, mod = ev.ctrlKey || ev.metaKey;
    if (mod && (k === "k" || k === "K")) { ev.preventDefault(); open(); return; }
    if (mod && k === "Enter") {
      if (t.form) { ev.preventDefault(); t.form.requestSubmit(); }
      return;
    }
    var wasG = g;
    g = false;
    if (mod || ev.altKey || ev.defaultPrevented || t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) ||
        d.querySelector("dialog[open]")) return;
    if (wasG) { if (k === "i") go("/issues"); else if (k === "p") go("/"); return; }
    if (k === "g") g = true;
    else if (k === "c") {
      ev.preventDefault();
      var b = d.querySelector("[data-shortcut-new]");
      if (b) b.click(); else go("/issues?new=1");
    } else if (k === "/") {
      ev.preventDefault();
      var s = d.getElementById("issue-search");
      if (s) { s.focus(); s.select(); } else open();
    } else if (k === "?") { ev.preventDefault(); open("help"); }
  });
  d.addEventListener("change", function (ev) {
    if (ev.target.matches("select[data-autosubmit]")) ev.target.form.requestSubmit();
  });
  d.addEventListener("submit", function (ev) {
    if (ev.target.id === "issue-filters") ev.target.querySelectorAll("[name]").forEach(function (el) { el.disabled = !el.value; });
  });
  addEventListener("pageshow", function () { d.querySelectorAll("#issue-filters [name]").forEach(function (el) { el.disabled = false; }); });
  d.addEventListener("click", function (ev) {
    var c = ev.target.closest("[data-copy-link]");
    if (c) navigator.clipboard.writeText(location.href).then(function () { c.textContent = "Link copied"; });
  });
})();
