"""Git as a hostile party (issue 42): the token never follows a redirect nor goes over plain
http://, .gitmodules includes are not read, submodules stay on --repo's host and their errors
repeat nothing the remote wrote, every form of the token is redacted, a tree entry Git refuses
fails by name, and a Git command dies with its timeout and with the agent.

Real Git repositories and real Git smart-HTTP servers on loopback (tests.faults.GitHttpServer);
127.0.0.2 is another host on the same loopback interface.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.common import redaction
from agent.source import gitproc, mirror as source, snapshot as snapshots
from tests import faults
from tests.support import GitRepo, app_yaml

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "s3cret-t0ken-4242"
BASIC = "Basic " + base64.b64encode(f"git:{TOKEN}".encode()).decode()


def other_host_available() -> bool:
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False


needs_other_host = pytest.mark.skipif(not other_host_available(), reason="127.0.0.2 cannot be bound here")


def served(tmp_path: Path, repo: GitRepo, name: str = "apps.git", root: str = "srv") -> Path:
    return faults.bare_clone(repo.path, tmp_path / root / name)


class Redirect:
    """A loopback HTTP server that answers every request with a 302 to ``target`` + the same path,
    and records the Authorization header of each request it gets."""

    def __init__(self, target: str):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_GET(self):
                seen.append(self.headers.get("Authorization"))
                self.send_response(302)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# -- the token and redirects ----------------------------------------------------------------------

@needs_other_host
def test_a_redirect_to_another_host_never_gets_the_token(repo, tmp_path):
    """Git's default follows the first redirect and then sends every request, the token's header
    included, to the new host (issue 42). With a token no redirect is followed: the fetch fails
    saying so, and the other host sees no request at all. Without one, redirects work as before."""
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("web")
    served(tmp_path, repo)
    with faults.GitHttpServer(tmp_path / "srv", host="127.0.0.2") as elsewhere:
        redirect = Redirect(f"http://127.0.0.2:{elsewhere.port}")
        try:
            url = f"{redirect.url}/apps.git"
            with pytest.raises(source.SourceError) as err:
                source.fetch(url, None, tmp_path / "cache", 30, credentials=source.Credentials(token=TOKEN))
            assert "redirect (HTTP 302)" in str(err.value) and TOKEN not in str(err.value)
            assert redirect.seen and not elsewhere.requests
            assert all(h in (None, BASIC) for h in redirect.seen)  # sent to --repo's own host only

            fetched = source.fetch(url, None, tmp_path / "anon", 30)  # no token: Git's redirects as ever
            assert fetched.commit == repo.head()
            assert elsewhere.requests and all("Authorization" not in h for _, _, _, h in elsewhere.requests)
        finally:
            redirect.close()


def test_a_token_over_plain_http_is_refused_unless_allowed():
    creds = source.Credentials(token=TOKEN)
    said = source.plain_http_refused("http://git.example.com/a.git", creds)
    assert said and "git.example.com" in said and "--allow-insecure-http" in said and TOKEN not in said
    assert source.plain_http_refused("https://git.example.com/a.git", creds) is None
    assert source.plain_http_refused("http://git.example.com/a.git", source.Credentials()) is None
    assert source.plain_http_refused("http://git.example.com/a.git",
                                     source.Credentials(token=TOKEN, insecure_http=True)) is None
    for loopback in ("http://127.0.0.1:8080/a.git", "http://localhost/a.git", "http://[::1]/a.git",
                     "http://127.0.0.9/a.git"):
        assert source.plain_http_refused(loopback, creds) is None, loopback
    with pytest.raises(source.SourceError, match="not sent over plain http://"):
        source.fetch("http://git.example.com/a.git", None, "/nonexistent-cache", 5, credentials=creds)


@pytest.mark.parametrize("how", ["variable", "url"])
def test_the_command_line_refuses_a_token_over_plain_http_in_one_line(tmp_path, how):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = "http://git.example.com/team/apps.git"
    if how == "variable":
        env["GITOPS_AGENT_GIT_TOKEN"] = TOKEN
    else:
        url = f"http://deploy:{TOKEN}@git.example.com/team/apps.git"
    proc = subprocess.run([sys.executable, "-m", "agent", "validate", "--repo", url, "--cache-dir",
                           str(tmp_path / "cache")], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--allow-insecure-http" in proc.stderr
    assert TOKEN not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


# -- redaction -------------------------------------------------------------------------------------

def test_every_form_of_a_secret_is_redacted():
    secret = "t0k/en+=:x"
    users = ["deploy"]
    text = " ".join([
        secret, "t0k%2Fen%2B%3D%3Ax", "t0k%2Fen%2B%3D%3Ax".replace("%2F", "%2F"),
        base64.b64encode(f"deploy:{secret}".encode()).decode(),
        base64.b64encode(f":{secret}".encode()).decode(),
        base64.b64encode(f"x-access-token:{secret}".encode()).decode(),
        base64.urlsafe_b64encode(f"oauth2:{secret}".encode()).decode().rstrip("="),
        base64.b64encode(secret.encode()).decode()])
    assert redaction.scrub(text, [secret], users).split() == ["***"] * 8
    assert redaction.forms("abc") == []  # too short to search for


def test_source_redaction_covers_the_basic_form_of_a_url_password_and_a_token():
    url = f"https://deploy:{TOKEN}@git.example.com/a.git"
    echoed = f"remote: you sent Authorization: Basic {base64.b64encode(f'deploy:{TOKEN}'.encode()).decode()}"
    assert TOKEN not in source.redact(echoed, url) and "Basic ***" in source.redact(echoed, url)
    creds = source.Credentials(token="tok/en+4242", username="ci")
    echoed = f"remote: {base64.b64encode(b'ci:tok/en+4242').decode()} and tok%2Fen%2B4242"
    assert source.redact(echoed, None, creds) == "remote: *** and ***"


class Echo(BaseHTTPRequestHandler):
    """Answers every request 500 with a text/plain body that echoes its Authorization header:
    Git prints such a body as ``remote:`` lines."""

    def log_message(self, *_args):
        pass

    def do_GET(self):
        body = f"you sent {self.headers.get('Authorization')}\n".encode()
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_server_echoing_the_basic_header_never_gets_it_into_the_error(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/apps.git"
        with pytest.raises(source.SourceError) as err:
            source.fetch(url, None, tmp_path / "cache", 30, credentials=source.Credentials(token=TOKEN))
    finally:
        server.shutdown()
        server.server_close()
    said = str(err.value)
    assert "you sent Basic ***" in said  # the server's words are there, the header's value is not
    assert not any(form in said for form in redaction.forms(TOKEN, ["git"]))


# -- .gitmodules and submodules ---------------------------------------------------------------------

def gitlink(repo: GitRepo, path: str, url: str, sha: str, extra: str = "") -> None:
    (repo.path / ".gitmodules").write_text(f'[submodule "s"]\n\tpath = {path}\n\turl = {url}\n{extra}')
    repo.git("add", ".gitmodules")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    repo.git("commit", "-qm", "a submodule")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("include", ["/proc/self/fd/1", "outside"])
def test_gitmodules_is_read_without_includes(repo, tmp_path, include):
    """An ``[include]`` naming /proc/self/fd/1 made ``git config --blob`` wait for ever; one naming
    a file outside the repository read it (a submodule URL from the agent's machine). Both are
    ignored: the submodule has no URL, and the read fails by name at once."""
    if include == "outside":
        include = str(tmp_path / "outside.cfg")
        Path(include).write_text('[submodule "s"]\n\turl = https://leaked.example/x.git\n')
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.write(".gitmodules", f'[submodule "s"]\n\tpath = apps/sub\n[include]\n\tpath = {include}\n')
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},apps/sub")
    repo.git("commit", "-qm", f"include {include}")
    cache = tmp_path / "cache"
    commit = source.fetch(str(repo.path), None, cache).commit
    started = time.monotonic()
    with pytest.raises(source.SourceError) as err:
        snapshots.read(str(repo.path), commit, cache, "apps", timeout=20)
    assert time.monotonic() - started < 20  # not the timeout: the include was never read
    assert "no URL in .gitmodules" in str(err.value) and "leaked" not in str(err.value)


@needs_other_host
def test_a_submodule_on_another_host_is_refused_unless_named(repo, tmp_path):
    """--repo on 127.0.0.1, a submodule on 127.0.0.2: refused by name, no request sent; with
    ``--submodule-hosts 127.0.0.2`` it is fetched."""
    sub = GitRepo.create(tmp_path / "sub")
    sub.write("api.yaml", app_yaml("api"))
    sub.commit("api")
    with faults.GitHttpServer(tmp_path / "srv") as home, \
            faults.GitHttpServer(tmp_path / "srv2", host="127.0.0.2") as elsewhere:
        repo.write("apps/web.yaml", app_yaml("web"))
        repo.commit("web")
        gitlink(repo, "apps/sub", elsewhere.url("sub.git"), sub.head())
        served(tmp_path, repo)
        served(tmp_path, sub, "sub.git", "srv2")
        url, cache = home.url("apps.git"), tmp_path / "cache"
        commit = source.fetch(url, None, cache, 30).commit
        with pytest.raises(source.SourceError) as err:
            snapshots.read(url, commit, cache, "apps", timeout=30)
        assert "submodule 'apps/sub'" in str(err.value) and "'127.0.0.2' is not --repo's" in str(err.value)
        assert not elsewhere.requests
        allowed = source.Credentials(submodule_hosts=("127.0.0.*",))
        snapshot = snapshots.read(url, commit, cache, "apps", timeout=30, credentials=allowed)
        assert sorted(snapshot.files) == ["apps/sub/api.yaml", "apps/web.yaml"]


def test_a_submodule_error_repeats_nothing_the_remote_wrote(repo, tmp_path):
    """The remote's error body (here ``maintenance``, which Git prints as ``remote: maintenance``)
    stays out of the message: only the status code."""
    with faults.GitHttpServer(tmp_path / "srv") as home, \
            faults.GitHttpServer(tmp_path / "srv2", mode=faults.UNAVAILABLE) as down:
        repo.write("apps/web.yaml", app_yaml("web"))
        repo.commit("web")
        gitlink(repo, "apps/sub", down.url("sub.git"), "2" * 40)
        served(tmp_path, repo)
        url, cache = home.url("apps.git"), tmp_path / "cache"
        commit = source.fetch(url, None, cache, 30).commit
        with pytest.raises(source.SourceError) as err:
            snapshots.read(url, commit, cache, "apps", timeout=30)
        assert down.requests
    assert "the server answered HTTP 503" in str(err.value)
    assert "maintenance" not in str(err.value) and "remote:" not in str(err.value)


# -- hostile trees ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["..", ".", ".git", ".GIT"])
def test_a_tree_entry_git_refuses_fails_by_name(repo, tmp_path, name):
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit("web")
    blob = repo.git("rev-parse", "HEAD:apps/web.yaml").strip()
    inner = subprocess.run(["git", "mktree"], input=f"100644 blob {blob}\tx.yaml\n", text=True, cwd=repo.path,
                           capture_output=True, check=True).stdout.strip()
    entries = [(b"100644 web.yaml", blob), (f"40000 {name}".encode(), inner)]
    raw = b"".join(mode + b"\0" + bytes.fromhex(sha) for mode, sha in sorted(entries, key=lambda e: e[0].split(b" ")[1]))
    apps = subprocess.run(["git", "hash-object", "-t", "tree", "-w", "--literally", "--stdin"], input=raw,
                          cwd=repo.path, capture_output=True, check=True).stdout.decode().strip()
    top = subprocess.run(["git", "mktree"], input=f"040000 tree {apps}\tapps\n", text=True, cwd=repo.path,
                         capture_output=True, check=True).stdout.strip()
    commit = repo.git("commit-tree", top, "-p", "HEAD", "-m", "hostile").strip()
    repo.git("update-ref", "refs/heads/main", commit)
    cache = tmp_path / "cache"
    fetched = source.fetch(str(repo.path), "main", cache).commit
    for path in ("apps", "."):
        with pytest.raises(source.SourceError) as err:
            snapshots.read(str(repo.path), fetched, cache, path)
        assert f"directory 'apps' in commit {fetched} holds an entry named {name!r}" in str(err.value)


# -- Git commands: timeouts and the agent's death -----------------------------------------------------

def test_a_command_over_its_timeout_is_ended_with_its_whole_group(tmp_path):
    marker = tmp_path / "pid"
    started = time.monotonic()
    with pytest.raises(gitproc.Failed) as err:
        gitproc.run(["-c", f"alias.hang=!echo $$ > {marker}; exec sleep 300", "hang"], cwd=tmp_path, timeout=1)
    assert err.value.timed_out and time.monotonic() - started < 30
    pid = int(marker.read_text())
    assert not faults.live_processes([pid])  # Git's own child (the alias's shell) went with it


def git_processes(needle: str) -> list[str]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if needle in cmdline and "git" in cmdline and faults.live_processes([int(entry.name)]):
                out.append(f"{entry.name} {cmdline}")
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_git_dies_with_a_killed_agent_and_the_next_run_works(repo, tmp_path):
    """kill -9 of the agent in the middle of a fetch from a server that does not answer: no Git
    process (git fetch, its remote helper) is left running, and the next run fetches."""
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    served(tmp_path, repo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with faults.GitHttpServer(tmp_path / "srv", mode=faults.HANG) as server:
        url = server.url("apps.git")
        args = [sys.executable, "-m", "agent", "validate", "--repo", url, "--cache-dir", str(tmp_path / "cache"),
                "--fetch-timeout", "300"]
        agent = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not git_processes(f":{server.port}/") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert git_processes(f":{server.port}/"), "the agent never started git"
            deadline = time.monotonic() + 60
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            agent.send_signal(signal.SIGKILL)
            agent.wait(30)
        deadline = time.monotonic() + 10  # SIGTERM by the kernel, then Git's own clean-up: well under 10 s
        while git_processes(f":{server.port}/") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not git_processes(f":{server.port}/")
        server.set_mode(faults.OK)
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "valid: 1 file, 1 Application" in done.stdout


def test_lock_files_a_killed_git_left_in_the_mirror_do_not_stop_the_next_fetch(repo, tmp_path):
    """SIGKILL (the whole pod killed) leaves Git no chance to remove its lock files; the next fetch
    holds the cache's lock, so any lock file in the mirror is stale and removed."""
    repo.write("web.yaml", app_yaml("web"))
    repo.commit("web")
    cache = tmp_path / "cache"
    source.fetch(str(repo.path), None, cache)
    mirror = source.cache_path(cache, str(repo.path))
    for lock in ("refs/remotes/origin/main.lock", "packed-refs.lock", "HEAD.lock"):
        (mirror / lock).write_text("")
    second = repo.commit("two")
    assert source.fetch(str(repo.path), None, cache).commit == second
    assert not list(mirror.rglob("*.lock"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("setpriv", [True, False], ids=["setpriv", "preexec_fn"])
def test_a_command_runs_under_its_leader_with_or_without_setpriv(monkeypatch, tmp_path, setpriv):
    """With util-linux's ``setpriv`` the parent-death signal needs no ``preexec_fn`` (so Python
    can ``vfork`` a large agent: issue 48); without it the ``preexec_fn`` sets it. Either way the
    command runs, its output and its failures come back."""
    if setpriv and gitproc.SETPRIV is None:
        pytest.skip("no setpriv here")
    monkeypatch.setattr(gitproc, "SETPRIV", gitproc.SETPRIV if setpriv else None)
    command, preexec = gitproc._command(["--version"])
    assert (preexec is None) == setpriv
    assert command[:3] == ([gitproc.SETPRIV, "--pdeathsig", "TERM"] if setpriv else list(gitproc.GROUP_LEADER[:3]))
    assert gitproc.run(["--version"], cwd=tmp_path).startswith("git version")
    with pytest.raises(gitproc.Failed) as err:
        gitproc.run(["rev-parse", "HEAD"], cwd=tmp_path, env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert err.value.status == 128 and "not a git repository" in err.value.stderr


def test_the_leader_runs_nothing_when_the_agent_is_not_its_parent(tmp_path):
    """The agent died between starting the leader and the parent-death signal taking effect: the
    leader (now another process's child) exits 1 and never starts Git."""
    marker = tmp_path / "ran"
    done = subprocess.run([*gitproc.GROUP_LEADER, "1", "touch", str(marker)], capture_output=True, timeout=30)
    assert done.returncode == 1 and not marker.exists()
    done = subprocess.run([*gitproc.GROUP_LEADER, str(os.getpid()), "touch", str(marker)], capture_output=True, timeout=30)
    assert done.returncode == 0 and marker.exists()


def test_the_end_of_a_command_is_seen_when_it_comes():
    """``_Exit.ended`` is False while the process runs, and True once it ended (reaped, its exit
    status read): on a pidfd where the system has one."""
    proc = subprocess.Popen(["/bin/sh", "-c", "cat > /dev/null"], stdin=subprocess.PIPE)
    exit_ = gitproc._Exit(proc)
    try:
        assert not exit_.ended(0.05)
        proc.stdin.close()
        assert exit_.ended(30) and proc.returncode == 0
    finally:
        exit_.close()
        if proc.poll() is None:
            proc.kill()
