"""Fault injection for the fail-safe tests: Git remotes that refuse, fail or hang, a measured
agent run, and a fingerprint of a directory tree.

Everything listens on loopback only and is bounded: servers stop when their ``with`` block
ends, a hanging request is released at stop, and the measured run kills the agent at its
timeout.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A loopback TCP port nobody listens on at ``host`` (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class SilentTcpServer:
    """A loopback TCP server that accepts every connection and never sends a byte: a ``git://``
    (or ``ssh://``) remote that hangs after connecting. ``accepted``: connections so far.
    Use as a context manager; the sockets are closed when the block ends."""

    def __init__(self):
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            self._conns.append(conn)

    @property
    def accepted(self) -> int:
        return len(self._conns)

    def __enter__(self) -> "SilentTcpServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sock.close()
        for conn in self._conns:
            conn.close()


def live_processes(pids: list[int]) -> list[str]:
    """``pid name`` of each of ``pids`` still running (a zombie, dead but not yet reaped, is not)."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:  # gone
            continue
        name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
        if state not in "ZX":
            out.append(f"{pid} {name}")
    return out


# -- Git over HTTP with switchable faults ---------------------------------------------------------

OK, REFUSED, UNAVAILABLE, UNAUTHORIZED, HANG = "ok", "refused", "503", "401", "hang"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server: "_Server"

    def log_message(self, *_args) -> None:  # keep the test output clean
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        mode = self.server.owner.mode
        self.server.owner.requests.append((mode, self.command, self.path, dict(self.headers)))
        if mode == HANG:  # accepted, and never answered until the server stops
            self.server.owner.released.wait(120)
            self.close_connection = True
            return
        if mode == UNAVAILABLE:
            return self._reply(503, b"maintenance\n", {"Retry-After": "3600"})
        owner = self.server.owner
        required = owner.repo_auth.get(self.path.lstrip("/").split("/", 1)[0], owner.required_auth)
        if mode == UNAUTHORIZED or (required and self.headers.get("Authorization") != required):
            return self._reply(401, b"who are you\n", {"WWW-Authenticate": 'Basic realm="git"'})
        self._cgi()

    def _reply(self, code: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self) -> None:
        """``git http-backend`` as CGI: the smart HTTP protocol a real Git server speaks."""
        path, _, query = self.path.partition("?")
        body = self._body() if self.command == "POST" else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.owner.root), "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1", "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
        }
        proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        code, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                code = int(value.split()[0])
            elif key:
                headers[key] = value.strip()
        self.send_response(code)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    """The listening socket is non-blocking: a connection that poll() reported and the kernel
    then dropped (accept(2): "the connection might have been removed by an asynchronous network
    error") makes accept() fail, not block serve_forever until the next connection, which would
    also block shutdown(). Accepted connections are blocking, as the handler expects."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64  # git opens several connections at once; 5 overflows on a loaded machine
    owner: "GitHttpServer"

    def server_activate(self) -> None:
        super().server_activate()
        self.socket.setblocking(False)

    def get_request(self):
        conn, addr = self.socket.accept()
        conn.setblocking(True)
        if self.owner.tls is not None:  # the handshake happens in the handler's thread, on its first read
            conn = self.owner.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr


class GitHttpServer:
    """A Git smart-HTTP server on 127.0.0.1 serving the bare repositories under ``root``, whose
    behaviour is switched with ``mode``: ``ok`` (serves Git), ``refused`` (nothing listens on
    the port: connection refused), ``503`` and ``401`` (every request answered with that
    status), ``hang`` (connections are accepted and never answered). The port stays the same
    across modes, so the agent sees one remote URL (one cache mirror) going bad and back.
    ``required_auth``: the Authorization header every request must carry (else 401);
    ``repo_auth``: the same per repository (first path component), overriding it there.
    ``host``: the loopback address it listens on (127.0.0.2 is another host on the same machine).
    ``tls``: (certificate, key) files: it serves HTTPS with them (``url`` then says ``https://``)."""

    def __init__(self, root: Path, mode: str = OK, host: str = "127.0.0.1", tls: tuple[Path, Path] | None = None):
        self.root = Path(root)
        self.host = host
        self.tls: ssl.SSLContext | None = None
        if tls is not None:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(str(tls[0]), str(tls[1]))
        self.port = free_port(host)
        self.mode = OK
        self.requests: list = []
        self.required_auth: str | None = None  # e.g. "Basic dXNlcjp0b2tlbg==": else 401
        self.repo_auth: dict[str, str] = {}  # repository ("secret.git") -> its own required_auth
        self.released = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.set_mode(mode)

    def url(self, name: str, userinfo: str = "") -> str:
        return f"{'https' if self.tls else 'http'}://{userinfo + '@' if userinfo else ''}{self.host}:{self.port}/{name}"

    def set_mode(self, mode: str) -> None:
        if mode == REFUSED:
            self._stop()
        else:
            self.released.clear() if mode == HANG else self.released.set()
            self._start()
        self.mode = mode

    def _start(self) -> None:
        if self._server is not None:
            return
        deadline = time.monotonic() + 10
        while True:
            try:
                self._server = _Server((self.host, self.port), _Handler)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True)
        self._thread.start()

    def _stop(self) -> None:
        self.released.set()
        if self._server is None:
            return
        stopper = threading.Thread(target=self._server.shutdown, daemon=True)
        stopper.start()
        stopper.join(10)  # bounded: a stuck serve_forever must not hang the test's teardown
        self._server.server_close()
        self._thread.join(10)
        self._server = self._thread = None

    def __enter__(self) -> "GitHttpServer":
        return self

    def __exit__(self, *_exc) -> None:
        self._stop()


