// The inbox's live parts (issue 27 §3): the sidebar's unread count and the inbox list refresh when
// this person's inbox changes, and catch up after a reconnect. They ride on the page's live
// connection (px.js's pxLive, opened on pages with live parts, the inbox page among them); a page
// without one shows the count as it was loaded.
(function () {
  var count = document.getElementById("inbox-count");
  if (!count || !window.pxLive || !window.htmx) return;
  var me = count.dataset.user;
  function refresh() {
    htmx.trigger(count, "px-refresh");
    document.querySelectorAll('[data-live="inbox"]').forEach(function (el) { htmx.trigger(el, "px-refresh"); });
  }
  pxLive.on(function (event) {
    if (event.type === "inbox_changed" && event.user_id === me) refresh();
  });
  pxLive.onCatchUp(refresh);
})();
