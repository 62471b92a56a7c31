// The inbox's live parts (issue 27 §3): the sidebar's unread count and the inbox list refresh when
// this person's inbox changes. They ride on the page's event stream (px.js opens it on pages with
// live parts, the inbox page among them); a page without one shows the count as it was loaded.
(function () {
  var count = document.getElementById("inbox-count");
  var stream = window.pxEvents;
  if (!count || !stream || !window.htmx) return;
  var me = count.dataset.user;
  stream.addEventListener("message", function (ev) {
    var event;
    try { event = JSON.parse(ev.data); } catch (e) { return; }
    if (event.type !== "inbox_changed" || event.user_id !== me) return;
    htmx.trigger(count, "px-refresh");
    document.querySelectorAll('[data-live="inbox"]').forEach(function (el) { htmx.trigger(el, "px-refresh"); });
  });
})();
