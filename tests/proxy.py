"""A TCP fault proxy on loopback, in front of the API server: pass bytes through, or cut every
connection and refuse new ones, on demand or a set time after the first client connects.

TLS passes through untouched (the apiserver's certificate names 127.0.0.1), so a client only
needs a kubeconfig whose server is the proxy's port.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path


class FaultProxy:
    """``FaultProxy(target_port)`` listens on a free loopback port (``.port``) and forwards to
    ``127.0.0.1:target_port``. ``cut()`` drops all connections and refuses new ones until
    ``restore()``; ``cut_after_first_connection(delay, duration)`` does that ``delay`` seconds
    after the first client connects, for ``duration`` seconds (None: until restore)."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.down = threading.Event()
        self.first_connection = threading.Event()
        self.connections = 0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def kubeconfig(self, original: Path, out: Path) -> Path:
        """Write a copy of ``original`` (JSON kubeconfig) pointing at the proxy; returns ``out``."""
        config = json.loads(Path(original).read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        out.write_text(json.dumps(config))
        return out

    def cut(self) -> None:
        self.down.set()
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
            self._sockets.clear()

    def restore(self) -> None:
        self.down.clear()

    def cut_after_first_connection(self, delay: float, duration: float | None) -> None:
        def run():
            if not self.first_connection.wait(60):
                return
            time.sleep(delay)
            self.cut()
            if duration is not None:
                time.sleep(duration)
                self.restore()
        threading.Thread(target=run, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down.is_set():
                client.close()  # refused, as far as the client can tell
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)  # the 5 s were for connecting: a quiet watch is no dead connection
            with self._lock:
                self.connections += 1
                self._sockets += [client, upstream]
            self.first_connection.set()
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
