"""The status page without a cluster: its data (rows, filters, sorting, paging), its HTML (hostile
values stay text), its links to Git hosts, and its HTTP guards (read-only, headers, token, Host)."""

from __future__ import annotations

import base64
import datetime
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agent.server import cache as cachemod, detailpage, gitinfo, pages, ui, uiserver, views
from agent.views import explainview

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
HOSTILE = '<script>alert(1)</script>"\'><img src=x onerror=alert(2)> javascript:alert(3) \u202eevil\u202c ' + "x" * 500


def app(name: str, ns: str = "shop", health: str = "Healthy", synced: str = "True", **extra) -> dict:
    status = {"health": {"status": health, "message": extra.pop("message", "")},
              "lastSyncedCommit": "a" * 40, "lastChangedCommit": "b" * 40, "sourcePath": "apps/web.yaml",
              "conditions": [{"type": "Synced", "status": synced, "reason": "Synced" if synced == "True" else "SyncFailed",
                              "message": extra.pop("sync_message", "")},
                             {"type": "Ready", "status": "True" if health == "Healthy" else "False", "reason": health,
                              "message": extra.pop("ready_message", "")}]}
    return {"apiVersion": "heumsi.github.io/v1", "kind": "Application",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-01-02T03:00:00Z",
                         "resourceVersion": "1", "labels": extra.pop("labels", {}),
                         "annotations": extra.pop("annotations", {})},
            "spec": {"image": "nginx:1", "replicas": 1}, "status": status}


def source_with(*apps: dict) -> ui.Source:
    c = cachemod.Cache()
    c.listed("Application", list(apps))
    return ui.Source(c, None, gitinfo.Commits(None), repo_url="git@github.com:Org/apps.git")


def test_rows_filter_sort_page_and_count():
    apps = [app(f"web-{i:02d}", ns="a" if i % 2 else "b", health="Degraded" if i % 5 == 0 else "Healthy")
            for i in range(60)]
    src = source_with(*apps)
    out = src.listing(views.Query(), NOW)
    assert out["total"] == 60 and out["pages"] == 2 and len(out["items"]) == 50
    assert out["counts"]["health"] == {"Degraded": 12, "Healthy": 48}
    assert [r["name"] for r in out["items"][:2]] == ["web-00", "web-01"]
    q = views.Query.parse({"namespace": ["a"], "health": ["Degraded"], "sort": ["name"], "order": ["desc"]})
    out = src.listing(q, NOW)
    assert [r["name"] for r in out["items"]] == ["web-55", "web-45", "web-35", "web-25", "web-15", "web-05"]
    assert src.listing(views.Query(page=2), NOW)["items"][0]["name"] == "web-50"
    assert src.listing(views.Query(name="WEB-1"), NOW)["total"] == 10
    assert src.listing(views.Query(page=99), NOW)["page"] == 2  # past the end: the last page


def test_query_parse_falls_back_on_bad_values():
    q = views.Query.parse({"sort": ["__class__"], "page": ["-1"], "per": ["100000"], "name": ["x" * 999]})
    assert (q.sort, q.page, q.per, len(q.name)) == ("name", 1, 50, 253)


