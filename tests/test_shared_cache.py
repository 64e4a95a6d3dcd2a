"""Sources sharing one --cache-dir never read, from the cache, a repository they could not fetch.

The attack: repository B names repository A's private URL as a submodule (same URL in its
.gitmodules, a gitlink to a commit of A). A submodule whose mirror already has the commit is
read without a fetch, so, with mirrors keyed by URL alone, B's source read A's files without
A's credentials. Mirrors are keyed by the URL and the credentials used, so B's source gets a
mirror of its own and must fetch, which the server refuses.

Real repositories served by ``git http-backend`` (tests.faults.GitHttpServer, one token per
repository) and by a real sshd (tests.test_run.sshd); the source step is read directly, and
the last test runs ``python -m agent sync --once`` twice against the control plane.
"""

from __future__ import annotations

import base64
import getpass
import subprocess

import pytest

from agent.source import mirror as source, snapshot as snapshots
from tests import faults
from tests.support import GitRepo, app_yaml
from tests.test_failsafe import error_lines
from tests.test_run import sshd  # noqa: F401 (a fixture)

TOKEN_A, TOKEN_B = "token-of-a-0042", "token-of-b-0043"


def basic(token: str, user: str = "git") -> str:
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()


def private_repo(tmp_path) -> GitRepo:
    secret = GitRepo.create(tmp_path / "secret")
    secret.write("apps/secret-app.yaml", app_yaml("secret-app", image="private/only-a:1"))
    secret.commit("A's private Applications")
    return secret


LOOPBACK_SUBMODULES = source.Credentials(submodule_hosts=("127.0.0.1",))
"""B's superprojects are local directories (no host), so their submodules on the test's server
are fetched only when ``--submodule-hosts`` names it: here it does, so each must be fetched and
is refused by the server, which is what these tests prove (not the host rule)."""


def superproject(tmp_path, name: str, url: str, sha: str) -> GitRepo:
    """B's repository: one Application of its own and a gitlink to ``sha`` at ``apps/stolen``
    whose ``.gitmodules`` URL is ``url``."""
    b = GitRepo.create(tmp_path / name)
    b.write("apps/b.yaml", app_yaml("b-app"))
    b.git("config", "-f", ".gitmodules", "submodule.stolen.path", "apps/stolen")
    b.git("config", "-f", ".gitmodules", "submodule.stolen.url", url)
    b.git("add", "apps", ".gitmodules")
    b.git("update-index", "--add", "--cacheinfo", f"160000,{sha},apps/stolen")
    b.git("commit", "-qm", "B names A's repository as a submodule")
    return b


def fetch_and_read(url: str, cache, credentials=None, path: str = "."):
    for attempt in range(3):  # the test's HTTP server may drop a request on a loaded machine
        try:
            commit = source.fetch(url, None, cache, 60, credentials=credentials).commit
            return snapshots.read(url, commit, cache, path, credentials=credentials, timeout=60)
        except source.SourceError:
            if attempt == 2:
                raise


def refused(url: str, cache, credentials=None) -> str:
    """The error of B's source reading its repository; fails the test when it reads it."""
    commit = source.fetch(url, None, cache, 60, credentials=credentials).commit
    with pytest.raises(source.SourceError) as caught:
        snapshot = snapshots.read(url, commit, cache, "apps", credentials=credentials, timeout=60)
        pytest.fail(f"B's source read A's private repository from the cache: {sorted(snapshot.files)}")
    return str(caught.value)


def test_a_submodule_naming_another_sources_private_https_repository_must_be_fetched(tmp_path):
    """A syncs its private repository (token A); B's repositories name it as a submodule: with
    no credentials, with B's own token on the same server (sent to same-host submodules) and
    with other credentials written into the .gitmodules URL. Each must fetch, and is refused."""
    secret = private_repo(tmp_path)
    cache = tmp_path / "cache"
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.repo_auth = {"secret.git": basic(TOKEN_A), "b.git": basic(TOKEN_B)}
        faults.bare_clone(secret.path, tmp_path / "srv" / "secret.git")
        secret_url, creds_a = server.url("secret.git"), source.Credentials(token=TOKEN_A)
        assert sorted(fetch_and_read(secret_url, cache, creds_a).files) == ["apps/secret-app.yaml"]

        anonymous = superproject(tmp_path, "b-anonymous", secret_url, secret.head())
        same_host = superproject(tmp_path, "b-same-host", "../secret.git", secret.head())
        faults.bare_clone(same_host.path, tmp_path / "srv" / "b.git")
        embedded = superproject(tmp_path, "b-embedded", server.url("secret.git", "git:not-a-token"), secret.head())
        attacks = [("no credentials", str(anonymous.path), LOOPBACK_SUBMODULES),
                   ("B's token, same host", server.url("b.git"), source.Credentials(token=TOKEN_B)),
                   ("other credentials in the URL", str(embedded.path), LOOPBACK_SUBMODULES)]
        for what, url, creds in attacks:
            for attempt in range(3):  # a request the loaded machine dropped never reaches the server
                before = len(server.requests)
                message = refused(url, cache, creds)
                assert "submodule 'apps/stolen'" in message and TOKEN_A not in message, (what, message)
                asked = [(headers.get("Authorization"), path) for _, _, path, headers in server.requests[before:]
                         if path.startswith("/secret.git/")]
                if asked:
                    break
            assert asked and all(auth != basic(TOKEN_A) for auth, _ in asked), (what, asked, message)

        # A itself still reads its mirror without the network (run's offline passes), and the
        # no-change check finds it with A's credentials.
        commit = secret.head()
        assert source.fetch(secret_url, None, cache, 60, credentials=creds_a, known_commit=commit).fetched is False
        server.set_mode(faults.REFUSED)
        assert sorted(snapshots.read(secret_url, commit, cache, ".", credentials=creds_a).files) == [
            "apps/secret-app.yaml"]
    for token in (TOKEN_A, TOKEN_B, "not-a-token"):
        assert not [p for p in cache.rglob("*") if token in p.name], token
    for token in (TOKEN_A, TOKEN_B):  # (B's .gitmodules, in its mirror, holds the other one)
        assert not faults.files_containing(cache, token.encode()), token