def bare_clone(repo_path: Path, dest: Path) -> Path:
    """``git clone --bare`` of a work-tree repository; returns ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(repo_path), str(dest)], check=True,
                   capture_output=True, timeout=60)
    # smart HTTP needs no update-server-info, but dumb clients and some checks do
    subprocess.run(["git", "-C", str(dest), "update-server-info"], check=True, capture_output=True)
    return dest


def push(repo_path: Path, bare: Path, branch: str = "main") -> None:
    """Push ``branch`` of the work tree to the bare repository (force: history may be rewritten)."""
    subprocess.run(["git", "-C", str(repo_path), "push", "-q", "--force", str(bare), f"{branch}:{branch}"],
                   check=True, capture_output=True, timeout=60)


# -- a directory's fingerprint ---------------------------------------------------------------------

@dataclass(frozen=True)
class TreeState:
    """Every entry (relative path, with '/' after directories) and the total bytes of files."""

    entries: frozenset
    total_bytes: int


def tree_state(root: Path) -> TreeState:
    root = Path(root)
    entries, total = set(), 0
    if not root.exists():
        return TreeState(frozenset(), 0)
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for name in dirnames:
            entries.add(os.path.normpath(os.path.join(rel, name)) + "/")
        for name in filenames:
            full = os.path.join(dirpath, name)
            entries.add(os.path.normpath(os.path.join(rel, name)))
            try:
                total += os.lstat(full).st_size
            except FileNotFoundError:
                pass
    return TreeState(frozenset(entries), total)


def files_containing(root: Path, needle: bytes) -> list[str]:
    """Relative paths of files under ``root`` whose bytes contain ``needle``."""
    found = []
    for dirpath, _dirs, filenames in os.walk(root):
        for name in filenames:
            full = Path(dirpath) / name
            try:
                if needle in full.read_bytes():
                    found.append(str(full.relative_to(root)))
            except OSError:
                continue
    return found


# -- the agent, measured ---------------------------------------------------------------------------

@dataclass
class Measured:
    """A finished agent run: exit code, output, wall-clock seconds, CPU seconds, and peak memory
    in MiB: the largest ``VmHWM`` (peak resident set since exec) seen of the agent process or any
    of its descendants (the ``git`` processes), sampled every 20 ms. ``cpu_seconds``: user and
    system time of the agent process and the descendants it waited for (``wait4``), the run's own
    time: other processes' load does not lengthen it as it does ``seconds``."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mib: float
    cpu_seconds: float = 0.0


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_measured(agent, repo: str | Path, *args: str, timeout: float = 60, env: dict | None = None) -> Measured:
    """``python -m agent sync --once --repo REPO ARGS`` like ``Agent.sync``, timed, with its peak
    memory; killed (returncode -9) at ``timeout`` seconds."""
    cmd = [sys.executable, "-m", "agent", "sync", "--once", "--repo", str(repo),
           "--kubeconfig", str(agent.kubeconfig), "--cache-dir", str(agent.cache_dir), *args]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_AGENT_")}
    full_env.update(env or {})
    started = time.monotonic()
    peak = 0
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=agent.cwd, stdout=out, stderr=err, env=full_env)
        try:
            while True:  # reaped here, with wait4, for its CPU time
                peak = max([peak] + [_hwm_kib(p) for p in _descendants(proc.pid)])
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() - started > timeout:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.02)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        result = Measured(proc.returncode, out.read().decode(errors="replace"),
                          err.read().decode(errors="replace"), seconds, peak / 1024,
                          usage.ru_utime + usage.ru_stime)
    print(f"$ {' '.join(cmd)}\nexit {result.returncode} in {result.seconds:.1f}s "
          f"({result.cpu_seconds:.1f}s of CPU), peak RSS {result.max_rss_mib:.0f} MiB\n{result.stdout}{result.stderr}")
    return result
