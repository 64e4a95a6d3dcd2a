"""The status page in a real browser: headless Debian chromium driven by playwright, against a real
``python -m agent run --ui-address`` on the real control plane and a real Git remote.

Set ``GITOPS_AGENT_SCREENSHOTS=DIR`` to also save a screenshot of each page there (``make
screenshots`` writes them into ``docs/images``). When chromium or playwright is missing
(``scripts/test-deps.sh`` installs chromium; playwright is in the ``test`` extra) the test is
skipped on a developer's machine, and fails when ``CI`` is set (CI services set it, and so does
``.ci/run``): there a skip would hide that the page went untested.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.cluster import free_port
from tests.support import app_yaml, wait_for
from tests.test_health import TOO_BIG
from tests.test_run import remote, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("crd")
ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HOSTILE = "<script>alert('subject')</script> \"quoted\" <img src=x onerror=alert(2)> \u202edesrever\u202c"
MANAGER = "<script>alert('manager')</script> \"q\" <img src=x onerror=alert(4)> javascript:alert(5)"
"""A field manager's name: the API server takes any printable text of up to 128 characters, and the
agent quotes the managers of a child it may not take in the Application's condition and Event."""
TOKEN = "a-token-for-the-status-page"
VIEWPORT = {"width": 1280, "height": 900}
CONTRAST = r"""() => {
  // WCAG 2.1 contrast of every visible element's own text against its nearest opaque background:
  // at least 4.5, or 3 for large text (24 px, or 18.66 px bold). Returns the body's colours and
  // the elements below that.
  const rgb = s => { const m = /rgba?\(([^)]+)\)/.exec(s); if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = c => c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const behind = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
    if (c && c[3] > 0) return c; } return [255, 255, 255, 1]; };
  const low = [];
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest("select, script, style") || !el.getClientRects().length) continue;
    if (!Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const st = getComputedStyle(el), size = parseFloat(st.fontSize);
    if (st.visibility !== "visible") continue;
    const need = size >= 24 || (Number(st.fontWeight) >= 700 && size >= 18.66) ? 3 : 4.5;
    const r = ratio(rgb(st.color), behind(el));
    if (r < need) low.push(`${el.tagName.toLowerCase()}.${el.className}: ${st.color} on ${behind(el)} = ${r.toFixed(2)}`);
  }
  const body = getComputedStyle(document.body);
  return {background: body.backgroundColor, color: body.color, low: low};
}"""


