"""Git submodules under --path: followed, or the pass fails by name and prunes nothing.

Real repositories joined with ``git submodule add``; the cluster tests run `python -m agent
sync --once` against the real control plane. The submodules are local repositories, which Git
(and so the agent) refuses unless the file protocol is allowed: the test's own Git commands use
``-c protocol.file.allow=always``, and the agent gets it through ``GIT_CONFIG_*`` (ALLOW_FILE)
where a test means to follow them. The first tests read the source directly (no cluster).
"""

from __future__ import annotations

import shutil

import pytest

from agent.source import mirror as source, snapshot as snapshots
from tests.support import GitRepo, app_yaml, wait_for
from tests.test_failsafe import Untouched, error_lines, image, synced_commit
from tests.test_run import start_agent  # noqa: F401 (a fixture)

ALLOW_FILE = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}


def add_submodule(repo: GitRepo, sub: GitRepo, path: str, url: str | None = None) -> None:
    """``git submodule add`` (relative URL ``../<sub dir>`` by default, resolved by Git against
    the superproject's own directory, as the agent resolves it against the repository URL)."""
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", url or f"../{sub.path.name}", path)


def bump(repo: GitRepo, path: str) -> None:
    """Move the submodule checkout at ``path`` to its remote's newest commit (a gitlink bump)."""
    repo.git("-c", "protocol.file.allow=always", "-C", path, "pull", "-q", "--ff-only", "origin", "main")


def team_b(tmp_path, name: str = "team-b", image_: str = "nginx:1") -> GitRepo:
    sub = GitRepo.create(tmp_path / name)
    sub.write("web-b.yaml", app_yaml("web-b", image=image_))
    sub.write("more/api-b.yaml", app_yaml("api-b"))
    sub.commit("team b")
    return sub


def sync(agent, repo, namespace, *args, env=ALLOW_FILE, path="apps"):
    return agent.sync(repo.path, "--namespace", namespace, "--path", path, *args, env=env)


# -- the source step, without a cluster -----------------------------------------------------------

@pytest.fixture
def allow_file(monkeypatch):
    for key, value in ALLOW_FILE.items():
        monkeypatch.setenv(key, value)


def read(repo, cache, path="apps", **kwargs):
    commit = source.fetch(str(repo.path), None, cache).commit
    return snapshots.read(str(repo.path), commit, cache, path, **kwargs)


def test_nested_submodules_are_followed_and_hidden_ones_skipped(repo, tmp_path, allow_file):
    inner = GitRepo.create(tmp_path / "inner")
    inner.write("deep.yaml", "k: inner\n")
    inner.commit("inner")
    middle = GitRepo.create(tmp_path / "middle")
    middle.write("mid.yaml", "k: middle\n")
    add_submodule(middle, inner, "nested")
    middle.commit("middle")
    repo.write("apps/top.yaml", "k: top\n")
    add_submodule(repo, middle, "apps/team")
    add_submodule(repo, inner, "apps/.hidden")
    repo.commit("super")
    snapshot = read(repo, tmp_path / "cache")
    assert snapshot.files == {"apps/top.yaml": b"k: top\n", "apps/team/mid.yaml": b"k: middle\n",
                              "apps/team/nested/deep.yaml": b"k: inner\n"}
    assert read(repo, tmp_path / "cache", "apps/team/nested").files == {"apps/team/nested/deep.yaml": b"k: inner\n"}


def test_limits_count_over_submodules_and_depth_is_bounded(repo, tmp_path, allow_file):
    chain = []
    for i in range(7):  # r0 <- r1 <- ... <- r6: r6 holds r5 holds ... r0
        r = GitRepo.create(tmp_path / f"r{i}")
        r.write(f"f{i}.yaml", f"k: {i}\n")
        if chain:
            add_submodule(r, chain[-1], "sub")
        r.commit(f"r{i}")
        chain.append(r)
    repo.write("apps/top.yaml", "k: top\n")
    add_submodule(repo, chain[3], "apps/s")  # 4 levels: allowed
    repo.commit("four deep")
    assert len(read(repo, tmp_path / "cache").files) == 5
    with pytest.raises(source.SourceError, match="5 manifest files.*the limit is 4"):
        read(repo, tmp_path / "cache", max_files=4)
    repo.remove("apps/s")
    add_submodule(repo, chain[6], "apps/t")  # 7 levels
    repo.commit("seven deep")
    with pytest.raises(source.SourceError, match=r"submodule 'apps/t/sub/sub/sub/sub/sub'.*nested more than 5"):
        read(repo, tmp_path / "cache")