def test_a_mirror_of_the_layout_before_credential_keys_is_never_read(tmp_path):
    """A cache written by an older agent holds ``<url key>.git``, fetched with whatever
    credentials that source had: nobody reads it; A fetches into its own mirror again and B,
    with no credentials, must fetch and is refused."""
    import hashlib
    import shutil

    secret = private_repo(tmp_path)
    cache = tmp_path / "cache"
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.required_auth = basic(TOKEN_A)
        faults.bare_clone(secret.path, tmp_path / "srv" / "secret.git")
        secret_url, creds_a = server.url("secret.git"), source.Credentials(token=TOKEN_A)
        fetch_and_read(secret_url, cache, creds_a)
        old = cache / (hashlib.sha256(secret_url.encode()).hexdigest()[:16] + ".git")
        shutil.move(source.cache_path(cache, secret_url, creds_a), old)  # as an older agent left it
        b = superproject(tmp_path, "b", secret_url, secret.head())
        assert "submodule 'apps/stolen'" in refused(str(b.path), cache, LOOPBACK_SUBMODULES)
        before = len(server.requests)
        assert sorted(fetch_and_read(secret_url, cache, creds_a).files) == ["apps/secret-app.yaml"]
        assert len(server.requests) > before and source.cache_path(cache, secret_url, creds_a).is_dir()
    assert old.is_dir()  # left as it was (an older agent may still use it); never read


def test_a_submodule_naming_another_sources_private_ssh_repository_must_be_fetched(sshd, tmp_path):  # noqa: F811
    """The same over ssh: A's mirror was fetched with A's key and trusted host keys; B's
    repository names the same ssh:// URL; B's source has neither, so it must fetch and fails."""
    port, key, known_line = sshd
    secret = private_repo(tmp_path)
    bare = faults.bare_clone(secret.path, tmp_path / "srv" / "secret.git")
    known = tmp_path / "known_hosts"
    known.write_text(known_line)
    secret_url = f"ssh://{getpass.getuser()}@127.0.0.1:{port}{bare}"
    cache = tmp_path / "cache"
    creds_a = source.Credentials(ssh_key_file=str(key), known_hosts_file=str(known))
    assert sorted(fetch_and_read(secret_url, cache, creds_a).files) == ["apps/secret-app.yaml"]
    b = superproject(tmp_path, "b", secret_url, secret.head())
    message = refused(str(b.path), cache, LOOPBACK_SUBMODULES)
    assert "submodule 'apps/stolen'" in message and "--submodule-hosts" not in message, message
    other_key = tmp_path / "b_key"  # a key of B's own, not let in by the server
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True)
    b2 = superproject(tmp_path, "b2", secret_url, secret.head())
    creds_b = source.Credentials(ssh_key_file=str(other_key), known_hosts_file=str(known))
    assert source.cache_path(cache, secret_url, creds_b) != source.cache_path(cache, secret_url, creds_a)
    assert sorted(fetch_and_read(secret_url, cache, creds_a).files) == ["apps/secret-app.yaml"]  # A unchanged
    assert "submodule 'apps/stolen'" in refused(str(b2.path), cache, LOOPBACK_SUBMODULES)


@pytest.mark.usefixtures("crd")
def test_two_sources_sharing_a_cache_dir_one_cannot_sync_the_others_private_repository(
        agent, namespaces, objects, tmp_path):
    """End to end: A syncs its private repository with its token; B, with the same --cache-dir
    and no token, syncs a repository naming A's as a submodule: the pass fails by name, exit 2,
    and A's Application never appears in B's namespace."""
    secret = private_repo(tmp_path)
    ns_a, ns_b = namespaces("a"), namespaces("b")
    with faults.GitHttpServer(tmp_path / "srv") as server:
        server.repo_auth = {"secret.git": basic(TOKEN_A)}
        faults.bare_clone(secret.path, tmp_path / "srv" / "secret.git")
        proc = agent.sync(server.url("secret.git"), "--namespace", ns_a, "--path", "apps",
                          env={"GITOPS_AGENT_GIT_TOKEN": TOKEN_A})
        assert proc.returncode == 0, proc.stderr
        assert objects.app(ns_a, "secret-app") is not None
        b = superproject(tmp_path, "b", server.url("secret.git"), secret.head())
        proc = agent.sync(b.path, "--namespace", ns_b, "--path", "apps", "--submodule-hosts", "127.0.0.1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = error_lines(proc)
    assert len(errors) == 1 and "submodule 'apps/stolen'" in errors[0], proc.stderr
    assert objects.app(ns_b, "secret-app") is None and objects.app(ns_b, "b-app") is None
    assert "private/only-a" not in proc.stdout + proc.stderr and TOKEN_A not in proc.stdout + proc.stderr
