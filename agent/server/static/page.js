// The status page's only script: keeps the open page current without reloading it.
// Every POLL_MS it asks /_parts + the page's own path and query, with If-None-Match (an unchanged
// page answers 304). The answer is HTML the server rendered and escaped, as it renders the page:
// each element marked data-part replaces the element of the same id here. The script renders no
// value itself. On the list, filters, sorting and paging links go through it too
// (history.pushState keeps the address); without the script they are plain links and a form.
"use strict";
(function () {
  var POLL_MS = 3000;
  var etag = null, busy = false, pending = false;

  function partsUrl() { return "/_parts" + location.pathname + location.search; }

  function swap(text) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    doc.querySelectorAll("[data-part][id]").forEach(function (part) {
      var here = document.getElementById(part.id);
      if (here && here.hasAttribute("data-part")) here.replaceWith(document.importNode(part, true));
    });
  }

  function load(force) {
    if (busy) { pending = pending || force; return; }
    busy = true;
    var url = partsUrl(), headers = force || !etag ? {} : {"If-None-Match": etag};
    fetch(url, {headers: headers, cache: "no-store"})
      .then(function (resp) {
        if (resp.status === 304 || !resp.ok || url !== partsUrl()) return null;
        etag = resp.headers.get("ETag");
        return resp.text();
      })
      .then(function (text) {
        if (text === null || url !== partsUrl()) return;
        swap(text);
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      })
      .catch(function () { document.body.dataset.offline = "1"; })
      .then(function () {
        busy = false;
        if (pending) { pending = false; load(true); }
      });
  }

  function syncForm() {
    var p = new URLSearchParams(location.search), form = document.getElementById("filters");
    ["namespace", "health", "sync", "name", "sort", "order", "per"].forEach(function (k) {
      if (form.elements[k]) form.elements[k].value = p.get(k) || (k === "per" ? "50" : "");
    });
  }

  function navigate(q) {
    history.pushState(null, "", "/" + (q ? "?" + q : ""));
    etag = null; syncForm(); load(true);
  }

  function startList() {
    document.getElementById("filters").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var p = new URLSearchParams(new FormData(ev.target));
      Array.from(p.keys()).forEach(function (k) { if (!p.get(k)) p.delete(k); });
      navigate(p.toString());
    });
    document.querySelectorAll("#filters select").forEach(function (s) {
      s.addEventListener("change", function () { s.form.requestSubmit(); });
    });
    document.body.addEventListener("click", function (ev) {
      var a = ev.target.closest && ev.target.closest("a");
      if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
      var href = a.getAttribute("href") || "";
      if (href.indexOf("/?") !== 0) return;
      ev.preventDefault();
      navigate(href.slice(2));
    });
    window.addEventListener("popstate", function () { etag = null; syncForm(); load(true); });
  }

  function start() {
    var page = document.body.dataset.page;
    if (page !== "list" && page !== "detail") return;
    if (page === "list") startList();
    document.body.dataset.live = "1";
    setInterval(function () { if (!document.hidden) load(false); }, POLL_MS);
  }
  document.addEventListener("DOMContentLoaded", start);
})();