def test_a_gitlink_outside_path_is_not_fetched(repo, tmp_path):
    """Only gitlinks under --path matter: one elsewhere (even unreadable) is not touched."""
    repo.write("apps/a.yaml", "k: a\n")
    repo.git("add", "apps")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor/ghost")
    repo.git("commit", "-qm", "a gitlink outside apps/")  # not commit(): add -A would drop it
    assert read(repo, tmp_path / "cache").files == {"apps/a.yaml": b"k: a\n"}
    with pytest.raises(source.SourceError, match=r"submodule 'vendor/ghost' \(no URL in .gitmodules\)"):
        read(repo, tmp_path / "cache", path=".")


def test_the_token_goes_to_same_host_submodules_only(repo, tmp_path):
    """Over HTTP: a submodule on the repository's own server (relative URL) is fetched with the
    repository's token; one on another server (another port) never sees it."""
    import base64

    from tests import faults

    token = "private-token-0042"
    same, other = team_b(tmp_path, "team-b"), team_b(tmp_path, "other")
    with faults.GitHttpServer(tmp_path / "srv") as home, faults.GitHttpServer(tmp_path / "srv2") as elsewhere:
        home.required_auth = "Basic " + base64.b64encode(f"git:{token}".encode()).decode()
        repo.write("apps/web.yaml", "k: web\n")
        repo.git("config", "-f", ".gitmodules", "submodule.b.path", "apps/b")
        repo.git("config", "-f", ".gitmodules", "submodule.b.url", "../team-b.git")
        repo.git("config", "-f", ".gitmodules", "submodule.o.path", "apps/o")
        repo.git("config", "-f", ".gitmodules", "submodule.o.url", elsewhere.url("other.git"))
        repo.git("add", "apps", ".gitmodules")
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{same.head()},apps/b")
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{other.head()},apps/o")
        repo.git("commit", "-qm", "two submodules on two servers")
        faults.bare_clone(repo.path, tmp_path / "srv" / "apps.git")
        faults.bare_clone(same.path, tmp_path / "srv" / "team-b.git")
        faults.bare_clone(other.path, tmp_path / "srv2" / "other.git")
        url, cache = home.url("apps.git"), tmp_path / "cache"
        creds = source.Credentials(token=token)
        for attempt in range(3):  # the test's one-thread HTTP server may drop a request on a loaded machine
            try:
                commit = source.fetch(url, None, cache, 60, credentials=creds).commit
                snapshot = snapshots.read(url, commit, cache, "apps", credentials=creds, timeout=60)
                break
            except source.SourceError:
                if attempt == 2:
                    raise
        assert sorted(snapshot.files) == ["apps/b/more/api-b.yaml", "apps/b/web-b.yaml", "apps/o/more/api-b.yaml",
                                          "apps/o/web-b.yaml", "apps/web.yaml"]
        assert any("team-b.git" in path for _, _, path, _ in home.requests)
        assert elsewhere.requests and all("Authorization" not in headers for _, _, _, headers in elsewhere.requests)
    assert not faults.files_containing(cache, token.encode())


# -- against the cluster --------------------------------------------------------------------------

@pytest.mark.usefixtures("crd")
def test_a_submodule_is_followed_and_a_bump_rolls_out(agent, repo, namespace, objects, tmp_path):
    sub = team_b(tmp_path)
    repo.write("apps/web.yaml", app_yaml("web"))
    add_submodule(repo, sub, "apps/team-b")
    first = repo.commit("web, and team b as a submodule")
    proc = sync(agent, repo, namespace)
    assert proc.returncode == 0, proc.stderr
    for name in ("web", "web-b", "api-b"):
        assert all(objects.trio(namespace, name)), name
        assert synced_commit(objects, namespace, name) == first
    status = objects.app(namespace, "api-b")["status"]
    assert status["sourcePath"] == "apps/team-b/more/api-b.yaml"

    sub.write("web-b.yaml", app_yaml("web-b", image="nginx:2"))
    sub.remove("more/api-b.yaml")
    sub.commit("bump web-b, remove api-b")
    bump(repo, "apps/team-b")
    second = repo.commit("bump team b")
    proc = sync(agent, repo, namespace)
    assert proc.returncode == 0, proc.stderr
    assert image(objects, namespace, "web-b") == "nginx:2"
    assert synced_commit(objects, namespace, "web-b") == second
    assert objects.trio(namespace, "api-b") == (None, None, None)
    assert all(objects.trio(namespace, "web"))

    # The mirror has the submodule's commit: the same commit syncs with the submodule's
    # remote gone (no network for it, as in `run`'s offline passes).
    shutil.move(sub.path, tmp_path / "away")
    proc = sync(agent, repo, namespace)
    assert proc.returncode == 0, proc.stderr
    assert "0 pruned" in proc.stdout


