"""Fail safe: bad input, faults and hostile repositories lose nothing (issue 5).

`python -m agent sync --once` against the real control plane, with remotes that refuse, fail
or hang (tests/faults.py), broken and hostile repositories, a control plane without the CRD and
a concurrent writer. Each test starts from a first commit synced with every trio present and
asserts on the cluster objects (UIDs, resourceVersions, status), the exit code and the output.

Not here (other files): `run` with a CRD installed later (8), the API server stopping
mid-pass (9), `kill -9` of the agent mid-pass (12).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from tests import cluster as cluster_mod, faults
from tests.support import Agent, app_yaml, wait_for

pytestmark = pytest.mark.usefixtures("crd")

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("Application", "Deployment", "Service")
CRD_NAME = "applications.heumsi.github.io"


# -- helpers ---------------------------------------------------------------------------------------

def sync_ok(agent, source, namespace, *args, **kwargs):
    proc = agent.sync(source, "--namespace", namespace, *args, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def timed_sync(agent, source, namespace, *args, timeout: float = 60, **kwargs):
    started = time.monotonic()
    proc = agent.sync(source, "--namespace", namespace, *args, timeout=timeout, **kwargs)
    return proc, time.monotonic() - started


def error_lines(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def error_message(proc) -> str:
    """stderr from the first ``error:`` line on (a Git error may span several lines)."""
    start = proc.stderr.find("error:")
    return proc.stderr[start:] if start >= 0 else ""


def failed_fetch(agent, url, namespace: str, says: str, what: str):
    """Run sync against a failing remote with --fetch-timeout 1 and assert the common outcome:
    exit 2, one error line that says ``says`` and that nothing changed.
    Returns (CompletedProcess, the error message)."""
    # killed at 30 s: a run that ignored --fetch-timeout 1 would wait the 60 s default. No tighter
    # bound on the wall clock: a loaded machine stretches the agent's start-up, not its timeout.
    proc, seconds = timed_sync(agent, url, namespace, "--fetch-timeout", "1", timeout=30)
    print(f"{what}: exit {proc.returncode} in {seconds:.1f}s")
    assert proc.returncode == 2, what
    assert len(error_lines(proc)) == 1, proc.stderr
    message = error_message(proc)
    assert says in message.lower() and "nothing was changed or pruned" in message, message
    return proc, message


def container(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]["containers"][0]


def image(objects, namespace: str, name: str) -> str:
    return container(objects.deployment(namespace, name))["image"]


def uids(objects, namespace: str, names) -> dict:
    """UID of every trio object, keyed by ``Kind/name`` (None when absent)."""
    out = {}
    for name in names:
        for kind, obj in zip(KINDS, objects.trio(namespace, name)):
            out[f"{kind}/{name}"] = obj["metadata"]["uid"] if obj else None
    return out


def synced_commit(objects, namespace: str, name: str) -> str | None:
    return (objects.app(namespace, name).get("status") or {}).get("lastSyncedCommit")


def conditions(app: dict) -> dict:
    return {c["type"]: c for c in (app.get("status") or {}).get("conditions", [])}


def _without_source_condition(app: dict) -> dict:
    """The Application as a pass that could not read its source may leave it: everything but
    its resourceVersion, managedFields and a ``SourceAvailable`` condition (issue 32: the one
    write such a pass makes, on status, so the cluster says Git is not seen)."""
    meta = {k: v for k, v in app["metadata"].items() if k not in ("resourceVersion", "managedFields")}
    status = dict(app.get("status") or {})
    status["conditions"] = [c for c in status.get("conditions", []) if c.get("type") != "SourceAvailable"]
    return {**app, "metadata": meta, "status": status}


class Untouched:
    """The trios of ``names`` as they are now; ``check()`` asserts nothing was deleted,
    recreated or written since (same UIDs and resourceVersions, same lastSyncedCommit), but
    the Applications' ``SourceAvailable=False`` condition, which must be there when
    ``source_down`` (the pass could not fetch or read the source)."""

    def __init__(self, objects, namespace: str, names):
        self.objects, self.namespace, self.names = objects, namespace, list(names)
        self.uids = uids(objects, namespace, self.names)
        self.versions = objects.versions(namespace, self.names)
        self.apps = {n: _without_source_condition(objects.app(namespace, n)) for n in self.names}
        self.commits = {n: synced_commit(objects, namespace, n) for n in self.names}
        assert all(self.uids.values()), self.uids

    def check(self, what: str = "", source_down: bool = False) -> None:
        assert uids(self.objects, self.namespace, self.names) == self.uids, f"{what}: an object was deleted or recreated"
        versions = self.objects.versions(self.namespace, self.names)
        children = {k: v for k, v in versions.items() if not k.startswith("Application/")}
        assert children == {k: v for k, v in self.versions.items() if k in children}, f"{what}: a child was written"
        for name in self.names:
            app = self.objects.app(self.namespace, name)
            assert _without_source_condition(app) == self.apps[name], f"{what}: Application/{name} was written"
            if versions[f"Application/{name}"] != self.versions[f"Application/{name}"]:
                found = conditions(app).get("SourceAvailable") or {}
                assert found.get("status") == "False", f"{what}: Application/{name} was written, not for SourceAvailable"
            elif source_down:
                assert "SourceAvailable" in conditions(app), f"{what}: Application/{name} does not say Git is not seen"
        assert {n: synced_commit(self.objects, self.namespace, n) for n in self.names} == self.commits, what


# -- 1. the remote becomes unreachable --------------------------------------------------------------

OUTAGES = (  # mode, what stderr must say (lower-cased), runs
    (faults.REFUSED, "couldn't connect"),
    (faults.UNAVAILABLE, "503"),
    (faults.HANG, "no answer within 1s"),
)


def test_remote_outage_refused_503_and_hang_changes_nothing_and_the_cache_does_not_grow(
        agent, repo, namespace, objects, tmp_path):
    """One remote URL (Git over HTTP on loopback) refuses connections, answers 503, then accepts
    and never answers; `sync` runs three times in each state. Upstream has meanwhile moved on
    (web bumped, api removed), so any pass that acted would show. Then the remote returns."""
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.write("api.yaml", app_yaml("api"))
    first = repo.commit("first")
    bare = faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        url = server.url("apps.git")
        sync_ok(agent, url, namespace)
        before = Untouched(objects, namespace, ["web", "api"])
        assert before.commits == {"web": first, "api": first}
        repo.write("web.yaml", app_yaml("web", image="nginx:2"))
        repo.remove("api.yaml")
        second = repo.commit("bump web, remove api")
        faults.push(repo.path, bare)
        cache = faults.tree_state(agent.cache_dir)
        for mode, says in OUTAGES:
            server.set_mode(mode)
            for attempt in range(1, 4):
                what = f"{mode} run {attempt}"
                proc, message = failed_fetch(agent, url, namespace, says, what)
                assert f"fetching {url} failed" in message
                assert "commit: none" in proc.stdout and "0 pruned" in proc.stdout
                before.check(what)
                now = faults.tree_state(agent.cache_dir)
                assert now.entries == cache.entries, f"{what}: cache entries changed: " \
                    f"{sorted(now.entries ^ cache.entries)}"
                assert now.total_bytes <= cache.total_bytes, f"{what}: cache grew"
        server.set_mode(faults.OK)
        proc = sync_ok(agent, url, namespace)
    assert f"commit {second}" in proc.stdout
    assert image(objects, namespace, "web") == "nginx:2"
    assert objects.app(namespace, "web")["metadata"]["uid"] == before.uids["Application/web"]
    assert synced_commit(objects, namespace, "web") == second
    assert objects.trio(namespace, "api") == (None, None, None)


def test_unreachable_remotes_of_every_kind_change_nothing_then_the_remote_returns(
        agent, repo, namespace, objects, tmp_path):
    """A real bare repository synced over file://, then moved away; meanwhile `sync` is pointed
    at a closed port, a 503 server and a server that never answers (--fetch-timeout 1), three
    runs each. Nothing changes, no run takes long, repeated runs do not grow the cache, the
    mirror of the good remote is not touched; moving the repository back, the next run syncs."""
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.write("api.yaml", app_yaml("api"))
    first = repo.commit("first")
    bare = faults.bare_clone(repo.path, tmp_path / "remote" / "apps.git")
    good = f"file://{bare}"
    sync_ok(agent, good, namespace)
    before = Untouched(objects, namespace, ["web", "api"])
    repo.write("web.yaml", app_yaml("web", image="nginx:2"))
    repo.remove("api.yaml")
    second = repo.commit("bump web, remove api")
    faults.push(repo.path, bare)
    cache0 = faults.tree_state(agent.cache_dir)
    shutil.move(bare, tmp_path / "away.git")
    with faults.GitHttpServer(tmp_path / "srv", faults.UNAVAILABLE) as s503, \
            faults.GitHttpServer(tmp_path / "srv", faults.HANG) as slow:
        remotes = (
            ("moved away", good, "fetching"),
            ("bad host", "https://127.0.0.1:1/x.git", "couldn't connect"),
            ("503", s503.url("x.git"), "503"),
            ("slow", slow.url("x.git"), "no answer within 1s"),
        )
        for label, url, says in remotes:
            after_first = None
            for attempt in range(1, 4):
                what = f"{label} run {attempt}"
                proc, message = failed_fetch(agent, url, namespace, says, what)
                before.check(what)
                now = faults.tree_state(agent.cache_dir)
                assert cache0.entries <= now.entries, f"{what}: the good mirror lost files"
                mirror = {e for e in now.entries if e in cache0.entries}
                assert mirror == cache0.entries
                if after_first is None:
                    after_first = now
                else:
                    assert now.entries == after_first.entries, f"{what}: cache entries changed"
                    assert now.total_bytes <= after_first.total_bytes, f"{what}: the cache grew"
    shutil.move(tmp_path / "away.git", bare)
    proc = sync_ok(agent, good, namespace)
    assert f"commit {second}" in proc.stdout
    assert image(objects, namespace, "web") == "nginx:2"
    assert synced_commit(objects, namespace, "web") == second
    assert objects.app(namespace, "web")["metadata"]["uid"] == before.uids["Application/web"]
    assert objects.trio(namespace, "api") == (None, None, None)
    assert first != second


def test_a_failed_first_fetch_leaves_nothing_in_the_cache(agent, tmp_path):
    """A remote never fetched before that cannot be reached must not leave a mirror behind:
    every typo or dead URL would otherwise add a directory to the cache for good."""
    with faults.GitHttpServer(tmp_path / "srv", faults.UNAVAILABLE) as s503:
        for url in ("https://127.0.0.1:1/x.git", s503.url("x.git")):
            for _ in range(3):  # fails before the cluster is read: no namespace needed
                proc = agent.sync(url, "--namespace", "default", "--fetch-timeout", "1", timeout=30)
                assert proc.returncode == 2
                assert faults.tree_state(agent.cache_dir).entries == frozenset(), \
                    f"{url}: {sorted(faults.tree_state(agent.cache_dir).entries)[:5]}"


# -- 2. the last Application file is removed -----------------------------------------------------

def test_removing_the_last_application_is_refused_unless_allow_empty(agent, repo, namespace, objects):
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.write("apps/README.md", "Applications live here.\n")
    repo.write("apps/placeholder.yaml", "# no Applications in this file\n")
    first = repo.commit("first")
    sync_ok(agent, repo.path, namespace, "--path", "apps")
    before = Untouched(objects, namespace, ["web"])
    repo.remove("apps/web.yaml")
    repo.commit("remove the last Application")
    for attempt in range(2):
        proc = agent.sync(repo.path, "--namespace", namespace, "--path", "apps")
        assert proc.returncode == 2
        errors = error_lines(proc)
        assert len(errors) == 1 and "--allow-empty" in errors[0], proc.stderr
        assert "would delete the 1 Application the agent owns" in errors[0], errors[0]
        assert "pruned" not in proc.stdout.replace("0 pruned", "")
        before.check(f"run {attempt}")
        assert synced_commit(objects, namespace, "web") == first
    proc = sync_ok(agent, repo.path, namespace, "--path", "apps", "--allow-empty")
    for kind in KINDS:
        assert f"{kind}/{namespace}/web pruned" in proc.stdout
    assert objects.trio(namespace, "web") == (None, None, None)



def test_removing_the_last_file_removes_the_path_and_only_allow_empty_prunes(agent, repo, namespace, objects):
    """Git keeps no empty directories: removing the last file under --path removes the path."""
    repo.write("keep.txt", "the repository root keeps a file\n")
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("first")
    sync_ok(agent, repo.path, namespace, "--path", "apps")
    repo.remove("apps/web.yaml")
    repo.commit("remove the last file under apps/")
    proc = agent.sync(repo.path, "--namespace", namespace, "--path", "apps")
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "--allow-empty" in proc.stderr
    assert all(objects.trio(namespace, "web"))
    proc = sync_ok(agent, repo.path, namespace, "--path", "apps", "--allow-empty")
    assert objects.trio(namespace, "web") == (None, None, None)


# -- 3. odd but valid files next to a broken one -----------------------------------------------------

def test_odd_valid_files_sync_and_a_broken_file_blocks_pruning_and_keeps_its_trio(
        agent, repo, namespace, objects):
    repo.write("multi.yaml", app_yaml("one") + "---\n" + app_yaml("two"))
    repo.write("tabs.yaml", app_yaml("tabbed", image="nginx:1"))
    repo.write("gone.yaml", app_yaml("gone"))
    first = repo.commit("first")
    sync_ok(agent, repo.path, namespace)
    kept = Untouched(objects, namespace, ["tabbed", "gone"])

    repo.write("multi.yaml", "# a comment line\n---\n" + app_yaml("one", image="nginx:2")
               + "---\n---\n---\n" + app_yaml("two", image="nginx:2") + "---\n")
    repo.write("only-separator.yaml", "---\n")
    repo.write("only-comments.yaml", "# nothing here\n# nor here\n")
    repo.write_bytes("bom-crlf.yaml", b"\xef\xbb\xbf" + app_yaml("crlf", image="nginx:2").replace("\n", "\r\n").encode())
    repo.write("tabs.yaml", "apiVersion: heumsi.github.io/v1\nkind: Application\nmetadata:\n"
                            "\tname: tabbed\nspec:\n  image: nginx:2\n  replicas: 1\n  port: 80\n")
    repo.remove("gone.yaml")
    second = repo.commit("odd files, one broken")
    proc = agent.sync(repo.path, "--namespace", namespace)

    assert proc.returncode == 2
    errors = error_lines(proc)
    assert any("tabs.yaml:4" in e for e in errors), proc.stderr
    for fine in ("multi.yaml", "only-separator.yaml", "only-comments.yaml", "bom-crlf.yaml"):
        assert fine not in proc.stderr, f"{fine} is valid but was reported: {proc.stderr}"
    # valid ones sync
    for name in ("one", "two", "crlf"):
        assert all(objects.trio(namespace, name)), name
        assert image(objects, namespace, name) == "nginx:2"
        assert synced_commit(objects, namespace, name) == second
    # nothing pruned; the broken Application keeps its trio untouched
    assert uids(objects, namespace, ["tabbed", "gone"]) == kept.uids
    assert image(objects, namespace, "tabbed") == "nginx:1"
    for name in ("tabbed", "gone"):
        for kind in ("Deployment", "Service"):
            assert objects.versions(namespace, [name])[f"{kind}/{name}"] == kept.versions[f"{kind}/{name}"]
    assert "pruned" not in proc.stdout.replace("0 pruned", "")
    # the broken Application's status: attempted the new commit, still synced at the old one
    tabbed = objects.app(namespace, "tabbed")
    assert tabbed["status"]["lastSyncedCommit"] == first
    assert tabbed["status"]["lastAttemptedCommit"] == second
    synced = conditions(tabbed)["Synced"]
    assert synced["status"] == "False" and "tabs.yaml" in synced["message"], synced
    assert conditions(tabbed)["Ready"]["status"] == "False"


def test_application_kept_only_because_pruning_was_blocked_keeps_a_truthful_status(
        agent, repo, namespace, objects):
    """An owned Application whose file was deleted in a commit that also holds a broken file
    is kept (pruning blocked). Its status must still hold the commit it was last synced at, say
    it is not in sync with the new one, and be written without error (the status patch is a
    merge patch: keys left out are not removed), once: a second pass writes nothing."""
    repo.write("gone.yaml", app_yaml("gone"))
    repo.write("bad.yaml", app_yaml("bad"))
    first = repo.commit("first")
    sync_ok(agent, repo.path, namespace)
    repo.remove("gone.yaml")
    repo.write("bad.yaml", app_yaml("bad", replicas=-1))
    second = repo.commit("remove gone, break bad")
    versions = []
    for run in range(2):
        proc = agent.sync(repo.path, "--namespace", namespace)
        assert proc.returncode == 2
        assert all(objects.trio(namespace, "gone"))
        assert "status write did not hold" not in proc.stderr, proc.stderr
        assert [e for e in error_lines(proc) if "gone" in e] == [], proc.stderr
        app = objects.app(namespace, "gone")
        assert app["status"]["lastSyncedCommit"] == first
        assert app["status"]["lastAttemptedCommit"] == second
        assert conditions(app)["Synced"]["status"] == "False"
        versions.append(app["metadata"]["resourceVersion"])
    assert versions[0] == versions[1], "the second pass rewrote the status"


# -- 4. the same Application twice, and a duplicate key ----------------------------------------------

def test_duplicate_definitions_and_duplicate_keys_change_nothing_for_their_identity(
        agent, repo, namespace, objects):
    repo.write("a.yaml", app_yaml("same", image="nginx:0"))
    repo.write("c.yaml", app_yaml("dup", image="nginx:0"))
    repo.write("d.yaml", app_yaml("other", image="nginx:0"))
    repo.commit("first")
    sync_ok(agent, repo.path, namespace)
    before = Untouched(objects, namespace, ["same", "dup"])
    generations = {n: objects.app(namespace, n)["metadata"]["generation"] for n in ("same", "dup")}

    repo.write("a.yaml", app_yaml("same", image="nginx:1"))
    repo.write("b.yaml", app_yaml("same", image="nginx:2", namespace=namespace))  # same identity, spelled out
    repo.write("c.yaml", app_yaml("dup", image="nginx:1").replace("  replicas: 1\n",
                                                                   "  replicas: 1\n  image: nginx:2\n"))
    repo.write("d.yaml", app_yaml("other", image="nginx:1"))
    repo.commit("same twice, duplicate key")
    app_versions = []
    for run in range(1, 4):
        proc = agent.sync(repo.path, "--namespace", namespace)
        assert proc.returncode == 2, f"run {run}"
        errors = error_lines(proc)
        twice = [e for e in errors if "more than once" in e]
        assert twice and all("a.yaml" in e and "b.yaml" in e for e in twice), proc.stderr
        assert any("c.yaml" in e and "duplicate key" in e and "image" in e for e in errors), proc.stderr
        for name in ("same", "dup"):
            assert image(objects, namespace, name) == "nginx:0", f"run {run}: {name}"
            app = objects.app(namespace, name)
            assert app["spec"]["image"] == "nginx:0"
            assert app["metadata"]["generation"] == generations[name]
            for kind in ("Deployment", "Service"):
                assert objects.versions(namespace, [name])[f"{kind}/{name}"] == before.versions[f"{kind}/{name}"]
        assert uids(objects, namespace, ["same", "dup"]) == before.uids
        app_versions.append(objects.versions(namespace, ["same", "dup"]))
        assert image(objects, namespace, "other") == "nginx:1"  # the others sync
    assert app_versions[1] == app_versions[2], "the second and third failing runs still wrote"


# -- 5. credentials never leak ------------------------------------------------------------------------

DEBUG = {"GITOPS_AGENT_LOG_LEVEL": "DEBUG"}  # the most output: errors and every debug line


def _assert_nowhere(secrets, objects, namespace, *procs):
    for proc in procs:
        for secret in secrets:
            assert secret not in proc.stdout and secret not in proc.stderr, proc.stdout + proc.stderr
    apps = objects.custom.list_namespaced_custom_object("heumsi.github.io", "v1", namespace, "applications")
    events = objects.events(namespace)
    assert apps["items"] and events
    for secret in secrets:
        assert secret not in json.dumps(apps), "token in an Application"
        assert secret not in json.dumps(events), "token in an Event"


def test_token_in_a_failing_remote_url_appears_nowhere(agent, repo, namespace, objects, tmp_path):
    secret = "SECRET-TOKEN-123"
    repo.write("web.yaml", app_yaml("web"))
    repo.write("bad.yaml", app_yaml("bad", replicas=-1))  # so status, conditions and Events carry messages
    repo.commit()
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    procs = []
    with faults.GitHttpServer(tmp_path / "srv") as server:
        url = server.url("apps.git", f"user:{secret}")
        procs.append(agent.sync(url, "--namespace", namespace))  # fetched with the token in the URL
        assert procs[-1].returncode == 2 and all(objects.trio(namespace, "web"))
        failing = [f"https://user:{secret}@127.0.0.1:{faults.free_port()}/missing.git",
                   server.url("missing.git", f"user:{secret}")]
        for mode in (faults.UNAVAILABLE, faults.UNAUTHORIZED):
            server.set_mode(mode)
            for target in failing[1:] + [url]:
                procs.append(agent.sync(target, "--namespace", namespace, "--fetch-timeout", "2", env=DEBUG))
        server.set_mode(faults.REFUSED)
        for target in failing + [url]:
            procs.append(agent.sync(target, "--namespace", namespace, "--fetch-timeout", "2", env=DEBUG))
    for proc in procs[1:]:
        assert proc.returncode == 2 and "fetching" in proc.stderr
    _assert_nowhere([secret], objects, namespace, *procs)


def test_token_from_the_environment_appears_nowhere(agent, repo, namespace, objects, tmp_path):
    secret = "SECRET-TOKEN-456"
    encoded = base64.b64encode(f"git:{secret}".encode()).decode()
    repo.write("web.yaml", app_yaml("web"))
    repo.write("bad.yaml", app_yaml("bad", replicas=-1))
    repo.commit()
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    procs = []
    with faults.GitHttpServer(tmp_path / "srv") as server:
        procs.append(agent.sync(server.url("apps.git"), "--namespace", namespace,
                                env={"GITOPS_AGENT_GIT_TOKEN": secret}))
        assert procs[-1].returncode == 2 and all(objects.trio(namespace, "web"))
        assert any(h.get("Authorization") == f"Basic {encoded}" for *_, h in server.requests)  # it was sent
        targets = [f"https://127.0.0.1:{faults.free_port()}/missing.git", server.url("missing.git"),
                   server.url("apps.git")]
        for mode in (faults.UNAVAILABLE, faults.UNAUTHORIZED, faults.REFUSED):
            server.set_mode(mode)
            for target in targets:
                procs.append(agent.sync(target, "--namespace", namespace, "--fetch-timeout", "2",
                                        env={"GITOPS_AGENT_GIT_TOKEN": secret, **DEBUG}))
    for proc in procs[1:]:
        assert proc.returncode == 2 and "fetching" in proc.stderr
    _assert_nowhere([secret, encoded], objects, namespace, *procs)


def test_token_in_the_remote_url_is_not_written_to_the_cache(agent, namespace, repo, tmp_path):
    """Beyond the issue's list (stdout, stderr, status, Events): the Git mirror's config in the
    cache directory must not keep the token at rest either."""
    secret = "SECRET-TOKEN-789"
    repo.write("web.yaml", app_yaml("web"))
    repo.commit()
    faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        sync_ok(agent, server.url("apps.git", f"user:{secret}"), namespace)
    proc = agent.sync(f"https://user:{secret}@127.0.0.1:{faults.free_port()}/missing.git",
                      "--namespace", namespace, "--fetch-timeout", "1")
    assert proc.returncode == 2
    assert faults.files_containing(agent.cache_dir, secret.encode()) == []


# -- 6. symlinks and --path leaving the repository -----------------------------------------------------

def test_symlinks_and_path_leaving_the_repository_are_refused(agent, repo, namespace, objects, tmp_path):
    repo.write("web.yaml", app_yaml("web"))
    repo.write("api.yaml", app_yaml("api"))
    first = repo.commit("first")
    sync_ok(agent, repo.path, namespace)
    before = Untouched(objects, namespace, ["web", "api"])
    outside = tmp_path / "outside.yaml"  # a valid Application, outside the repository
    outside.write_text(app_yaml("outside"))
    (repo.path / "apps").mkdir()
    os.symlink("../../outside.yaml", repo.path / "apps" / "up.yaml")  # -> tmp_path/outside.yaml
    os.symlink("../outside.yaml", repo.path / "up-one.yaml")  # -> tmp_path/outside.yaml
    os.symlink("/etc/passwd", repo.path / "passwd.yaml")
    os.symlink(str(outside), repo.path / "absolute.yaml")
    os.symlink("..", repo.path / "parent")  # a directory symlink, used as --path below
    repo.remove("api.yaml")  # a pass that pruned would delete api
    repo.commit("symlinks out of the repository")

    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    for link in ("apps/up.yaml", "up-one.yaml", "passwd.yaml", "absolute.yaml"):
        assert any(link in e for e in error_lines(proc)), f"{link} not named: {proc.stderr}"
    assert "root:" not in proc.stdout + proc.stderr  # /etc/passwd was not read
    assert objects.app(namespace, "outside") is None
    assert objects.deployment(namespace, "outside") is None
    assert all(objects.trio(namespace, "api"))  # nothing pruned
    assert uids(objects, namespace, ["web", "api"]) == before.uids
    assert synced_commit(objects, namespace, "api") == first

    for path in ("../..", "..", "/", "parent", "apps/../.."):
        proc = agent.sync(repo.path, "--namespace", namespace, "--path", path)
        assert proc.returncode == 2, path
        errors = error_lines(proc)
        assert len(errors) == 1 and repr(path) in errors[0], proc.stderr
        assert objects.app(namespace, "outside") is None
        assert uids(objects, namespace, ["web", "api"]) == before.uids


# -- 7. names that are not DNS-1123 labels ----------------------------------------------------------

def test_application_with_an_invalid_name_gets_no_children_and_the_others_sync(
        agent, repo, namespace, objects, cluster):
    repo.write("good.yaml", app_yaml("good"))
    repo.write("office.yaml", app_yaml("Office_Back"))
    repo.write("team.yaml", app_yaml("team-app", namespace="Team_A"))
    repo.write("long.yaml", app_yaml("x" * 64))
    repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace)
    assert proc.returncode == 2
    errors = error_lines(proc)
    for path, field in (("office.yaml", "metadata.name"), ("team.yaml", "metadata.namespace"),
                        ("long.yaml", "metadata.name")):
        assert any(path in e and field in e and "DNS-1123" in e for e in errors), f"{path}: {proc.stderr}"
    assert all(objects.trio(namespace, "good"))
    assert synced_commit(objects, namespace, "good") is not None
    # nothing was attempted for the invalid ones: no object line in the summary, no object, no Event;
    # they are listed, with their reasons, only as invalid and counted as failed (issue 10)
    attempted = proc.stdout.split("invalid (not applied):")[0]
    for bad in ("Office_Back", "office_back", "office-back", "team-app", "x" * 64):
        assert bad not in attempted
    assert "office.yaml:" in proc.stdout and "team.yaml:" in proc.stdout and "long.yaml:" in proc.stdout
    assert ", 3 failed;" in proc.stdout.strip().splitlines()[-1]
    listed = cluster.kubectl("get", "deployments,services,applications.heumsi.github.io", "-A",
                             "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}")
    names = listed.stdout.lower()
    assert "office" not in names and "team-app" not in names and "x" * 64 not in names
    assert cluster.kubectl("get", "namespace", "Team_A", check=False).returncode != 0
    assert not [e for e in objects.events(namespace) if "office" in e["involvedObject"]["name"].lower()]


# -- 8. the CRD is not installed (sync, and run until it is installed) ---------------------------------

@pytest.fixture(scope="module")
def cluster_without_crd(tmp_path_factory):
    """A second control plane, started here, that never gets the Application CRD."""
    state = tmp_path_factory.mktemp("cluster-nocrd")
    started = time.monotonic()
    running = cluster_mod.up(state)
    print(f"\nsecond control plane (no CRD) ready in {time.monotonic() - started:.1f}s")
    try:
        yield running
    finally:
        cluster_mod.down(state)


@pytest.mark.xdist_group("cluster-without-crd")  # one worker: one second control plane, in this order
def test_missing_crd_fails_fast_with_one_message_and_creates_nothing(cluster_without_crd, repo, tmp_path):
    other = cluster_without_crd
    repo.write("web.yaml", app_yaml("web"))
    repo.write("api.yaml", app_yaml("api", namespace="nocrd-apps"))
    repo.commit()
    agent = Agent(kubeconfig=other.kubeconfig, cache_dir=tmp_path / "cache", cwd=ROOT)
    for run in range(2):
        proc, seconds = timed_sync(agent, repo.path, "default", timeout=30)
        print(f"run {run}: exit {proc.returncode} in {seconds:.1f}s")
        assert proc.returncode == 2  # and within the 30 s of timed_sync
        assert "retrying in" not in proc.stderr  # fast: the missing CRD is not retried (the API's 20 s)
        errors = error_lines(proc)
        assert len(errors) == 1 and CRD_NAME in errors[0], proc.stderr
        assert proc.stderr.count(CRD_NAME) == 1
    items = json.loads(other.kubectl("get", "deployments,services", "-A", "-o", "json").stdout)["items"]
    assert [(i["kind"], i["metadata"]["namespace"], i["metadata"]["name"]) for i in items] == \
        [("Service", "default", "kubernetes")]
    assert other.kubectl("get", "namespace", "nocrd-apps", check=False).returncode != 0
    events = json.loads(other.kubectl("get", "events", "-A", "-o", "json").stdout)["items"]
    assert not [e for e in events if e.get("reportingComponent") == "gitops-agent"
                or (e.get("source") or {}).get("component") == "gitops-agent"]



@pytest.mark.xdist_group("cluster-without-crd")  # one worker: one second control plane, in this order
def test_run_keeps_running_without_the_crd_and_syncs_once_it_is_installed(cluster_without_crd, repo, tmp_path):
    """Runs after the sync test above: it installs the CRD into the module's second cluster."""
    import signal
    import subprocess
    import urllib.request

    from tests.cluster import free_port

    other = cluster_without_crd
    repo.write("web.yaml", app_yaml("web"))
    head = repo.commit()
    port = free_port()
    log = tmp_path / "run.log"
    cmd = [sys.executable, "-m", "agent", "run", "--repo", str(repo.path), "--kubeconfig", str(other.kubeconfig),
           "--cache-dir", str(tmp_path / "cache"), "--interval", "1", "--http-addr", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=open(log, "wb"), stderr=subprocess.STDOUT)

    def metric(sample: str) -> float:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
        except OSError:
            return 0.0
        return next((float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(sample)), 0.0)

    try:
        wait_for(lambda: metric('gitops_agent_passes_total{result="failure"}') >= 2, timeout=30,
                 what="failed passes while the CRD is missing")
        assert proc.poll() is None  # still running
        assert CRD_NAME in log.read_text()
        other.kubectl("apply", "-f", str(ROOT / "crd.yaml"))
        wait_for(lambda: metric('gitops_agent_passes_total{result="success"}') >= 1, timeout=30,
                 what="a successful pass once the CRD is installed")
        app = json.loads(other.kubectl("get", "applications.heumsi.github.io", "web", "-n", "default",
                                       "-o", "json").stdout)
        assert app["status"]["lastSyncedCommit"] == head
        assert other.kubectl("get", "deployment", "web", "-n", "default", check=False).returncode == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


