"""A kubeconfig user's ``tokenFile`` read again while the agent runs (``agent/kube/tokenfile.py``), as
client-go reads it: at most once a minute, by the one-line rule, the previous token kept (and one
warning naming the file, never the token) when a read fails. Real files; the clock is the test's.
Nothing here connects anywhere."""

from __future__ import annotations

import copy
import logging

import pytest
from kubernetes import client

from agent.kube import clusterconfig, tokenfile

KUBECONFIG = ("apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:9'}}}}]\n"
              "users: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n"
              "current-context: x\n")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(tokenfile, "default_clock", clock)
    return clock


@pytest.fixture(autouse=True)
def no_proxy_from_the_environment(monkeypatch):
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def load(tmp_path, user: str = "{tokenFile: token}") -> client.Configuration:
    (tmp_path / "kc").write_text(KUBECONFIG.format(user=user))
    configuration = client.Configuration()
    clusterconfig.load(configuration, str(tmp_path / "kc"))
    return configuration


def sent(configuration: client.Configuration) -> str:
    """The Authorization header the client would send next (it calls the hook first)."""
    return configuration.auth_settings()["BearerToken"]["value"]


def test_the_token_file_is_read_again_once_a_minute_has_passed(tmp_path, clock):
    (tmp_path / "token").write_text("first\n")
    configuration = load(tmp_path)
    assert sent(configuration) == "Bearer first"
    (tmp_path / "token").write_text("second\n")  # rotated; its final line break is not part of it
    clock.now += 59.9
    assert sent(configuration) == "Bearer first"
    clock.now += 0.1
    assert sent(configuration) == "Bearer second"
    (tmp_path / "token").write_text("third")
    clock.now += 30
    assert sent(configuration) == "Bearer second"  # a minute from the last read, not the first
    clock.now += 30
    assert sent(configuration) == "Bearer third"


def test_the_file_is_not_read_more_than_once_a_minute(tmp_path, clock, monkeypatch):
    (tmp_path / "token").write_text("first\n")
    configuration = load(tmp_path)
    reads = []
    real = tokenfile.kubecreds.read_token_file
    monkeypatch.setattr(tokenfile.kubecreds, "read_token_file", lambda *a: reads.append(a) or real(*a))
    for _ in range(3):
        for _ in range(100):
            sent(configuration)
        clock.now += 60
    assert len(reads) == 2


@pytest.mark.parametrize("content, why", [
    (None, "cannot be read: the file does not exist"),
    ("dir", "cannot be read: is a directory"),
    (b"\n", "does not hold one token on one line (it is empty)"),
    (b"new\nsecond line\n", "does not hold one token on one line (it holds more than one line)"),
    (b"\xff", "is not UTF-8 text: must hold one token on one line"),
])
def test_a_failed_read_keeps_the_previous_token_and_warns_once_naming_the_file(tmp_path, clock, caplog,
                                                                               content, why):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    configuration = load(tmp_path)
    token.unlink()
    if content == "dir":
        token.mkdir()
    elif content is not None:
        token.write_bytes(content)
    clock.now += 60
    with caplog.at_level(logging.WARNING, logger="agent.tokenfile"):
        assert sent(configuration) == "Bearer s3cret"
        assert sent(configuration) == "Bearer s3cret"  # tried again a minute later, not at every request
    [record] = caplog.records
    shown = f"'token' ({token})" if "read:" in why else "'token'"
    assert record.levelno == logging.WARNING and record.getMessage() == (
        f"user 'u': its tokenFile {shown} {why}; the agent keeps sending the token it read before and tries "
        "again in 60s")
    assert "s3cret" not in record.getMessage() and "\n" not in record.getMessage()
    if content == "dir":
        token.rmdir()
    token.write_text("rotated\n")  # fixed: taken at the next read
    clock.now += 60
    assert sent(configuration) == "Bearer rotated"


def test_a_relative_token_file_is_read_again_from_the_kubeconfig_directory(tmp_path, clock, monkeypatch):
    (tmp_path / "token").write_text("first\n")
    configuration = load(tmp_path)
    monkeypatch.chdir("/")
    (tmp_path / "token").write_text("second\n")
    clock.now += 60
    assert sent(configuration) == "Bearer second"


def test_copies_of_the_configuration_share_the_newest_token(tmp_path, clock):
    (tmp_path / "token").write_text("first\n")
    configuration = load(tmp_path)
    copied = copy.deepcopy(configuration)  # what Configuration.set_default does
    assert copied.refresh_api_key_hook is configuration.refresh_api_key_hook
    (tmp_path / "token").write_text("second\n")
    clock.now += 60
    assert sent(configuration) == "Bearer second"
    assert sent(copied) == "Bearer second"


@pytest.mark.parametrize("user", ["{token: given}", "{token: given, tokenFile: token}"])
def test_a_token_written_in_the_kubeconfig_is_not_replaced(tmp_path, clock, user):
    (tmp_path / "token").write_text("from-file\n")
    configuration = load(tmp_path, user)
    assert not isinstance(configuration.refresh_api_key_hook, tokenfile.TokenFile)
    clock.now += 3600
    assert sent(configuration) == "Bearer given"


def test_the_first_read_is_still_refused_in_one_line(tmp_path, clock):
    (tmp_path / "token").write_text("a\nb\n")
    with pytest.raises(clusterconfig.ConfigError) as err:
        load(tmp_path)
    assert str(err.value) == "user 'u': its tokenFile 'token' does not hold one token on one line (it holds more than one line)"