@pytest.mark.usefixtures("crd")
def test_no_submodules_and_the_file_protocol_policy_fail_by_name_and_change_nothing(
        agent, repo, namespace, objects, tmp_path):
    sub = team_b(tmp_path)
    repo.write("apps/web.yaml", app_yaml("web"))
    add_submodule(repo, sub, "apps/team-b")
    repo.commit("web, and team b as a submodule")
    assert sync(agent, repo, namespace).returncode == 0
    sub.write("web-b.yaml", app_yaml("web-b", image="nginx:2"))
    sub.commit("bump web-b")
    bump(repo, "apps/team-b")
    repo.write("apps/web.yaml", app_yaml("web", image="nginx:2"))
    repo.commit("bump both")
    before = Untouched(objects, namespace, ["web", "web-b", "api-b"])
    refusals = (
        ("--no-submodules", ["--no-submodules"], {**ALLOW_FILE}, "--no-submodules refuses submodules"),
        ("GITOPS_AGENT_SUBMODULES=false", [], {**ALLOW_FILE, "GITOPS_AGENT_SUBMODULES": "false"},
         "--no-submodules refuses submodules"),
        ("file protocol not allowed", [], {}, "protocol.file.allow=always"),
    )
    for what, args, env, says in refusals:
        proc = sync(agent, repo, namespace, *args, env=env)
        assert proc.returncode == 2, what
        errors = error_lines(proc)
        assert len(errors) == 1 and "submodule 'apps/team-b'" in errors[0] and says in errors[0], (what, proc.stderr)
        assert "nothing was changed or pruned" in errors[0]
        assert "0 pruned" in proc.stdout
        before.check(what)


@pytest.mark.usefixtures("crd")
def test_the_file_protocol_policy_holds_when_the_mirror_already_has_the_commit(agent, repo, namespace, objects,
                                                                               tmp_path):
    """A mirror in the cache (fetched while the file protocol was allowed, or by another source
    sharing the cache) is no way around Git's protocol policy: the pass is refused as if it fetched."""
    sub = team_b(tmp_path)
    repo.write("apps/web.yaml", app_yaml("web"))
    add_submodule(repo, sub, "apps/team-b")
    repo.commit("web, and team b as a submodule")
    assert sync(agent, repo, namespace).returncode == 0  # allowed: the mirror now has the commit
    before = Untouched(objects, namespace, ["web", "web-b", "api-b"])
    proc = sync(agent, repo, namespace, env={})
    assert proc.returncode == 2
    errors = error_lines(proc)
    assert len(errors) == 1 and "submodule 'apps/team-b'" in errors[0] and "protocol.file.allow=always" in errors[0]
    before.check("file protocol not allowed, mirror cached")


@pytest.mark.usefixtures("crd")
def test_a_directory_replaced_by_a_submodule_with_the_same_applications_keeps_them(
        agent, repo, namespace, objects, tmp_path):
    """The fail-open this feature closes: apps/team-b/ held Applications, then became a
    submodule holding the same ones. Refused, nothing moves; followed, nothing changes."""
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.write("apps/team-b/web-b.yaml", app_yaml("web-b"))
    repo.write("apps/team-b/more/api-b.yaml", app_yaml("api-b"))
    repo.commit("three Applications")
    assert sync(agent, repo, namespace).returncode == 0
    uids = {n: objects.app(namespace, n)["metadata"]["uid"] for n in ("web", "web-b", "api-b")}
    sub = team_b(tmp_path)
    repo.remove("apps/team-b")
    add_submodule(repo, sub, "apps/team-b")
    second = repo.commit("team b moves to its own repository")
    before = Untouched(objects, namespace, list(uids))
    for what, args, env in (("--no-submodules", ["--no-submodules"], ALLOW_FILE),
                            ("file protocol not allowed", [], {})):
        proc = sync(agent, repo, namespace, *args, env=env)
        assert proc.returncode == 2, what
        assert "submodule 'apps/team-b'" in proc.stderr and "0 pruned" in proc.stdout, what
        before.check(what)
    proc = sync(agent, repo, namespace)
    assert proc.returncode == 0, proc.stderr
    assert "0 created" in proc.stdout and "0 pruned" in proc.stdout
    for name, uid in uids.items():
        app, deployment, service = objects.trio(namespace, name)
        assert app["metadata"]["uid"] == uid and deployment and service, name
        assert synced_commit(objects, namespace, name) == second
    assert objects.app(namespace, "api-b")["status"]["sourcePath"] == "apps/team-b/more/api-b.yaml"


