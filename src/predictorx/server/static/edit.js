// Predictor X: the live connection every page shares, and editing an issue without losing work.
// Loaded before px.js, which registers its own live handlers on window.pxLive.
(function () {
  "use strict";

  // -- the live connection ----------------------------------------------------------------------
  // One EventSource on /api/events. A lost connection (the server stopped, the network or the
  // browser offline) says "Reconnecting…", the live dot stops being green, and the connection is
  // opened again until it answers; then every page part that listens catches up once.
  var handlers = [], catchUps = [];
  var stream = null, started = false, everOpen = false, lost = false, retries = 0, timer = null;

  function notice(text) {
    var el = document.getElementById("live-status");
    if (!el) {
      el = document.createElement("p");
      el.id = "live-status";
      el.className = "live-status";
      el.setAttribute("role", "status");
      document.body.appendChild(el);
    }
    el.textContent = text || "";
    el.hidden = !text;
  }

  function connectionLost() {
    document.body.classList.remove("live-on");
    lost = true;
    notice("Reconnecting…");
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(connect, Math.min(10000, 500 * Math.pow(2, retries++)));
  }

  function connect() {
    clearTimeout(timer);
    if (stream) { stream.close(); stream = null; }
    if (navigator.onLine === false) { connectionLost(); return; }
    var es = stream = new EventSource("/api/events");
    es.onopen = function () {
      if (es !== stream) return;
      retries = 0;
      document.body.classList.add("live-on");
      if (lost || everOpen) notice("");
      // After a reconnect, events may have been missed: fetch the current state once.
      if (everOpen) catchUps.forEach(function (fn) { fn(); });
      everOpen = true;
      lost = false;
    };
    es.onerror = function () {
      if (es !== stream) return;
      connectionLost();
      // The browser retries a dropped stream itself; one it gave up on (an error answer) we retry.
      if (es.readyState === 2) schedule();
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
  window.addEventListener("offline", function () {
    if (!started) return;
    if (stream) { stream.close(); stream = null; }
    connectionLost();
  });
  window.addEventListener("online", function () { if (started) connect(); });
  // Not every browser says so with an event: look at navigator.onLine now and then as well.
  setInterval(function () {
    if (!started) return;
    if (navigator.onLine === false && stream) { stream.close(); stream = null; connectionLost(); }
    else if (navigator.onLine !== false && !stream) connect();
  }, 3000);

  // -- the issue page -----------------------------------------------------------------------------
  var issue = document.getElementById("issue");
  if (!issue) return;
  var number = issue.dataset.issue;
  var api = "/api/issues/" + number;

  function fieldForm(el) { return el && el.closest && el.closest("form.field-edit"); }
  function message(form, text, kind) {
    var msg = form.querySelector(".field-msg");
    if (!msg) return;
    msg.textContent = "";
    msg.className = "field-msg small" + (kind ? " " + kind : "");
    msg.hidden = !text;
    if (typeof text === "string") msg.textContent = text;
    else if (text) msg.appendChild(text);
  }
  function setState(form, state) { form.dataset.state = state || ""; }
  function busy(form) {
    var f = document.activeElement;
    return !!form.dataset.state || (f && form.contains(f) && !/^(BUTTON|SELECT)$/.test(f.tagName)) ||
      !!(form.querySelector(".edit-pane") && !form.querySelector(".edit-pane").hidden);
  }
  function valueOf(form) {
    var control = form.elements[form.dataset.field];
    return control ? control.value : "";
  }

  // Redraw the fields nobody is editing from the server's current state.
  var catching = null, again = false;
  function catchUp() {
    if (catching) { again = true; return; }
    catching = fetch("/issues/" + number + "/live", { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 404) { gone(); return ""; }
        return r.ok ? r.text() : "";
      })
      .then(function (html) {
        if (!html) return;
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        tpl.content.querySelectorAll("[data-field-region]").forEach(function (fresh) {
          var name = fresh.dataset.fieldRegion;
          var old = issue.querySelector('[data-field-region="' + name + '"]');
          var form = old && old.querySelector("form.field-edit");
          if (!old || (form && busy(form))) return;
          var focused = document.activeElement, refocus = focused && old.contains(focused) && focused.name;
          old.replaceWith(fresh);
          if (refocus && fresh.querySelector("[name=" + refocus + "]")) fresh.querySelector("[name=" + refocus + "]").focus();
          if (window.htmx) htmx.process(fresh);
          if (name === "title") document.title = document.title.replace(/^(#\d+ ).*?( · Predictor X)$/, "$1" + fresh.querySelector("h1").textContent + "$2");
        });
      })
      .catch(function () {})
      .finally(function () {
        catching = null;
        if (again) { again = false; catchUp(); }
      });
  }
  var soon = null;
  function catchUpSoon() { clearTimeout(soon); soon = setTimeout(catchUp, 150); }

  function gone() {
    var note = document.getElementById("issue-gone");
    if (note) note.hidden = false;
    issue.querySelectorAll("form.field-edit select, form.field-edit input, form.field-edit textarea, form.field-edit button")
      .forEach(function (el) { el.disabled = true; });
  }

  // -- saving one field -----------------------------------------------------------------------------
  function conflictNote(form, answer) {
    var box = document.createElement("span");
    box.appendChild(document.createTextNode(answer.detail + " "));
    var keep = document.createElement("button");
    keep.type = "button";
    keep.className = "small-btn";
    keep.textContent = "Keep theirs";
    keep.addEventListener("click", function () { setState(form, ""); message(form, ""); closeEditor(form); catchUp(); });
    var mine = document.createElement("button");
    mine.type = "button";
    mine.className = "small-btn";
    mine.textContent = "Save mine";
    mine.addEventListener("click", function () { form.dataset.version = String(answer.version); save(form); });
    box.appendChild(keep);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(mine);
    return box;
  }

  function save(form) {
    var field = form.dataset.field, value = valueOf(form);
    var body = { version: parseInt(form.dataset.version, 10) || undefined };
    var url = api, method = "PATCH";
    if (field === "assignee") { url = api + "/assign"; method = "POST"; body.assignee = value || null; }
    else body[field] = value;
    setState(form, "saving");
    message(form, "Saving…", "saving");
    return fetch(url, {
      method: method, credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (answer) { return { r: r, answer: answer }; });
    }).then(function (res) {
      if (res.r.ok) {
        form.dataset.version = String(res.answer.version);
        form.querySelectorAll("input[name=version]").forEach(function (i) { i.value = res.answer.version; });
        setState(form, "");
        message(form, "Saved", "saved");
        setTimeout(function () { if (!form.dataset.state) message(form, ""); }, 1500);
        closeEditor(form);
        catchUp();
        if (field === "assignee" && window.htmx) htmx.trigger(document.body, "px-tasks-changed");
        return;
      }
      setState(form, "error");
      if (res.r.status === 409 && res.answer.field) message(form, conflictNote(form, res.answer), "error");
      else message(form, retryNote(form, "Not saved: " + (res.answer.detail || "the server answered " + res.r.status) +
                   ". Your change is kept here."), "error");
    }, function () {
      setState(form, "error");
      message(form, retryNote(form, "Not saved: the server could not be reached. Your change is kept here."), "error");
    });
  }

  function retryNote(form, text) {
    var box = document.createElement("span");
    box.appendChild(document.createTextNode(text + " "));
    var retry = document.createElement("button");
    retry.type = "button";
    retry.className = "small-btn";
    retry.textContent = "Try again";
    retry.addEventListener("click", function () { save(form); });
    box.appendChild(retry);
    return box;
  }

  function openEditor(name) {
    var form = document.getElementById("field-" + name);
    if (!form) return;
    var pane = form.querySelector(".edit-pane");
    pane.hidden = false;
    var region = form.closest("[data-field-region]");
    region.classList.add("editing");
    var input = pane.querySelector("input:not([type=hidden]), textarea");
    if (input) input.focus();
  }

  function closeEditor(form) {
    var pane = form.querySelector(".edit-pane");
    if (!pane) return;
    pane.hidden = true;
    form.closest("[data-field-region]").classList.remove("editing");
  }

  issue.addEventListener("change", function (ev) {
    var form = fieldForm(ev.target);
    if (form && ev.target.tagName === "SELECT") save(form);
  });
  issue.addEventListener("input", function (ev) {
    var form = fieldForm(ev.target);
    if (form && form.dataset.state !== "saving") setState(form, "dirty");
  });
  issue.addEventListener("submit", function (ev) {
    var form = fieldForm(ev.target);
    if (!form) return;
    ev.preventDefault();
    save(form);
  });
  issue.addEventListener("click", function (ev) {
    var opener = ev.target.closest("[data-edit-open]");
    if (opener) { openEditor(opener.dataset.editOpen); return; }
    var cancel = ev.target.closest("[data-edit-cancel]");
    if (cancel) {
      var form = fieldForm(cancel);
      setState(form, "");
      message(form, "");
      closeEditor(form);
      catchUp();
      return;
    }
    var tab = ev.target.closest("[data-md-tab]");
    if (tab) showTab(fieldForm(tab), tab.dataset.mdTab);
  });

  // Description: Write / Preview, the preview rendered by the server's own Markdown renderer.
  function showTab(form, which) {
    var area = form.querySelector("textarea"), pane = form.querySelector("[data-md-preview]");
    form.querySelectorAll("[data-md-tab]").forEach(function (b) { b.setAttribute("aria-pressed", String(b.dataset.mdTab === which)); });
    area.hidden = which === "preview";
    pane.hidden = which !== "preview";
    if (which !== "preview") { area.focus(); return; }
    pane.textContent = "Rendering…";
    fetch("/markdown/preview", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true" },
      body: "text=" + encodeURIComponent(area.value)
    }).then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) { pane.innerHTML = html; },
            function () { pane.textContent = "The preview could not be loaded; your text is kept."; });
  }

  // -- comments: a counter, the limit in words, and the text kept whatever happens --------------------
  function commentForm() { return issue.querySelector("form.comment-form"); }
  function commentError(text) {
    var form = commentForm(), el = form && form.querySelector("[data-comment-error]");
    if (!el) return;
    el.textContent = text || "";
    el.hidden = !text;
  }
  function fmt(n) { return n.toLocaleString("en-US"); }
  function tooLong(form) {
    var max = parseInt(form.dataset.max, 10), n = form.querySelector("textarea").value.length;
    return n > max ? "Comments can be at most " + fmt(max) + " characters; this one has " + fmt(n) + "." : "";
  }
  function count(form) {
    var area = form.querySelector("textarea"), counter = form.querySelector(".comment-count");
    var max = parseInt(form.dataset.max, 10), n = area.value.length;
    if (counter) { counter.textContent = fmt(n) + " / " + fmt(max); counter.classList.toggle("over", n > max); }
    area.setAttribute("aria-invalid", String(n > max));
    var problem = tooLong(form);
    if (problem) commentError(problem);
    else if (form.dataset.overShown) commentError("");
    form.dataset.overShown = problem ? "1" : "";
  }
  issue.addEventListener("input", function (ev) {
    var form = ev.target.closest && ev.target.closest("form.comment-form");
    if (form) count(form);
  });
  document.body.addEventListener("htmx:confirm", function (ev) {
    var form = ev.detail.elt;
    if (!form.matches || !form.matches("form.comment-form")) return;
    var problem = tooLong(form);
    if (problem) { ev.preventDefault(); commentError(problem); }
  });
  // An answer that is not the comments panel (the server down, a 413, an error page) never
  // replaces the box: the text stays, and the reason is shown above it.
  document.body.addEventListener("htmx:beforeSwap", function (ev) {
    var form = ev.detail.requestConfig && ev.detail.requestConfig.elt;
    if (!form || !form.matches || !form.matches("form.comment-form")) return;
    var status = ev.detail.xhr.status;
    if (status >= 200 && status < 300) return;
    var keptText = form.querySelector("textarea").value;
    ev.detail.shouldSwap = false;
    var tpl = document.createElement("template");
    tpl.innerHTML = ev.detail.xhr.responseText || "";
    var said = tpl.content.querySelector(".form-error, [data-comment-error]:not([hidden])");
    commentError("Not posted: " + (said ? said.textContent.trim() : "the server answered " + status) + " Your text is kept.");
    form.querySelector("textarea").value = keptText;
  });
  document.body.addEventListener("htmx:sendError", function (ev) {
    var form = ev.detail.elt;
    if (form && form.matches && form.matches("form.comment-form")) {
      commentError("Not posted: the server could not be reached. Your text is kept; post it again when it is back.");
    }
  });

  // New comments (anyone's, from any tab), appended after the last one shown.
  var pulling = false, pullAgain = false;
  function pullComments() {
    if (pulling) { pullAgain = true; return; }
    var list = document.getElementById("comment-list");
    if (!list) return;
    pulling = true;
    var shown = list.querySelectorAll("li.comment[id]");
    var last = shown.length ? shown[shown.length - 1].id.replace(/^comment-/, "") : "";
    fetch("/issues/" + number + "/comments?after=" + encodeURIComponent(last), { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        var added = 0;
        tpl.content.querySelectorAll("li.comment[id]").forEach(function (li) {
          if (document.getElementById(li.id)) return;
          list.appendChild(li);
          added++;
        });
        if (!added) return;
        var empty = document.getElementById("no-comments");
        if (empty) empty.remove();
        var total = issue.querySelector("[data-comment-total]");
        if (total) {
          var n = parseInt(total.dataset.commentTotal, 10) + added;
          total.dataset.commentTotal = String(n);
          total.textContent = n + (n === 1 ? " comment" : " comments");
        }
        if (added === 30) pullAgain = true;  // a page at most: there may be more
      })
      .catch(function () {})
      .finally(function () {
        pulling = false;
        if (pullAgain) { pullAgain = false; pullComments(); }
      });
  }

  pxLive.on(function (event) {
    if (event.type === "issue_changed" && String(event.number) === number) catchUpSoon();
    else if (event.type === "comment_added" && String(event.number) === number) pullComments();
    else if (event.type === "issue_deleted" && String(event.number) === number) gone();
    else if (event.task_id) catchUpSoon();  // a run moves its issue's status too
  });
  pxLive.onCatchUp(function () { catchUp(); pullComments(); });
  pxLive.start();
})();
