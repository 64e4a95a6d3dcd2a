"""``get`` and ``explain`` fail fast and quietly when the API server cannot be reached, as kubectl
does: no retries of a request that got no answer, no INFO retry lines at the default level."""

from __future__ import annotations

import logging

import pytest

from agent.cli import commands, main
from agent.common import logs
from agent.kube.client import Kube
from tests.unit.kube.test_kube_limits import KUBECONFIG  # port 1 on loopback: refused


@pytest.mark.parametrize("argv, code", [(["get"], 1), (["get", "-A"], 1), (["explain", "api"], 2)])
def test_a_refused_connection_fails_in_one_line_at_once(tmp_path, capsys, monkeypatch, argv, code):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    tries = []
    once = Kube._request_once
    monkeypatch.setattr(Kube, "_request_once", lambda self, *a, **k: tries.append(a[:2]) or once(self, *a, **k))
    assert main.main([*argv, "--kubeconfig", str(path)]) == code
    assert len(tries) == 1, tries  # at once: one request, no retry (a count, not a clock: load-proof)
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert "cannot connect to https://127.0.0.1:1: Connection refused" in err
    assert "agent.retry" not in err


def test_retries_are_info_lines_by_default_but_for_the_read_only_commands():
    try:
        logs.setup("text", None)  # sync, diff, run
        assert logging.getLogger("agent.retry").getEffectiveLevel() == logging.INFO
        logging.getLogger("agent.retry").setLevel(logging.NOTSET)
        assert commands.command("get").read_only and commands.command("explain").read_only
        logs.setup("text", None, log_retries=False)  # a read-only command's
        assert logging.getLogger("agent.retry").getEffectiveLevel() == logging.WARNING
    finally:
        logging.getLogger("agent.retry").setLevel(logging.NOTSET)


def test_get_refuses_a_name_with_a_selector_before_any_request(capsys):
    """As kubectl: a name with ``-l`` would ignore the selector; one line, exit 2, no cluster asked
    (the kubeconfig does not exist)."""
    from agent.cli import main as cli_main

    code = cli_main.main(["get", "web", "-l", "tier=backend", "--kubeconfig", "/nonexistent/kubeconfig"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "name cannot be provided when a selector is specified" in err and "--selector" in err