@pytest.mark.usefixtures("crd")
def test_unreadable_submodules_fail_by_name_and_prune_nothing(agent, repo, namespace, objects, tmp_path):
    """An unreachable URL (a token in it is never shown), a gitlink with no .gitmodules entry,
    a commit the submodule's remote does not have: each fails the pass naming it."""
    sub = team_b(tmp_path)
    repo.write("apps/web.yaml", app_yaml("web"))
    add_submodule(repo, sub, "apps/team-b")
    repo.commit("web, and team b as a submodule")
    assert sync(agent, repo, namespace).returncode == 0
    before = Untouched(objects, namespace, ["web", "web-b", "api-b"])

    secret = "s3cret-t0ken-in-gitmodules"
    repo.git("config", "-f", ".gitmodules", "submodule.apps/team-b.url", f"https://u:{secret}@127.0.0.1:1/b.git")
    repo.commit("team b moves to a host that is down")
    proc = sync(agent, repo, namespace, "--fetch-timeout", "5", "--submodule-hosts", "127.0.0.1")
    assert proc.returncode == 2
    errors = error_lines(proc)
    assert len(errors) == 1 and "submodule 'apps/team-b'" in errors[0] and "127.0.0.1:1/b.git" in errors[0]
    assert "could not connect" in errors[0]
    assert secret not in proc.stdout + proc.stderr
    before.check("unreachable")

    proc = sync(agent, repo, namespace, "--fetch-timeout", "5")  # a host --submodule-hosts does not name
    assert proc.returncode == 2
    errors = error_lines(proc)
    assert len(errors) == 1 and "submodule 'apps/team-b'" in errors[0] and "'127.0.0.1' is not --repo's" in errors[0]
    assert secret not in proc.stdout + proc.stderr
    before.check("another host")

    (repo.path / ".gitmodules").unlink()
    repo.commit(".gitmodules removed, the gitlink kept")
    proc = sync(agent, repo, namespace)
    assert proc.returncode == 2
    assert "submodule 'apps/team-b' (no URL in .gitmodules)" in proc.stderr
    before.check("no .gitmodules")

    repo.git("checkout", "-q", "HEAD~2", "--", ".gitmodules")
    repo.git("update-index", "--cacheinfo", f"160000,{'ab' * 20},apps/team-b")
    repo.git("commit", "-qm", "the gitlink names a commit the submodule does not have")
    proc = sync(agent, repo, namespace)
    assert proc.returncode == 2
    assert "submodule 'apps/team-b'" in proc.stderr and "ab" * 20 in proc.stderr
    before.check("missing commit")


@pytest.mark.usefixtures("crd")
def test_path_pointing_into_a_submodule(agent, repo, namespace, objects, tmp_path):
    sub = team_b(tmp_path)
    repo.write("apps/web.yaml", app_yaml("web"))
    add_submodule(repo, sub, "apps/team-b")
    head = repo.commit("team b as a submodule")
    # one source moving its --path (one --source-id): another id would refuse api-b (scale-out.md, two sources)
    proc = sync(agent, repo, namespace, "--source-id", "team-b", path="apps/team-b/more")
    assert proc.returncode == 0, proc.stderr
    assert all(objects.trio(namespace, "api-b"))
    assert objects.app(namespace, "web") is None and objects.app(namespace, "web-b") is None
    assert synced_commit(objects, namespace, "api-b") == head
    proc = sync(agent, repo, namespace, "--source-id", "team-b", path="apps/team-b")  # exactly at the submodule
    assert proc.returncode == 0, proc.stderr
    assert all(objects.trio(namespace, "web-b"))
    proc = sync(agent, repo, namespace, path="apps/team-b/nope")
    assert proc.returncode == 2 and "apps/team-b/nope" in proc.stderr and "does not exist" in proc.stderr


@pytest.mark.usefixtures("crd")
def test_run_offline_passes_read_the_submodule_from_its_mirror(start_agent, repo, namespace, objects, cluster,  # noqa: F811
                                                               tmp_path):
    """`run`: a pass triggered by a cluster change reads the last commit again, submodule
    included, without asking any remote: it works with the submodule's remote gone."""
    sub = team_b(tmp_path)
    repo.write("apps/web.yaml", app_yaml("web"))
    add_submodule(repo, sub, "apps/team-b")
    repo.commit("web, and team b as a submodule")
    running = start_agent(str(repo.path), "--path", "apps", "--interval", "300", "--namespace", namespace,
                          env=ALLOW_FILE)
    wait_for(lambda: objects.deployment(namespace, "web-b") is not None, timeout=30, what="first sync")
    old_uid = objects.deployment(namespace, "web-b")["metadata"]["uid"]
    shutil.move(sub.path, tmp_path / "away")
    cluster.kubectl("-n", namespace, "delete", "deployment", "web-b", "--wait=false")
    wait_for(lambda: (objects.deployment(namespace, "web-b") or {}).get("metadata", {}).get("uid") not in (None, old_uid),
             timeout=15, interval=0.2, what="the Deployment to be recreated by a watch pass")
    assert running.metric("gitops_agent_passes_total", result="failure") == 0, running.output()