def test_hostile_values_are_text_in_the_list_and_the_detail():
    bad = app(HOSTILE[:50].replace("<", "a"), ns="x", health="Degraded", ready_message=HOSTILE, sync_message=HOSTILE,
              labels={"evil": HOSTILE}, annotations={HOSTILE[:30]: HOSTILE})
    bad["status"]["health"]["status"] = HOSTILE
    src = source_with(bad)
    html = pages.list_page(src.listing(views.Query(), NOW), views.Query(name=HOSTILE), {})
    e, found = src.explain("x", bad["metadata"]["name"], NOW)
    e["commits"]["changed"] = explainview.commit("b" * 40, {"subject": HOSTILE, "author": HOSTILE, "date": "x"})
    e["diff"] = HOSTILE
    e["events"] = [{"time": "t", "type": HOSTILE, "reason": HOSTILE, "object": "Pod/x", "message": HOSTILE, "count": 1}]
    e["tasks"] = [{"name": HOSTILE, "phase": HOSTILE, "job": HOSTILE, "startTime": HOSTILE, "message": HOSTILE}]
    page = detailpage.detail_page(e, found, views.row(found, NOW), "javascript:alert(1)")
    parts = detailpage.parts(e, found, views.row(found, NOW), "javascript:alert(1)")
    for doc in (html, page, parts):
        assert "<script>" not in doc.replace('<script src="/static/page.js" defer></script>', "")
        assert "<img" not in doc and "onerror=alert" not in doc.replace("onerror=alert(2)&gt;", "")
        assert not re.search(r'href="\s*javascript:', doc, re.I)
        assert "&lt;script&gt;" in doc
    assert "\u202e" in page and "<bdi>" in page  # right-to-left text kept, isolated


def test_commit_links_for_known_hosts_and_url_forms():
    sha = "0123456789abcdef0123456789abcdef01234567"
    for url in ("https://github.com/Org/apps.git", "ssh://git@github.com/Org/apps.git", "git@github.com:Org/apps.git",
                "https://user:secret@github.com/Org/apps"):
        assert gitinfo.commit_url(url, sha) == f"https://github.com/Org/apps/commit/{sha}"
    assert gitinfo.commit_url("git@gitlab.com:group/sub/apps.git", sha) == \
        f"https://gitlab.com/group/sub/apps/-/commit/{sha}"
    assert gitinfo.commit_url("https://gitea.example.com:3000/o/r", sha) == f"https://gitea.example.com:3000/o/r/commit/{sha}"
    assert gitinfo.commit_url("https://codeberg.org/o/r.git", sha) == f"https://codeberg.org/o/r/commit/{sha}"
    assert gitinfo.commit_url("https://git.example.com/o/r", sha) is None  # unknown host
    assert gitinfo.commit_url("/srv/git/apps", sha) is None
    assert gitinfo.commit_url("https://github.com/o/r", "javascript:alert(1)") is None
    assert gitinfo.shown("https://user:secret@github.com/Org/apps") == "github.com/Org/apps"