# -- 10. a concurrent writer during the status write ---------------------------------------------------

def test_status_write_racing_another_writer_keeps_both(agent, repo, namespace, objects, cluster):
    from kubernetes import client, config

    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.commit("first")
    sync_ok(agent, repo.path, namespace)
    repo.write("web.yaml", app_yaml("web", image="nginx:2", replicas=2))
    head = repo.commit("bump")

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    stop, written, failures = threading.Event(), [], []

    def annotate():
        with client.ApiClient(configuration) as api_client:
            custom = client.CustomObjectsApi(api_client)
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    custom.patch_namespaced_custom_object(
                        "heumsi.github.io", "v1", namespace, "applications", "web",
                        {"metadata": {"annotations": {"example.com/touched": str(i)}}})
                    written.append(i)
                except Exception as err:  # keep going; reported below
                    failures.append(repr(err))

    thread = threading.Thread(target=annotate, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not written and time.monotonic() < deadline:
            time.sleep(0.05)
        before_sync = len(written)
        proc = agent.sync(repo.path, "--namespace", namespace, timeout=60)
        during = len(written) - before_sync
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive()
    print(f"{len(written)} annotations written, {during} during the pass; failures: {failures[:3]}")
    assert proc.returncode == 0, proc.stderr
    assert during > 0
    assert not failures
    app = objects.app(namespace, "web")
    assert app["metadata"]["annotations"]["example.com/touched"] == str(written[-1])
    assert app["metadata"]["annotations"]["heumsi.github.io/source-commit"] == head
    assert app["status"]["lastSyncedCommit"] == app["status"]["lastAttemptedCommit"] == head
    assert conditions(app)["Synced"]["status"] == "True"
    assert image(objects, namespace, "web") == "nginx:2"


# -- 11. hostile sizes ----------------------------------------------------------------------------------

def _start(agent, repo, namespace, objects):
    repo.write("web.yaml", app_yaml("web", image="nginx:1"))
    repo.write("api.yaml", app_yaml("api"))
    first = repo.commit("first")
    sync_ok(agent, repo.path, namespace)
    return first, Untouched(objects, namespace, ["web", "api"])


def _others_synced_nothing_pruned(objects, namespace, before, head, hostile: str):
    assert image(objects, namespace, "web") == "nginx:2"
    assert synced_commit(objects, namespace, "web") == head
    assert all(objects.trio(namespace, "api"))  # pruning blocked by the refused file
    assert uids(objects, namespace, ["web", "api"]) == before.uids
    assert objects.app(namespace, hostile) is None


def test_a_50_mb_file_is_refused_with_the_byte_limit_and_the_others_sync(agent, repo, namespace, objects):
    _first, before = _start(agent, repo, namespace, objects)
    pad = "# " + "x" * 97 + "\n"
    text = app_yaml("huge") + pad * (50 * 1024 * 1024 // len(pad) + 1)
    repo.write("huge.yaml", text)
    size = len(text.encode())
    repo.write("web.yaml", app_yaml("web", image="nginx:2"))
    repo.remove("api.yaml")
    head = repo.commit("a 50 MB file")
    result = faults.run_measured(agent, repo.path, "--namespace", namespace, timeout=120)
    print(f"50 MB file: {result.seconds:.1f}s, peak RSS {result.max_rss_mib:.0f} MiB")
    assert result.returncode == 2
    assert result.cpu_seconds < 30  # its own time: a loaded machine stretches only result.seconds
    assert result.max_rss_mib < 200
    errors = [e for e in result.stderr.splitlines() if "huge.yaml" in e]
    assert len(errors) == 1 and str(size) in errors[0] and "1048576" in errors[0], result.stderr
    _others_synced_nothing_pruned(objects, namespace, before, head, "huge")


def test_a_yaml_alias_bomb_is_refused_and_the_others_sync(agent, repo, namespace, objects):
    _first, before = _start(agent, repo, namespace, objects)
    lines = ["apiVersion: heumsi.github.io/v1", "kind: Application", "metadata:", "  name: bomb", "spec:",
             "  image: nginx:latest", "  replicas: 1", "  port: 80",
             "  a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    for level in range(1, 12):  # 10**12 strings if expanded
        lines.append(f"  a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    repo.write("bomb.yaml", "\n".join(lines) + "\n")
    repo.write("web.yaml", app_yaml("web", image="nginx:2"))
    repo.remove("api.yaml")
    head = repo.commit("billion laughs")
    result = faults.run_measured(agent, repo.path, "--namespace", namespace, timeout=120)
    print(f"alias bomb: {result.seconds:.1f}s, peak RSS {result.max_rss_mib:.0f} MiB")
    assert result.returncode == 2
    assert result.cpu_seconds < 30 and result.max_rss_mib < 200  # CPU: the run's own time, whatever the load
    assert any("bomb.yaml:10" in e and "alias" in e.lower() for e in result.stderr.splitlines()), result.stderr
    _others_synced_nothing_pruned(objects, namespace, before, head, "bomb")


def test_deeply_nested_documents_are_refused_and_the_others_sync(agent, repo, namespace, objects):
    _first, before = _start(agent, repo, namespace, objects)
    repo.write("deep-flow.yaml", "[" * 100_000 + "\n")
    repo.write("deep-closed.yaml", "[" * 100_000 + "]" * 100_000 + "\n")
    repo.write("deep-map.yaml", "{a: " * 50_000 + "1" + "}" * 50_000 + "\n")
    repo.write("deep-block.yaml", "- " * 50_000 + "x\n")
    repo.write("deep-spec.yaml", app_yaml("deep").rstrip("\n") + "\n  extra: " + "[" * 20_000 + "]" * 20_000 + "\n")
    repo.write("web.yaml", app_yaml("web", image="nginx:2"))
    repo.remove("api.yaml")
    head = repo.commit("deep nesting")
    result = faults.run_measured(agent, repo.path, "--namespace", namespace, timeout=120)
    print(f"deep nesting: {result.seconds:.1f}s, peak RSS {result.max_rss_mib:.0f} MiB")
    assert result.returncode == 2
    assert result.cpu_seconds < 30 and result.max_rss_mib < 200  # CPU: the run's own time, whatever the load
    assert "RecursionError" not in result.stderr and "Traceback" not in result.stderr
    for name in ("deep-flow.yaml", "deep-closed.yaml", "deep-map.yaml", "deep-block.yaml", "deep-spec.yaml"):
        assert any(name in e and "nesting deeper than" in e for e in result.stderr.splitlines()), \
            f"{name}: {result.stderr}"
    _others_synced_nothing_pruned(objects, namespace, before, head, "deep")


def test_too_many_files_end_in_bounded_time_with_a_clear_limit(agent, repo, namespace, objects):
    """20,001 manifest files is above the agent's max-files limit (``snapshot.MAX_FILES``: 20,000,
    room for 10,000 Applications of one file each): the whole snapshot is refused by design, so
    nothing changes at all (not even the valid update in the same commit) and nothing is pruned."""
    first, before = _start(agent, repo, namespace, objects)
    started = time.monotonic()
    for i in range(20_000):
        target = repo.path / "many" / f"{i // 1000:02d}" / f"f{i:05d}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# small file {i}\n")
    repo.write("web.yaml", app_yaml("web", image="nginx:2"))
    repo.remove("api.yaml")
    repo.commit("20,000 files more")
    print(f"writing and committing 20,000 files: {time.monotonic() - started:.1f}s")
    result = faults.run_measured(agent, repo.path, "--namespace", namespace, timeout=300)
    print(f"20,001 files: {result.seconds:.1f}s, peak RSS {result.max_rss_mib:.0f} MiB")
    assert result.returncode == 2
    assert result.cpu_seconds < 60  # its own time: a loaded machine stretches only result.seconds
    assert result.max_rss_mib < 200
    errors = [e for e in result.stderr.splitlines() if e.startswith("error:")]
    assert len(errors) == 1 and "20001" in errors[0] and "20000" in errors[0], result.stderr
    before.check("20,001 files")
    assert image(objects, namespace, "web") == "nginx:1"
    assert synced_commit(objects, namespace, "web") == first
