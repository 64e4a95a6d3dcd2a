"""The kubeconfig as ``agent/clusterconfig.py`` loads it: every way it can be wrong is one reason
in the agent's words, naming the file, context, cluster or user; credentials are all sent or the
load is refused (never an anonymous request). Nothing here connects anywhere."""

from __future__ import annotations

import pytest
from kubernetes import client

from agent import clusterconfig

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_from_the_environment(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def kubeconfig(cluster: str = "{server: 'https://127.0.0.1:9'}", user: str = "{token: t}",
               context: str = "{cluster: c, user: u}", current: str = "x") -> str:
    return (f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {cluster}}}]\n"
            f"users: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {context}}}]\n"
            f"current-context: {current}\n")


def load(path) -> client.Configuration:
    configuration = client.Configuration()
    clusterconfig.load(configuration, str(path))
    return configuration


def loaded(tmp_path, text: str | bytes) -> client.Configuration:
    path = tmp_path / "kc"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return load(path)


def refused(tmp_path, text: str | bytes, kubeconfig_variable: str | None = None) -> str:
    with pytest.raises(clusterconfig.ConfigError) as err:
        if kubeconfig_variable is None:
            loaded(tmp_path, text)
        else:
            clusterconfig.load(client.Configuration())
    message = str(err.value)
    assert "\n" not in message and "Invalid kube-config" not in message and "Errno" not in message
    return message


# -- the files ----------------------------------------------------------------------------------

def test_a_file_that_is_not_utf8_is_named_and_refused(tmp_path, monkeypatch):
    assert refused(tmp_path, b"\x00\x01\xff") == ("not UTF-8 text (byte 0xff at offset 2): must be a kubeconfig "
                                                 "file (YAML with clusters, users and contexts)")
    (tmp_path / "good").write_text(kubeconfig())
    (tmp_path / "binary").write_bytes(b"\x00\x01\xff")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'good'}:{tmp_path / 'binary'}")
    assert refused(tmp_path, "", kubeconfig_variable="set") == (
        f"{tmp_path / 'binary'} is not UTF-8 text (byte 0xff at offset 2): must be a kubeconfig file (YAML with "
        "clusters, users and contexts)")


@pytest.mark.parametrize("text, problem", [
    ("clusters: [\n", "its YAML is invalid at line 2"),
    ("- a\n- b\n", "it holds a list, not a mapping"),
    ("users: {u: 1}\n", "its users is a mapping, not a list"),
    ("users: [{user: {token: t}}]\n", "users[0] has no name"),
    ("contexts: [{name: 1}]\n", "contexts[0] has no name"),
])
def test_a_file_that_is_not_a_kubeconfig_says_what_is_wrong(tmp_path, monkeypatch, text, problem):
    message = refused(tmp_path, text)
    assert message.startswith("not a kubeconfig file (YAML with clusters, users and contexts): " + problem), message
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    assert refused(tmp_path, text, kubeconfig_variable="set").startswith(f"{tmp_path / 'kc'} is not a kubeconfig file")


def test_an_empty_file_is_refused_as_the_kubeconfig_and_skipped_in_the_variable(tmp_path, monkeypatch):
    assert refused(tmp_path, "# nothing\n") == ("it is empty: must be a kubeconfig file (YAML with clusters, users "
                                                "and contexts)")
    (tmp_path / "good").write_text(kubeconfig())
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'kc'}:{tmp_path / 'good'}")  # kubectl skips it too
    configuration = client.Configuration()
    clusterconfig.load(configuration)
    assert configuration.host == "https://127.0.0.1:9"


def test_the_current_context_of_the_first_file_setting_one_wins_as_kubectl_merges(tmp_path, monkeypatch):
    (tmp_path / "first").write_text(kubeconfig())
    (tmp_path / "second").write_text(kubeconfig(cluster="{server: 'https://127.0.0.2:9'}").replace("name: c", "name: c2")
                                     .replace("cluster: c,", "cluster: c2,").replace("name: x", "name: y")
                                     .replace("current-context: x", "current-context: y"))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'first'}:{tmp_path / 'second'}")
    configuration = client.Configuration()
    clusterconfig.load(configuration)
    assert configuration.host == "https://127.0.0.1:9"


def test_a_kubeconfig_path_holding_the_list_separator_is_refused(tmp_path):
    path = tmp_path / "a:b"
    path.write_text(kubeconfig())
    with pytest.raises(clusterconfig.ConfigError, match="its path holds ':', which the client reads as a list"):
        load(path)


# -- the context, its cluster and its user -----------------------------------------------------

@pytest.mark.parametrize("context, users, message", [
    ("{cluster: ghost, user: u}", None, "context 'x' names cluster 'ghost', which is not one of its clusters (c)"),
    ("{user: u}", None, "context 'x' names no cluster: must name one of its clusters (c)"),
    ("{cluster: c, user: ghost}", None, "context 'x' names user 'ghost', which is not one of its users (u); the agent "
                                        "does not connect without its credentials"),
    ("{cluster: c, user: u}", "users: []", "context 'x' names user 'u', which is not one of its users (it has none); "
                                           "the agent does not connect without its credentials"),
    ("c", None, "context 'x' has no settings: must be a mapping naming a cluster and a user"),
])
def test_a_context_naming_what_the_kubeconfig_does_not_have_is_refused(tmp_path, context, users, message):
    text = kubeconfig(context=context)
    if users:
        text = "\n".join(users if line.startswith("users:") else line for line in text.splitlines())
    assert refused(tmp_path, text) == message


@pytest.mark.parametrize("server, message", [
    ("https://127.0.0.1:99999", "whose port 99999 is out of range: must be from 1 to 65535"),
    ("https://127.0.0.1:0", "whose port 0 is out of range: must be from 1 to 65535"),
    ("https://127.0.0.1:https", "whose port 'https' is not a number"),
    ("https://[::1:6443", "which is not an https:// or http:// URL with a host"),
    ("ftp://127.0.0.1", "which is not an https:// or http:// URL with a host"),
])
def test_a_server_port_out_of_range_says_so(tmp_path, server, message):
    assert refused(tmp_path, kubeconfig(cluster=f"{{server: '{server}'}}")).startswith(
        f"cluster 'c' has server '{server}', {message}")


@pytest.mark.parametrize("text", [kubeconfig(user="{}"), kubeconfig(context="{cluster: c}")])
def test_an_empty_user_or_none_connects_without_credentials_on_purpose(tmp_path, text):
    """As kubectl allows for a cluster behind ``kubectl proxy``: nothing is configured, so
    nothing is left out."""
    configuration = loaded(tmp_path, text)
    assert not configuration.api_key.get("BearerToken") and not configuration.cert_file