def test_the_page_explains_from_the_cache_as_explain_does():
    """``Source.explain`` is ``explainview.explanation`` of what the cache holds: the child with
    its managedFields (drift names the manager), the pods, the namespace's Events."""
    a = app("web", health="Progressing")
    a["metadata"]["uid"], a["spec"]["port"] = "u1", 80
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web", "namespace": "shop", "resourceVersion": "5", "managedFields": [
            {"manager": "kubectl-scale", "operation": "Update", "subresource": "scale",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "kube-controller-manager", "subresource": "status", "fieldsV1": {"f:status": {}}}]},
        "spec": {"replicas": 5}, "status": {}}
    waiting = {"kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop",
                                           "labels": {"heumsi.github.io/application": "web"}},
               "status": {"phase": "Pending", "containerStatuses": [
                   {"name": "app", "ready": False, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}}
    event = {"kind": "Event", "metadata": {"name": "e1", "namespace": "shop", "creationTimestamp": "2026-01-02T03:00:00Z"},
             "involvedObject": {"kind": "Pod", "name": "web-1", "uid": "x"}, "type": "Warning", "reason": "Failed",
             "message": "pull failed", "count": 2, "source": {"component": "kubelet"}}
    src = source_with(a)
    src.cache.event("ADDED", deployment)
    src.cache.listed("Pod", [waiting])
    src.cache.listed("Event", [cachemod.slim_event(event)])
    assert cachemod.slim_event({**event, "involvedObject": {"kind": "ReplicaSet", "name": "x"}}) is None
    e, _ = src.explain("shop", "web", NOW)
    children = {"Deployment": {**deployment, "metadata": {**deployment["metadata"],
                                                          "managedFields": deployment["metadata"]["managedFields"][:1]}}}
    assert e == explainview.explanation(a, children, [waiting], [event], NOW, {
        "available": False, "reason": "no repository", "url": None})
    assert e["pods"][0]["problems"][0]["reason"] == "ImagePullBackOff"
    assert e["events"][0]["message"] == "pull failed"
    assert {d["field"]: d["managers"] for d in e["drift"]}["spec.replicas"] == ["kubectl-scale"]


def test_cache_keeps_the_newest_copy_and_counts_versions():
    c = cachemod.Cache()
    new = app("web")
    new["metadata"]["resourceVersion"] = "10"
    c.seen(new)
    old = app("web")
    old["metadata"]["resourceVersion"] = "9"
    c.seen(old)
    assert c.get("Application", "shop", "web")["metadata"]["resourceVersion"] == "10"
    same = app("web", ns="shop")
    same["metadata"]["resourceVersion"] = "10"
    same["spec"]["replicas"] = 9  # a pass's copy (cut) at the same version: the watch's stays
    c.event("MODIFIED", new)
    c.seen(same)
    assert c.get("Application", "shop", "web")["spec"]["replicas"] == 1
    c.event("MODIFIED", same)  # ... and the watch's replaces a pass's
    assert c.get("Application", "shop", "web")["spec"]["replicas"] == 9
    v = c.version
    c.event("DELETED", new)
    assert c.get("Application", "shop", "web") is None and c.version == v + 1


@pytest.fixture
def server():
    started = []

    def start(token=None, anonymous=False, apps=(app("web"),)):
        s = uiserver.serve("127.0.0.1:0", source_with(*apps), token, anonymous)
        started.append(s)
        return f"http://127.0.0.1:{s.server_address[1]}"
    yield start
    for s in started:
        s.shutdown()
        s.server_close()


def fetch(url: str, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_every_answer_has_the_security_headers_and_other_methods_are_405(server):
    base = server()
    for path in ("/", "/applications/shop/web", "/api/v1/applications", "/api/v1/applications/shop/web",
                 "/static/page.js", "/static/page.css", "/nope"):
        code, headers, _ = fetch(base + path)
        assert code == (404 if path == "/nope" else 200), path
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert "'unsafe-inline'" not in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FOO"):
        code, headers, _ = fetch(base + "/api/v1/applications", method=method)
        assert (code, headers.get("Allow")) == (405, "GET, HEAD"), method


def test_json_has_an_etag_and_answers_304(server):
    base = server()
    code, headers, body = fetch(base + "/api/v1/applications")
    data = json.loads(body)
    assert (data["apiVersion"], data["kind"], data["items"][0]["metadata"]["name"]) == ("v1", "List", "web")
    assert data["items"][0] == app("web") and data["metadata"] == {"resourceVersion": ""}
    assert fetch(base + "/api/v1/applications", headers={"If-None-Match": headers["ETag"]})[0] == 304
    assert json.loads(fetch(base + "/api/v1/applications/shop/web")[2])["verdict"]["text"] == "Synced and healthy"
    assert fetch(base + "/api/v1/applications/shop/nope")[0] == 404
    for path in ("/_parts/", "/_parts/applications/shop/web"):
        code, headers, body = fetch(base + path)
        assert code == 200 and b"data-part" in body and b"<script" not in body
        assert fetch(base + path, headers={"If-None-Match": headers["ETag"]})[0] == 304


def test_the_api_list_filters_sorts_and_pages_as_get_prints(server):
    base = server(apps=[app(f"web-{i}", ns="a" if i % 2 else "b") for i in range(7)])
    data = json.loads(fetch(base + "/api/v1/applications?namespace=a&sort=name&order=desc&per=10")[2])
    assert [i["metadata"]["name"] for i in data["items"]] == ["web-5", "web-3", "web-1"]
    data = json.loads(fetch(base + "/api/v1/applications?per=10&name=web")[2])
    assert len(data["items"]) == 7 and "continue" not in data["metadata"]
    src = source_with(*[app(f"web-{i:02d}") for i in range(25)])
    first = src.applications(views.Query(per=10), NOW)
    assert first["metadata"] == {"resourceVersion": "", "continue": "2", "remainingItemCount": 15}
    then = src.applications(views.Query.parse({"continue": ["3"], "per": ["10"]}), NOW)
    assert [i["metadata"]["name"] for i in then["items"]] == [f"web-{i}" for i in range(20, 25)]


def test_token_is_required_as_bearer_or_basic(server):
    base = server(token="s3cret-token")
    assert fetch(base + "/")[0] == 401
    assert fetch(base + "/", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert fetch(base + "/", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
    basic = base64.b64encode(b"any:s3cret-token").decode()
    code, _, body = fetch(base + "/", headers={"Authorization": f"Basic {basic}"})
    assert code == 200 and b"s3cret-token" not in body


def test_loopback_without_token_answers_loopback_host_names_only(server):
    base = server()
    assert fetch(base + "/", headers={"Host": "evil.example.com"})[0] == 421
    assert fetch(base + "/", headers={"Host": "localhost:1234"})[0] == 200


def test_run_refuses_a_non_loopback_page_without_a_token_in_one_line(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "agent", "run", "--repo", str(tmp_path), "--ui-address", "0.0.0.0:0"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--ui-token-file" in proc.stderr and "not a loopback" in proc.stderr


STRUCTURE_CLASSES = {"home", "pass", "counts", "label", "chip", "sort", "empty", "page", "off", "scroll", "pods",
                     "drift", "events", "history", "muted", "verdict", "ok", "bad", "warn", "facts", "diff", "add",
                     "del", "hunk", "subject", "pairs", "crumbs"}


def test_class_names_come_from_an_allow_list_whatever_the_values():
    """Text from Events, pods, commits or a status never becomes a class: a state outside
    ``pages.STATE_CLASSES`` gets the neutral ``s-other``."""
    hostile = "Warning s-Healthy verdict ok\" onclick=x"
    bad = app("web", health="Degraded", message=hostile)
    bad["status"]["health"]["status"] = "Healthy s-Synced bad"
    src = source_with(bad)
    listing = src.listing(views.Query(), NOW)
    e, found = src.explain("shop", "web", NOW)
    e["events"] = [{"time": "t", "type": hostile, "reason": hostile, "object": "Pod/x", "message": hostile, "count": 1},
                   {"time": "t", "type": "Warning", "reason": "Healthy", "object": "Pod/x", "message": "Healthy",
                    "count": 1}]
    e["conditions"] = [{"type": hostile, "status": hostile, "reason": hostile, "message": hostile}]
    e["pods"] = [{"name": hostile, "phase": hostile, "ready": hostile, "problems": []}]
    e["tasks"] = [{"name": hostile, "phase": hostile, "job": hostile, "message": hostile}]
    row = views.row(found, NOW)
    allowed = STRUCTURE_CLASSES | {f"c-{k}" for k, _ in pages.COLUMNS} | {f"s-{v}" for v in pages.STATE_CLASSES} | {
        "s-other", "c-kind", "c-phase", "c-type", "c-status", "c-object", "c-field", "c-git", "c-live", "c-managers",
        "c-time", "c-count", "c-lastTransitionTime", "c-revision", "c-firstSyncedAt", "c-lastSyncedAt", "c-passes",
        "c-digest", "c-job", "c-startTime", "c-completionTime"}
    for doc in (pages.list_page(listing, views.Query(), {}), pages.list_parts(listing, views.Query(), {}),
                detailpage.detail_page(e, found, row, None)):
        used = {c for found_ in re.findall(r'class="([^"]*)"', doc) for c in found_.split()}
        assert used <= allowed, used - allowed
    page = detailpage.detail_page(e, found, row, None)
    assert '<td class="c-type s-other">' in page and '<td class="c-type s-Warning">' in page
    assert '<td class="c-status s-other">' in page  # a task's phase from the status: neutral unless known
    assert '<td class="c-reason">' in page and '<td class="c-message">' in page  # text columns never coloured
    assert pages.state_class("Healthy") == "s-Healthy" and pages.state_class("healthy x") == "s-other"
    assert pages.state_class(None) == "s-other"


def test_the_api_past_the_end_is_empty_and_bad_values_are_400_in_one_line():
    from agent.server import uiserver
    src = source_with(*[app(f"web-{i:02d}") for i in range(25)])
    code, body, _ = uiserver.answer(src, uiserver.API, "per=10&page=3")
    assert code == 200 and len(json.loads(body)["items"]) == 5 and "continue" not in json.loads(body)["metadata"]
    for past in ("per=10&page=4", "per=10&page=8", "per=10&continue=99"):
        code, body, _ = uiserver.answer(src, uiserver.API, past)
        assert code == 200 and json.loads(body) == {"apiVersion": "v1", "kind": "List", "items": [],
                                                    "metadata": {"resourceVersion": ""}}, past
    for bad, said in (("page=abc", "page=abc: must be a whole number from 1"), ("page=0", "page=0: must be"),
                      ("per=1000", "per=1000: must be one of 10, 25, 50, 100, 200"),
                      ("sort=bogus", "sort=bogus: must be one of name,"), ("order=up", "order=up: must be asc or desc"),
                      ("continue=-1", "continue=-1: must be")):
        code, body, kind = uiserver.answer(src, uiserver.API, bad)
        assert (code, kind) == (400, uiserver.JSON) and body.count(b"\n") == 1, bad
        assert json.loads(body)["error"].startswith(said), body
    code, body, _ = uiserver.answer(src, "/", "per=1000&page=8")  # the page falls back, and says so
    page = body.decode()
    assert code == 200 and 'id="notice"' in page and "per=1000: must be one of" in page
    assert "page 1 of 1, 25 Applications" in page or "page 1 of" in page
    assert 'id="notice"' not in uiserver.answer(src, "/", "per=10&page=2")[1].decode()


def test_page_details_title_verdict_colour_plural_and_one_event_time_format():
    a = app("web", health="Progressing")
    a["status"]["tasks"] = [{"name": "migrate", "digest": "3f2a9c1e00000000", "job": "web-migrate-3f2a9c1e",
                             "phase": "Running", "message": "waiting for Job web-migrate-3f2a9c1e to complete"}]
    assert "<h2>Tasks</h2>" not in detailpage.detail_page(*source_with(app("web")).explain("shop", "web", NOW),
                                                          views.row(app("web"), NOW), None)
    src = source_with(a)
    e, found = src.explain("shop", "web", NOW)
    long = "x" * 300 + " <b>"
    e["events"] = explainview.events([
        {"involvedObject": {"kind": "Application", "name": "web"}, "type": "Normal", "reason": "R", "message": long,
         "eventTime": "2026-01-02T03:00:00.123456Z"},
        {"involvedObject": {"kind": "Application", "name": "web"}, "type": "Normal", "reason": "R", "message": "m",
         "lastTimestamp": "2026-01-02T03:00:01Z"}], {("Application", "web")})
    assert [x["time"] for x in e["events"]] == ["2026-01-02T03:00:01Z", "2026-01-02T03:00:00Z"]
    page = detailpage.detail_page(e, found, views.row(found, NOW), None)
    assert f'title="{"x" * 300} &lt;b&gt;"' in page
    assert e["verdict"]["state"] == "Progressing" and 'class="verdict warn"' in page
    assert '<h2>Tasks</h2>' in page and '<td class="c-status s-Running"><bdi>Running</bdi></td>' in page
    assert page.index("<h2>Children</h2>") < page.index("<h2>Tasks</h2>") < page.index("<h2>Pods</h2>")
    listing = src.listing(views.Query(), NOW)
    assert "1 Application</span>" in pages.list_page(listing, views.Query(), {})
    assert '<link rel="icon" href="/static/favicon.svg"' in pages.list_page(listing, views.Query(), {})
    assert "/static/favicon.svg" in ui.static_files() and ui.static_files()["/static/favicon.svg"].startswith(b"<svg")


def test_the_favicon_is_served_and_favicon_ico_is_204(server):
    base = server()
    code, headers, body = fetch(base + "/static/favicon.svg")
    assert code == 200 and headers["Content-Type"] == "image/svg+xml" and body.startswith(b"<svg")
    assert fetch(base + "/favicon.ico")[0] == 204


def test_the_detail_page_shows_the_schedules_and_a_failed_run_only_when_there_are():
    assert detailpage.schedules([]) == ""
    html = detailpage.schedules([{"name": "report", "cronJob": "web-report", "active": 0,
                                  "lastSuccessfulTime": "2026-12-01T03:00:09Z",
                                  "lastFailure": {"job": "web-report-2", "time": "2026-12-02T03:00:30Z",
                                                  "reason": "BackoffLimitExceeded"}},
                                 {"name": "idle", "cronJob": "web-idle", "active": 0, "suspended": True}])
    assert html.startswith("<h2>Schedules</h2>")
    assert "web-report-2 2026-12-02T03:00:30Z BackoffLimitExceeded" in html
    assert "Suspended" in html and "<script" not in html


def test_the_detail_page_shows_the_tasks_a_failed_one_coloured_only_when_there_are():
    assert detailpage.tasks([]) == ""
    html = detailpage.tasks([{"name": "seed", "job": "web-seed-7b7b7b7b", "phase": "Failed",
                              "startTime": "2026-12-01T11:55:00Z", "completionTime": "2026-12-01T11:58:00Z",
                              "message": "Job web-seed-7b7b7b7b failed: BackoffLimitExceeded <b>"},
                             {"name": "migrate", "job": "web-migrate-3f2a9c1e", "phase": "Succeeded"}])
    assert html.startswith("<h2>Tasks</h2>")
    assert '<td class="c-status s-Failed"><bdi>Failed</bdi></td>' in html
    assert '<td class="c-status s-Succeeded"><bdi>Succeeded</bdi></td>' in html
    assert "web-seed-7b7b7b7b" in html and "2026-12-01T11:58:00Z" in html
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert html.index("seed") < html.index("migrate")


def test_the_list_shows_the_observed_age_and_the_detail_the_observed_time():
    seen = app("web", health="Progressing")
    seen["status"].update(observedAt="2026-01-02T02:52:05Z", observedBy="run")
    src = source_with(seen, app("old"))
    listing = src.listing(views.Query(), NOW)
    assert [(r["name"], r["observed"]) for r in listing["items"]] == [("old", None), ("web", "12m ago by run")]
    html = pages.list_page(listing, views.Query(), {})
    assert '<th data-key="observed">Observed</th>' in html  # not a sort link: an age of a text
    assert '<td class="c-observed"><bdi>12m ago by run</bdi></td>' in html
    e, found = src.explain("shop", "web", NOW)
    page = detailpage.detail_page(e, found, views.row(found, NOW), None)
    assert ('<dd class="s-Progressing"><bdi>Progressing</bdi> <span class="muted">observed '
            '<bdi>2026-01-02T02:52:05Z</bdi> by <bdi>run</bdi></span></dd>') in page
    later = detailpage.detail_page(e, found, views.row(found, NOW + datetime.timedelta(minutes=5)), None)
    assert page == later  # the time as written: the detail's bytes do not move with the clock (its poll answers 304)
    seen["status"]["observedBy"] = HOSTILE
    e, found = source_with(seen).explain("shop", "web", NOW)
    assert "<script>" not in detailpage.facts(e, views.row(found, NOW), None)