def missing(what: str) -> None:
    """Skip for want of ``what``; fail instead when the environment variable ``CI`` is set."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}, and CI is set: the status page's browser test may not be skipped in CI", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright import sync_api
    except ImportError:
        missing("the playwright package is not installed (it is in the test extra: pip install -e '.[test]')")
    if not os.path.exists(CHROMIUM):
        missing(f"{CHROMIUM} is not installed (scripts/test-deps.sh installs Debian's chromium when run as root)")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield launched
        launched.close()


def hostile_app(name: str, namespace: str) -> str:
    doc = yaml.safe_load(app_yaml(name, namespace=namespace))
    doc["metadata"]["annotations"] = {"note": HOSTILE + " javascript:alert(3) " + "long " * 300}
    return yaml.safe_dump(doc)


def requests_made(agent) -> float:
    """Requests the agent's client has sent so far: every request and watch (re)connection
    waits for the rate limit once, and that histogram counts each wait."""
    return agent.metric("gitops_agent_kube_api_rate_limit_wait_seconds_count")


def shoot(page, name: str) -> None:
    where = os.environ.get("GITOPS_AGENT_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"))


def cli(cluster, tmp_path, *args: str) -> dict:
    """``gitops-agent ARGS -o json`` against the cluster, parsed (its own Git cache)."""
    proc = subprocess.run([sys.executable, "-m", "agent", *args, "-o", "json", "--kubeconfig", str(cluster.kubeconfig)]
                          + (["--cache-dir", str(tmp_path / "cli-cache")] if args[0] == "explain" else []),
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")})
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def refused_in(context, url: str) -> bool:
    """True when the browser ``context`` is refused ``url``: the 401 page, or (chromium gives up
    after answering the server's Basic challenge with the wrong password, or with none) the
    navigation fails with ``ERR_INVALID_AUTH_CREDENTIALS``."""
    from playwright.sync_api import Error

    try:
        answer = context.new_page().goto(url)
    except Error as err:
        return "net::ERR_INVALID_AUTH_CREDENTIALS" in str(err)
    return (answer.status, answer.text()) == (401, "a token is needed (Authorization: Bearer TOKEN)\n")


def get(base: str, path: str, token: str | None = TOKEN) -> bytes:
    """The body of ``GET base+path``, with ``token`` as Bearer (None: none); HTTPError on 4xx."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=5).read()


def api(base: str, path: str) -> dict:
    return json.loads(get(base, path))


def same_as_cli(read_api, read_cli, what: str) -> None:
    """Wait until the API's answer equals the command's (both read again each time: a pass or an
    Event may come between the two reads); on timeout, compare the last two to show the difference."""
    last: list = []

    def equal() -> bool:
        last[:] = [read_api(), read_cli()]
        return last[0] == last[1]
    try:
        wait_for(equal, timeout=60, interval=1, what=what)
    except AssertionError:
        assert last[0] == last[1], what


def test_the_status_page_in_a_browser(browser, start_agent, remote, repo, namespaces, objects, cluster, tmp_path):
    shop, broken, other = namespaces(), namespaces(), namespaces()
    cluster.kubectl("-n", broken, "apply", "-f", "-", input=TOO_BIG)
    cluster.kubectl("-n", other, "create", "deployment", "taken", "--image=nginx:1.27", f"--field-manager={MANAGER}")
    for i in range(11):
        repo.write(f"shop/web-{i:02d}.yaml", app_yaml(f"web-{i:02d}", namespace=shop))
    repo.write("broken/stuck.yaml", app_yaml("stuck", namespace=broken, replicas=1))
    repo.write("shop/evil.yaml", hostile_app("evil", shop))
    held = yaml.safe_load(app_yaml("held", namespace=other))
    held["spec"]["suspend"] = True
    repo.write("other/held.yaml", yaml.safe_dump(held))  # health Suspended
    repo.write("other/taken.yaml", app_yaml("taken", namespace=other))  # sync OwnershipConflict, MANAGER quoted
    remote.push()
    repo.write("broken/stuck.yaml", app_yaml("stuck", namespace=broken, replicas=2))  # the diff to show
    first = remote.push()
    port = free_port()
    token_file = tmp_path / "ui-token"
    token_file.write_text(TOKEN + "\n")
    agent = start_agent(remote.url, "--path", ".", "--interval", "2", "--ui-address", f"127.0.0.1:{port}",
                        "--ui-token-file", str(token_file))
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: (objects.app(shop, "web-00") or {}).get("status", {}).get("lastSyncedCommit") == first,
             timeout=60, what="the first pass")
    dialogs: list[str] = []

    # refused without the token (or with a wrong one), in the browser and to any client; served with it
    for credentials in (None, {"username": "anyone", "password": "wrong"}):
        stranger = browser.new_context(http_credentials=credentials)
        assert refused_in(stranger, base + "/"), credentials
        stranger.close()
    for path in ("/", "/api/v1/applications", f"/applications/{shop}/evil", "/static/page.js"):
        for token in (None, "wrong"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                get(base, path, token=token)
            assert refused.value.code == 401 and refused.value.read() == b"a token is needed (Authorization: Bearer TOKEN)\n"
    assert get(base, "/static/page.js").startswith(b"// The status page's only script")
    context = browser.new_context(viewport=VIEWPORT, http_credentials={"username": "anyone", "password": TOKEN})
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    # the list shows the Applications of the commit
    page.goto(base + "/")
    rows = page.locator("#rows tr")
    assert rows.count() == 15
    assert page.locator("#rows tr", has_text="web-00").locator(".c-commit").inner_text() == first[:8]

    # a push changes a row, and the open page of its Application, without a reload
    page.evaluate("window.__marker = 'kept'")
    detail = context.new_page()
    detail.goto(f"{base}/applications/{shop}/web-00")
    detail.evaluate("window.__marker = 'kept'")
    assert first[:12] in detail.inner_text("dl.facts")
    repo.write("shop/web-00.yaml", app_yaml("web-00", namespace=shop, image="nginx:1.27"))
    second = remote.push()
    changed = page.locator("#rows tr", has_text="web-00").locator(".c-changed")
    wait_for(lambda: changed.inner_text() == second[:8], timeout=60, what="the row to show the new commit")
    assert page.evaluate("window.__marker") == "kept"
    assert int(page.evaluate("document.body.dataset.refreshed")) >= 1
    wait_for(lambda: second[:12] in detail.inner_text("dl.facts"), timeout=30, what="the page to show the new commit")
    assert "nginx:1.27" in detail.inner_text("#diff") and detail.evaluate("window.__marker") == "kept"
    detail.close()

    # the API: /api/v1/applications lists as get -o json prints, one Application as explain -o json says
    same_as_cli(lambda: api(base, f"/api/v1/applications?namespace={shop}&per=200")["items"],
                lambda: cli(cluster, tmp_path, "get", "-n", shop)["items"], "the list API to equal get -o json")

    # filters and paging (through the script: still no reload)
    page.select_option("select[name=namespace]", broken)
    wait_for(lambda: rows.count() == 1 and "stuck" in rows.first.inner_text(), timeout=30, what="the namespace filter")
    page.select_option("select[name=namespace]", "")
    page.select_option("select[name=health]", "Suspended")
    wait_for(lambda: rows.count() == 1 and "held" in rows.first.inner_text(), timeout=30, what="the health filter")
    page.select_option("select[name=health]", "")
    page.select_option("select[name=sync]", "OwnershipConflict")
    wait_for(lambda: rows.count() == 1 and "taken" in rows.first.inner_text(), timeout=30, what="the sync filter")
    assert "sync=OwnershipConflict" in page.url and page.evaluate("window.__marker") == "kept"
    page.select_option("select[name=sync]", "")
    page.fill("input[name=name]", "WEB-0")
    page.click("#filters button")
    wait_for(lambda: rows.count() == 10, timeout=30, what="the name filter")
    page.select_option("select[name=per]", "10")
    page.fill("input[name=name]", "")
    page.click("#filters button")
    wait_for(lambda: rows.count() == 10 and "page 1 of 2" in page.inner_text("#where"), timeout=30, what="page 1")
    page.click("#pager a[rel=next]")
    wait_for(lambda: rows.count() == 5 and "page 2 of 2" in page.inner_text("#where"), timeout=30, what="page 2")
    assert "page=2" in page.url and page.evaluate("window.__marker") == "kept"
    page.click("th[data-key=name] a")  # sort by name, descending
    wait_for(lambda: rows.first.locator(".c-name").inner_text() == "web-10", timeout=30, what="sorting")

    # a failing Application's page: the pod's reason and the diff
    wait_for(lambda: (objects.deployment(broken, "stuck") or {}).get("status", {}).get("replicas") == 2,
             timeout=60, what="the stuck pods")
    page.goto(f"{base}/applications/{broken}/stuck")
    wait_for(lambda: "Unschedulable" in page.inner_text(".pods") if page.locator(".pods").count() else
             page.reload() and False, timeout=60, what="the pod reason")
    diff = page.inner_text("#diff")
    assert "-  replicas: 1" in diff and "+  replicas: 2" in diff
    assert page.inner_text("#verdict").startswith("Progressing")
    assert first[:12] in page.inner_text(".history")
    same_as_cli(lambda: api(base, f"/api/v1/applications/{broken}/stuck"),
                lambda: cli(cluster, tmp_path, "explain", "stuck", "-n", broken, "--repo", remote.url),
                "the Application API to equal explain -o json")
    explained = api(base, f"/api/v1/applications/{broken}/stuck")
    assert page.inner_text("#verdict") == explained["verdict"]["text"]
    assert explained["pods"][0]["problems"][0]["reason"] == "Unschedulable"
    assert "FailedScheduling" in {e["reason"] for e in explained["events"]}  # the scheduler's, kept by run's watch
    wait_for(lambda: "FailedScheduling" in page.inner_text(".events"), timeout=30, what="the Events on the page")
    shoot(page, "status-page-application")

    # hostile content is shown as text: an annotation, and the subject of the commit that changed it
    repo.write("shop/evil.yaml", hostile_app("evil", shop).replace("replicas: 1", "replicas: 2"))
    repo.commit(HOSTILE)
    repo.git("push", "-q", "-f", str(remote.path), "main")
    wait_for(lambda: objects.app(shop, "evil")["status"].get("lastChangedCommit") == repo.head(), timeout=60,
             what="the hostile commit synced")
    page.goto(f"{base}/applications/{shop}/evil")
    text = page.inner_text("main")
    assert "<script>alert('subject')</script>" in text and "<img src=x onerror=alert(2)>" in text
    assert page.locator("main script, main img").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert HOSTILE in page.inner_text("dl.facts .subject")  # the commit that changed it
    page.goto(base + "/?name=evil")
    assert page.locator("#rows .c-subject").inner_text() == HOSTILE
    assert page.locator("#rows script, #rows img").count() == 0
    # ... and a condition's and an Event's message: the agent quotes the hand-made child's field manager
    page.goto(base + "/?name=taken")
    assert MANAGER in page.locator("#rows .c-message").inner_text()
    assert page.locator("#rows script, #rows img").count() == 0
    page.goto(f"{base}/applications/{other}/taken")
    assert page.inner_text("#verdict") == "Ownership conflict"
    wait_for(lambda: MANAGER in page.inner_text(".events"), timeout=30, what="the Warning Event on the page")
    conditions = page.locator("h2:text-is('Conditions') + .scroll")
    assert MANAGER in conditions.locator("tr", has_text="Synced").inner_text()
    assert page.locator("main script, main img, a[href^='javascript']").count() == 0
    time.sleep(0.5)
    assert dialogs == []

    # dark and light from the system setting: other colours, and every text readable on its background
    dark = browser.new_context(viewport=VIEWPORT, color_scheme="dark",
                               http_credentials={"username": "anyone", "password": TOKEN})
    night = dark.new_page()
    for path in ("/", f"/applications/{broken}/stuck"):  # the second: an amber verdict, pods, Events, a diff
        page.goto(base + path)
        night.goto(base + path)
        light_look, dark_look = page.evaluate(CONTRAST), night.evaluate(CONTRAST)
        assert light_look["low"] == [] and dark_look["low"] == [], (path, light_look["low"], dark_look["low"])
        assert dark_look["background"] != light_look["background"] and dark_look["color"] != light_look["color"]
        assert night.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
    dark.close()
    if os.environ.get("GITOPS_AGENT_SCREENSHOTS"):  # the docs' picture: once the pods are ready
        page.goto(base + "/")
        wait_for(lambda: page.locator("#rows .c-health", has_text="Healthy").count() >= 12, timeout=60,
                 what="the web pods ready")
        shoot(page, "status-page-list")

    # a page request sends no request to the API server
    for attempt in range(3):
        before = requests_made(agent)
        for path in ("/", f"/applications/{broken}/stuck", "/api/v1/applications", f"/api/v1/applications/{shop}/evil"):
            for _ in range(5):
                get(base, path)
        if requests_made(agent) == before:
            break
    else:
        pytest.fail("page requests went with API server requests three times in a row")

    # a phone's width
    phone = context.new_page()
    phone.set_viewport_size({"width": 390, "height": 844})
    phone.goto(base + "/")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    shoot(phone, "status-page-phone")
    phone.close()
    context.close()
    assert re.search(r"serving the status page on http://127\.0\.0\.1:\d+/", agent.output())
