// Predictor X: editing an issue without losing work (the issue page only; issue 26 §1, §4, §10).
// Loaded after px.js, whose window.pxLive is the live connection.
(function () {
  "use strict";
  var issue = document.getElementById("issue");
  if (!issue || !window.pxLive) return;
  var number = issue.dataset.issue, api = "/api/issues/" + number, HX = { "HX-Request": "true" };
  function get(url) { return fetch(url, { headers: HX, credentials: "same-origin" }); }
  function $(sel, root) { return (root || issue).querySelector(sel); }
  function fieldForm(el) { return el && el.closest && el.closest("form.field-edit"); }
  function button(label, fn) {
    var b = document.createElement("button");
    b.type = "button"; b.className = "small-btn"; b.textContent = label;
    b.addEventListener("click", fn);
    return b;
  }
  // The message next to a control: a sentence, and buttons to act on it.
  function say(form, text, kind, buttons) {
    var msg = $(".field-msg", form);
    msg.textContent = text || "";
    msg.className = "field-msg small " + (kind || "");
    msg.hidden = !text;
    (buttons || []).forEach(function (b) { msg.append(" ", b); });
  }
  function state(form, value) { form.dataset.state = value || ""; }
  function editing(form) {
    var f = document.activeElement, pane = $(".edit-pane", form);
    return !!form.dataset.state || (pane && !pane.hidden) ||
      (f && form.contains(f) && !/^(BUTTON|SELECT)$/.test(f.tagName));
  }

  // Redraw the fields nobody is editing from the server's current state (/issues/N/live).
  var catching = false, again = false;
  function catchUp() {
    if (catching) { again = true; return; }
    catching = true;
    get("/issues/" + number + "/live").then(function (r) {
      return r.ok ? r.text() : "";
    }).then(function (html) {
      var tpl = document.createElement("template");
      tpl.innerHTML = html;
      tpl.content.querySelectorAll("[data-field-region]").forEach(function (fresh) {
        var old = $('[data-field-region="' + fresh.dataset.fieldRegion + '"]'), form = old && $("form", old);
        if (!old || (form && editing(form))) return;
        old.replaceWith(fresh);
      });
    }).catch(function () {}).finally(function () {
      catching = false;
      if (again) { again = false; catchUp(); }
    });
  }
  var soon = null;
  function catchUpSoon() { clearTimeout(soon); soon = setTimeout(catchUp, 150); }


  // Saving one field through the API, with the version the control was drawn at.
  function save(form) {
    var field = form.dataset.field, control = form.elements[field];
    var body = { version: parseInt(form.dataset.version, 10) || undefined }, url = api, method = "PATCH";
    if (field === "assignee") { url += "/assign"; method = "POST"; body.assignee = control.value || null; }
    else body[field] = control.value;
    state(form, "saving");
    say(form, "Saving…", "saving");
    var retry = button("Try again", function () { save(form); });
    fetch(url, { method: method, credentials: "same-origin", headers: { "Content-Type": "application/json" },
                 body: JSON.stringify(body) })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (answer) {
          if (r.ok) {
            form.dataset.version = String(answer.version);
            state(form, "");
            say(form, "Saved", "saved");
            setTimeout(function () { if (!form.dataset.state) say(form, ""); }, 1500);
            close(form);
            catchUp();
            if (field === "assignee" && window.htmx) htmx.trigger(document.body, "px-tasks-changed");
            return;
          }
          state(form, "error");
          if (r.status === 409 && answer.field) {
            // Someone changed this field meanwhile: their value stays until the person chooses.
            say(form, answer.detail, "error", [
              button("Keep theirs", function () { state(form, ""); say(form, ""); close(form); catchUp(); }),
              button("Save mine", function () { form.dataset.version = String(answer.version); save(form); })]);
          } else {
            say(form, "Not saved: " + (answer.detail || "the server answered " + r.status) + ". Your change is kept here.",
                "error", [retry]);
          }
        });
      }, function () {
        state(form, "error");
        say(form, "Not saved: the server could not be reached. Your change is kept here.", "error", [retry]);
      });
  }

  function open(form) {
    $(".edit-pane", form).hidden = false;
    form.closest("[data-field-region]").classList.add("editing");
    var input = $("input:not([type=hidden]), textarea", form);
    if (input) input.focus();
  }
  function close(form) {
    var pane = $(".edit-pane", form);
    if (!pane) return;
    pane.hidden = true;
    form.closest("[data-field-region]").classList.remove("editing");
  }

  issue.addEventListener("change", function (ev) {
    var form = fieldForm(ev.target);
    if (form && ev.target.tagName === "SELECT") save(form);
  });
  issue.addEventListener("submit", function (ev) {
    var form = fieldForm(ev.target);
    if (form) { ev.preventDefault(); save(form); }
  });
  issue.addEventListener("click", function (ev) {
    var t = ev.target.closest("[data-edit-open], [data-edit-cancel]");
    if (!t) return;
    if (t.dataset.editOpen) return open($("#field-" + t.dataset.editOpen));
    var form = fieldForm(t);
    state(form, ""); say(form, ""); close(form); catchUp();
  });

  // Comments: a counter, the limit in words, and the text kept whatever happens.
  function isComment(el) { return el && el.matches && el.matches("form.comment-form"); }
  function commentError(text) {
    var el = $("[data-comment-error]");
    if (el) { el.textContent = text || ""; el.hidden = !text; }
  }
  function fmt(n) { return n.toLocaleString("en-US"); }
  function tooLong(form) {
    var max = +form.dataset.max, n = $("textarea", form).value.length;
    return n > max ? "Comments can be at most " + fmt(max) + " characters; this one has " + fmt(n) + "." : "";
  }
  issue.addEventListener("input", function (ev) {
    var form = fieldForm(ev.target);
    if (form && form.dataset.state !== "saving") state(form, "dirty");
    form = ev.target.closest("form.comment-form");
    if (!form) return;
    var max = +form.dataset.max, n = ev.target.value.length, problem = tooLong(form), counter = $(".comment-count", form);
    counter.textContent = fmt(n) + " / " + fmt(max);
    counter.classList.toggle("over", n > max);
    ev.target.setAttribute("aria-invalid", String(n > max));
    if (problem || form.dataset.over) commentError(problem);
    form.dataset.over = problem ? "1" : "";
  });
  document.body.addEventListener("htmx:confirm", function (ev) {
    var problem = isComment(ev.detail.elt) && tooLong(ev.detail.elt);
    if (problem) { ev.preventDefault(); commentError(problem); }
  });
  // An answer that is not a posted comment (a 413, a 422, an error page) never replaces the box.
  document.body.addEventListener("htmx:beforeSwap", function (ev) {
    var status = ev.detail.xhr.status;
    if (!isComment(ev.detail.requestConfig && ev.detail.requestConfig.elt) || (status >= 200 && status < 300)) return;
    ev.detail.shouldSwap = false;
    var tpl = document.createElement("template");
    tpl.innerHTML = ev.detail.xhr.responseText || "";
    var said = tpl.content.querySelector(".form-error:not([hidden])");
    commentError("Not posted: " + (said ? said.textContent.trim() : "the server answered " + status + ".") + " Your text is kept.");
  });
  document.body.addEventListener("htmx:sendError", function (ev) {
    if (isComment(ev.detail.elt)) commentError("Not posted: the server could not be reached. Your text is kept.");
  });

  // New comments (anyone's, from any tab), appended after the last one shown.
  var pulling = false, pullAgain = false;
  function pullComments() {
    var list = $("#comment-list");
    if (pulling || !list) { pullAgain = pulling; return; }
    pulling = true;
    var shown = list.querySelectorAll("li.comment[id]"), last = shown.length ? shown[shown.length - 1].id.slice(8) : "";
    get("/issues/" + number + "/comments?after=" + encodeURIComponent(last)).then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        var tpl = document.createElement("template"), added = 0, total = $("[data-comment-total]");
        tpl.innerHTML = html;
        tpl.content.querySelectorAll("li.comment[id]").forEach(function (li) {
          if (!document.getElementById(li.id)) { list.appendChild(li); added++; }
        });
        if (!added) return;
        if ($("#no-comments")) $("#no-comments").remove();
        var n = +total.dataset.commentTotal + added;
        total.dataset.commentTotal = String(n);
        total.textContent = n + (n === 1 ? " comment" : " comments");
        if (added >= 30) pullAgain = true;  // a page at most: there may be more
      }).catch(function () {}).finally(function () {
        pulling = false;
        if (pullAgain) { pullAgain = false; pullComments(); }
      });
  }

  pxLive.on(function (event) {
    var mine = String(event.number) === number;
    if (event.type === "issue_changed" && mine) catchUpSoon();
    else if (event.type === "comment_added" && mine) pullComments();
    else if (event.task_id) catchUpSoon();  // a run moves its issue's status too
  });
  pxLive.onCatchUp(function () { catchUp(); pullComments(); });
  pxLive.start();
})();
