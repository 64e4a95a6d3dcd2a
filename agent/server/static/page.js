// The status page's only script: keeps the list current without reloading the page.
// It polls /api/v1/applications (same query as the page) with If-None-Match every POLL_MS and,
// when the data changed, re-renders the counts, the rows and the pager from the JSON. Filters,
// sorting and paging links are fetched the same way (history.pushState keeps the address).
// Values are only ever set as text (textContent) or as encoded URL parts: never as HTML.
"use strict";
(function () {
  var POLL_MS = 3000;
  var COLUMNS = ["namespace", "name", "health", "sync", "ready", "reason", "commit", "changed",
                 "subject", "suspended", "age", "message"];  // keep in step with pages.COLUMNS
  var etag = null, query = location.search.replace(/^\?/, ""), busy = false;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function bdi(value) { return el("bdi", value === null || value === undefined ? "-" : value); }
  function stateClass(v) { return "s-" + String(v).replace(/[^A-Za-z0-9_-]/g, "_"); }

  function params(q, changes) {
    var p = new URLSearchParams(q);
    Object.keys(changes).forEach(function (k) { if (changes[k] === "") p.delete(k); else p.set(k, changes[k]); });
    return p.toString();
  }

  function cell(key, row) {
    var td = el("td", null, "c-" + key);
    if (key === "name") {
      var a = el("a");
      a.href = "/applications/" + encodeURIComponent(row.namespace || "") + "/" + encodeURIComponent(row.name || "");
      a.appendChild(bdi(row.name));
      td.appendChild(a);
      return td;
    }
    if (key === "health" || key === "sync") td.classList.add(stateClass(row[key]));
    if ((key === "message" || key === "subject") && row[key]) td.title = row[key];
    td.appendChild(bdi(row[key]));
    return td;
  }

  function renderRows(items) {
    var body = el("tbody");
    body.id = "rows";
    if (!items.length) {
      var td = el("td", "No Application matches.", "empty");
      td.colSpan = COLUMNS.length;
      body.appendChild(el("tr")).appendChild(td);
    }
    items.forEach(function (row) {
      var tr = el("tr");
      COLUMNS.forEach(function (key) { tr.appendChild(cell(key, row)); });
      body.appendChild(tr);
    });
    document.getElementById("rows").replaceWith(body);
  }

  function renderCounts(counts) {
    ["health", "sync"].forEach(function (group) {
      var box = document.querySelector('.counts[data-group="' + group + '"]');
      if (!box) return;
      while (box.children.length > 1) box.removeChild(box.lastChild);
      Object.keys(counts[group]).forEach(function (state) {
        var change = {}; change[group] = state; change.page = "";
        var a = el("a", null, "chip " + stateClass(state));
        a.href = "/?" + params(query, change);
        a.appendChild(bdi(state)); a.appendChild(document.createTextNode(" ")); a.appendChild(el("b", counts[group][state]));
        box.appendChild(a);
      });
    });
  }

  function renderPager(meta) {
    var nav = document.getElementById("pager");
    nav.replaceChildren();
    function go(page, text, on) {
      if (!on) return nav.appendChild(el("span", text, "page off"));
      var a = el("a", text, "page"); a.rel = text.toLowerCase();
      a.href = "/?" + params(query, {page: page === 1 ? "" : String(page)});
      nav.appendChild(a);
    }
    go(meta.page - 1, "Prev", meta.page > 1);
    nav.appendChild(el("span", "page " + meta.page + " of " + meta.pages + ", " + meta.total + " Applications")).id = "where";
    go(meta.page + 1, "Next", meta.page < meta.pages);
  }

  function renderPass(info) {
    var p = document.getElementById("pass");
    if (!p || !info) return;
    var ago = Math.max(0, Math.round(Date.now() / 1000 - info.end));
    p.replaceChildren(document.createTextNode("Last pass " + (info.ok ? "succeeded" : "failed") + " " + ago +
      "s ago at commit "), el("code", (info.commit || "-").slice(0, 8)),
      document.createTextNode(" (" + info.trigger + ", " + Number(info.seconds).toFixed(1) + "s)."));
  }

  function syncForm() {
    var p = new URLSearchParams(query), form = document.getElementById("filters");
    ["namespace", "health", "sync", "name", "sort", "order", "per"].forEach(function (k) {
      if (form.elements[k]) form.elements[k].value = p.get(k) || (k === "per" ? "50" : "");
    });
  }

  function load(force) {
    if (busy) return;
    busy = true;
    var headers = force || !etag ? {} : {"If-None-Match": etag};
    fetch("/api/v1/applications" + (query ? "?" + query : ""), {headers: headers, cache: "no-store"})
      .then(function (resp) {
        if (resp.status === 304 || !resp.ok) return null;
        etag = resp.headers.get("ETag");
        return resp.json();
      })
      .then(function (data) {
        if (!data) return;
        renderCounts(data.metadata.counts); renderRows(data.items); renderPager(data.metadata);
        renderPass(data.metadata.lastPass);
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      })
      .catch(function () { document.body.dataset.offline = "1"; })
      .then(function () { busy = false; });
  }

  function navigate(q) {
    query = q; etag = null;
    history.pushState(null, "", "/" + (q ? "?" + q : ""));
    syncForm(); load(true);
  }

  function start() {
    if (document.body.dataset.page !== "list") return;
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
    window.addEventListener("popstate", function () { query = location.search.replace(/^\?/, ""); syncForm(); load(true); });
    document.body.dataset.live = "1";
    setInterval(function () { if (!document.hidden) load(false); }, POLL_MS);
  }
  document.addEventListener("DOMContentLoaded", start);
})();
