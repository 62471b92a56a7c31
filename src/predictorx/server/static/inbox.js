// The inbox's live parts (issue 27 §3): the sidebar's unread count and the inbox list refresh when
// this person's inbox changes, and catch up after a reconnect. They ride on the page's live
// connection (px.js's pxLive), which this opens on every signed-in page — not only on pages with
// live parts of their own — so the count in the sidebar is current wherever the person is.
(function () {
  var count = document.getElementById("inbox-count");
  if (!count || !window.pxLive || !window.htmx || !window.EventSource) return;
  var me = count.dataset.user;
  function refresh() {
    htmx.trigger(count, "px-refresh");
    document.querySelectorAll('[data-live="inbox"]').forEach(function (el) { htmx.trigger(el, "px-refresh"); });
  }
  pxLive.on(function (event) {
    if (event.type === "inbox_changed" && event.user_id === me) refresh();
  });
  pxLive.onCatchUp(refresh);
  pxLive.start();
})();
