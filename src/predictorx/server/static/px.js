// Predictor X web UI behaviour: dialogs, toggles, copy buttons, and live updates from
// /api/events. Kept to plain DOM code; htmx does the requests and swaps.
(function () {
  "use strict";

  // -- dialogs and toggles --------------------------------------------------------------------
  document.addEventListener("click", function (ev) {
    var opener = ev.target.closest("[data-dialog]");
    if (opener) {
      var dialog = document.getElementById(opener.dataset.dialog);
      if (dialog && !dialog.open) dialog.showModal();
      var first = dialog && dialog.querySelector("input:not([type=hidden]), textarea");
      if (first) first.focus();
      return;
    }
    var closer = ev.target.closest("[data-close]");
    if (closer) {
      var d = closer.closest("dialog");
      if (d) d.close();
      return;
    }
    var toggle = ev.target.closest("[data-toggle]");
    if (toggle) {
      var el = document.getElementById(toggle.dataset.toggle);
      if (el) {
        el.hidden = !el.hidden;
        var input = !el.hidden && el.querySelector("input:not([type=hidden]), textarea");
        if (input) input.focus();
      }
      return;
    }
    var copy = ev.target.closest("[data-copy]");
    if (copy) copyText(copy);
  });

  // A dialog opened from a server-rendered error (<dialog open>) becomes modal like the others.
  document.querySelectorAll("dialog[open]").forEach(function (d) { d.close(); d.showModal(); });

  document.body.addEventListener("px-close-dialog", function () {
    document.querySelectorAll("dialog[open]").forEach(function (d) { d.close(); });
  });

  // The repos picker shows how many repositories are chosen.
  document.addEventListener("input", function (ev) {
    var picker = ev.target.closest(".picker");
    if (!picker) return;
    var ticked = picker.querySelectorAll("input[type=checkbox]:checked").length;
    var area = picker.querySelector("textarea");
    var pasted = area ? area.value.split("\n").filter(function (l) { return l.trim(); }).length : 0;
    var count = picker.querySelector("[data-repo-count]");
    if (count) count.textContent = ticked + pasted;
  });

  // After a board move the moved card's button keeps the keyboard focus (HX-Trigger-After-Settle
  // names the card and the direction it went, so Enter again moves it on). After the settle, not
  // the swap: htmx wires the new board's form up only then, and an Enter before that would
  // submit it as a plain form.
  document.body.addEventListener("px-focus", function (ev) {
    var want = ev.detail && (ev.detail.card ? ev.detail : ev.detail.value);
    var card = want && document.getElementById(want.card);
    if (!card) return;
    var buttons = card.querySelectorAll("button");
    var el = buttons.length ? buttons[want.button === "prev" ? 0 : buttons.length - 1] : card.querySelector("a");
    if (el) el.focus();
  });

  // Board: cards are draggable (set here, not on every card's markup); a card dropped on another
  // column moves there — the ← → buttons do the same by keyboard.
  function draggableCards() {
    document.querySelectorAll(".cards > li[id]:not([draggable])").forEach(function (li) { li.draggable = true; });
  }
  draggableCards();
  document.body.addEventListener("htmx:load", draggableCards);
  document.addEventListener("dragstart", function (ev) {
    var card = ev.target.closest && ev.target.closest(".cards > li[id]");
    if (card) ev.dataTransfer.setData("text/plain", card.id.slice(1));
  });
  document.addEventListener("dragover", function (ev) {
    var col = ev.target.closest && ev.target.closest(".column");
    if (col) { ev.preventDefault(); col.classList.add("drop"); }
  });
  document.addEventListener("dragleave", function (ev) {
    var col = ev.target.closest && ev.target.closest(".column");
    if (col) col.classList.remove("drop");
  });
  document.addEventListener("drop", function (ev) {
    var col = ev.target.closest && ev.target.closest(".column");
    var number = ev.dataTransfer.getData("text/plain");
    if (!col || !/^[0-9]+$/.test(number) || !window.htmx) return;
    var from = document.getElementById("c" + number);
    if (from && from.closest(".column") === col) { col.classList.remove("drop"); return; }
    ev.preventDefault();
    col.classList.remove("drop");
    htmx.ajax("POST", "/issues/move", { target: "#board", swap: "outerHTML", values: { m: number + " " + col.dataset.status } });
  });

  // A folded message carries its first lines; opening it fetches the whole (toggle does not
  // bubble: listen in the capture phase). One request per fold, the first time it opens.
  document.addEventListener("toggle", function (ev) {
    var fold = ev.target;
    if (!fold.open || !fold.hasAttribute || !fold.hasAttribute("data-full")) return;
    var li = fold.closest("li[data-seq]");
    var list = fold.closest("[data-src]");
    var part = fold.querySelector("[data-part]");
    if (!li || !list || !part) return;
    fold.removeAttribute("data-full");
    fetch(list.dataset.src + "/" + li.dataset.seq + "/full", { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) { if (html) part.outerHTML = html; })
      .catch(function () { fold.setAttribute("data-full", ""); });
  }, true);

  // -- copy -------------------------------------------------------------------------------------
  function copyText(button) {
    var text = button.dataset.copy;
    var done = function () { flash(button, "Copied"); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { legacyCopy(text) && done(); });
    } else if (legacyCopy(text)) {
      done();
    }
  }

  function legacyCopy(text) {
    // Plain-http pages on another host have no Clipboard API.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    area.remove();
    return ok;
  }

  function flash(button, text) {
    var before = button.dataset.label || button.textContent;
    button.dataset.label = before;
    button.textContent = text;
    button.classList.add("flashed");
    setTimeout(function () { button.textContent = before; button.classList.remove("flashed"); }, 1500);
  }

  // -- live updates -------------------------------------------------------------------------------
  function live(kind) { return document.querySelectorAll('[data-live="' + kind + '"]'); }

  function refresh(el) { if (window.htmx) htmx.trigger(el, "px-refresh"); }

  function pullMessages(list) {
    // New messages only (after the highest seq shown), appended in order; overlapping pulls
    // are folded into one follow-up so nothing is shown twice or out of order.
    if (list._busy) { list._again = true; return; }
    list._busy = true;
    var after = parseInt(list.dataset.after || "-1", 10);
    fetch(list.dataset.src + "?after=" + after, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        var nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
        tpl.content.querySelectorAll("li[data-seq]").forEach(function (li) {
          var seq = parseInt(li.dataset.seq, 10);
          if (seq <= parseInt(list.dataset.after, 10)) return;
          list.appendChild(li);
          list.dataset.after = String(seq);
        });
        var empty = document.getElementById("no-messages");
        if (empty && list.children.length) empty.hidden = true;
        if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
      })
      .catch(function () {})
      .finally(function () {
        list._busy = false;
        if (list._again) { list._again = false; pullMessages(list); }
      });
  }

  function refreshEverything() {
    live("tasks").forEach(refresh);
    live("task").forEach(refresh);
    live("messages").forEach(pullMessages);
  }

  document.body.addEventListener("px-tasks-changed", function () { live("tasks").forEach(refresh); });

  // A live refresh never replaces a form a person is filling in (the workflows panel refreshes on
  // every task event): it is skipped while a field inside has the focus or was edited, and the
  // person's own submit swaps the panel as usual.
  document.body.addEventListener("input", function (ev) {
    if (ev.target.form) ev.target.form.classList.add("px-edited");
  });
  function busy(panel) {
    var focused = document.activeElement;
    var typing = focused && focused !== panel && panel.contains(focused) && /^(INPUT|TEXTAREA|SELECT)$/.test(focused.tagName);
    return typing || !!panel.querySelector("form.px-edited");
  }
  document.body.addEventListener("htmx:confirm", function (ev) {
    var trigger = ev.detail.triggeringEvent;
    if (trigger && trigger.type === "px-refresh" && busy(ev.detail.elt)) ev.preventDefault();
  });
  // A refresh sent before the person started typing must not land after: checked again at the swap.
  document.body.addEventListener("htmx:beforeSwap", function (ev) {
    var config = ev.detail.requestConfig, trigger = config && config.triggeringEvent;
    if (trigger && trigger.type === "px-refresh" && ev.detail.target && busy(ev.detail.target)) ev.detail.shouldSwap = false;
  });

  // The answer to a person's own request (a refusal such as "not waiting for an answer") stays
  // shown when a live refresh lands after it; it goes with the person's next request there.
  function byRefresh(detail) {
    var trigger = detail.requestConfig && detail.requestConfig.triggeringEvent;
    return !!(trigger && trigger.type === "px-refresh");
  }
  document.body.addEventListener("htmx:afterSwap", function (ev) {
    var target = ev.detail.target;
    if (!target) return;
    if (!byRefresh(ev.detail)) {
      var said = target.querySelector(".form-error:not([hidden])");
      target._pxSaid = said ? said.cloneNode(true) : null;
      return;
    }
    if (!target._pxSaid || target.querySelector(".form-error:not([hidden])")) return;
    var first = target.firstElementChild, kept = target._pxSaid.cloneNode(true);
    if (first && first.tagName === "HEADER") first.after(kept); else target.prepend(kept);
  });

  // -- the live connection ----------------------------------------------------------------------
  // One EventSource on /api/events. A lost connection (the server stopped, the network or the
  // browser offline) says "Reconnecting…", the live dot stops being green, and the connection is
  // opened again until it answers; then every page part that listens catches up once.
  var handlers = [], catchUps = [], stream = null, started = false, everOpen = false, timer = null;

  function lost() {
    if (stream) { stream.close(); stream = null; }
    document.body.classList.remove("live-on");
    var el = document.getElementById("live-status");
    if (!el) {
      el = document.body.appendChild(document.createElement("p"));
      el.id = el.className = "live-status";
      el.setAttribute("role", "status");
      el.textContent = "Reconnecting…";
    }
    el.hidden = false;
  }

  function connect() {
    clearTimeout(timer);
    if (stream) stream.close();
    if (navigator.onLine === false) return lost();
    var es = stream = new EventSource("/api/events");
    es.onopen = function () {
      document.body.classList.add("live-on");
      var el = document.getElementById("live-status");
      if (el) el.hidden = true;
      // After a reconnect, events may have been missed: fetch the current state once.
      if (everOpen) catchUps.forEach(function (fn) { fn(); });
      everOpen = true;
    };
    es.onerror = function () {
      if (es !== stream) return;
      document.body.classList.remove("live-on");
      lost();
      // The browser retries a dropped stream itself; after an error answer it gives up: we retry.
      timer = setTimeout(connect, 2000);
    };
    es.onmessage = function (ev) {
      var event;
      try { event = JSON.parse(ev.data); } catch (e) { return; }
      handlers.forEach(function (fn) { fn(event); });
    };
  }

  window.pxLive = {
    on: function (fn) { handlers.push(fn); },
    onCatchUp: function (fn) { catchUps.push(fn); },
    start: function () { if (!started) { started = true; connect(); } }
  };
  // Offline, as the browser's events say and navigator.onLine (looked at now and then) says.
  window.addEventListener("offline", function () { if (started) lost(); });
  setInterval(function () {
    if (started && navigator.onLine === false) { if (stream) lost(); } else if (started && !stream) connect();
  }, 2000);
  window.addEventListener("online", function () { if (started) connect(); });

  if (!document.querySelector("[data-live]") || !window.EventSource) return;
  pxLive.onCatchUp(refreshEverything);
  pxLive.on(function (event) {
    if (!event.task_id) return;
    if (event.type === "task_messages") {
      live("messages").forEach(function (el) { if (el.dataset.task === event.task_id) pullMessages(el); });
      return;
    }
    live("tasks").forEach(refresh);
    live("task").forEach(function (el) { if (el.dataset.task === event.task_id) refresh(el); });
    live("messages").forEach(function (el) { if (el.dataset.task === event.task_id) pullMessages(el); });
  });
  pxLive.start();
})();
