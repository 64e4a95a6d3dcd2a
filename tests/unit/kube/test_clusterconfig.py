"""The kubeconfig as ``agent/kube/clusterconfig.py`` loads it: every way it can be wrong is one reason
in the agent's words, naming the file, context, cluster or user; credentials are all sent or the
load is refused (never an anonymous request). Nothing here connects anywhere."""

from __future__ import annotations

import base64
import subprocess

import pytest
from kubernetes import client

from agent.kube import clusterconfig

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


# -- the user's credentials and the TLS files --------------------------------------------------

@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """A certificate and its key, another key, a key encrypted with a passphrase (openssl)."""
    d = tmp_path_factory.mktemp("pem")

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "tls.key"), "-subj", "/CN=test",
            "-days", "1", "-out", str(d / "tls.crt"))
    openssl("genrsa", "-out", str(d / "other.key"), "2048")
    openssl("genrsa", "-aes256", "-passout", "pass:secret", "-out", str(d / "encrypted.key"), "2048")
    return d


@pytest.mark.parametrize("user, message", [
    ("{username: bob}", "user 'u' has a username but no password: basic authentication sends both (the agent "
                        "would connect without them)"),
    ("{password: pw}", "user 'u' has a password but no username"),
    ("{token: ''}", "user 'u' has an empty token: give it or remove the key"),
    ("{token: ''}".replace("token", "tokenFile"), "user 'u' has an empty tokenFile"),
    ("{token: \"a\\nb\"}", "user 'u': its token is not one token on one line (it holds more than one line; not shown)"),
    ("{tokenfile: /t}", "user 'u' has no credentials the agent can send (it sets tokenfile): give token, tokenFile, "
                        "client-certificate and client-key, username and password, exec or auth-provider, or write "
                        "the user as {} to connect without credentials"),
    ("{token: t, as: admin}", "user 'u' sets as (impersonation), which the agent does not support: its requests "
                              "would go out as 'u' itself; remove it"),
    ("{auth-provider: {name: azure}}", "user 'u': its auth-provider 'azure' is not supported: the client has gcp and "
                                       "oidc; use an exec credential plugin"),
    ("{auth-provider: {name: oidc}}", "user 'u': its auth-provider 'oidc' gave no token; the agent does not connect "
                                      "without the credentials it should send"),
    ("{client-certificate: /c.crt}", "user 'u' has client-certificate but no client-key or client-key-data: a client "
                                     "certificate is sent with its key"),
    ("{client-key-data: a2V5}", "user 'u' has client-key-data but no client-certificate or client-certificate-data"),
    ("[]", "user 'u' is a list: must be a mapping of credentials (write the user as {} to connect without "
           "credentials)"),
])
def test_a_user_whose_credentials_cannot_all_be_sent_is_refused(tmp_path, user, message):
    assert refused(tmp_path, kubeconfig(user=user)).startswith(message)


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_a_token_file_is_read_relative_to_the_kubeconfig_without_its_final_line_break(tmp_path, where):
    (tmp_path / "token").write_text("s3cret\n")  # echo s3cret > token; the client sent the newline
    name = str(tmp_path / "token") if where == "absolute" else "token"
    assert loaded(tmp_path, kubeconfig(user=f"{{tokenFile: '{name}'}}")).api_key["BearerToken"] == "Bearer s3cret"
    assert loaded(tmp_path, kubeconfig(user="{token: \"s3cret\\n\"}")).api_key["BearerToken"] == "Bearer s3cret"


@pytest.mark.parametrize("content, why", [(None, "cannot be read: the file does not exist"),
                                          ("dir", "cannot be read: is a directory"),
                                          (b"", "does not hold one token on one line (it is empty)"),
                                          (b"a\nb\n", "does not hold one token on one line (it holds more than one line)"),
                                          (b"\xff", "is not UTF-8 text: must hold one token on one line")])
def test_a_token_file_that_does_not_give_one_token_names_the_user_and_the_file(tmp_path, content, why):
    token = tmp_path / "token"
    if content == "dir":
        token.mkdir()
    elif content is not None:
        token.write_bytes(content)
    assert refused(tmp_path, kubeconfig(user="{tokenFile: token}")) == (
        f"user 'u': its tokenFile 'token'{f' ({token})' if 'read' in why else ''} {why}")


def test_the_missing_token_file_of_the_example_is_named(tmp_path):
    assert refused(tmp_path, kubeconfig(user="{tokenFile: /nonexistent/tok}")) == (
        "user 'u': its tokenFile '/nonexistent/tok' cannot be read: the file does not exist")


@pytest.mark.parametrize("cluster, user, message", [
    ("certificate-authority: /nonexistent/ca.crt", "token: t",
     "cluster 'c': its certificate-authority '/nonexistent/ca.crt' cannot be read: the file does not exist"),
    ("certificate-authority-data: '!!not base64'", "token: t",
     "cluster 'c': its certificate-authority-data is not base64 (Only base64 data is allowed): must be the PEM file "
     "encoded with base64 (base64 -w0 FILE)"),
    (f"certificate-authority-data: {base64.b64encode(b'garbage').decode()}", "token: t",
     "cluster 'c': its certificate-authority-data is not a PEM certificate (no '-----BEGIN ...CERTIFICATE-----' line)"),
    ("certificate-authority-data: ''", "token: t", "cluster 'c' has an empty certificate-authority-data"),
    ("certificate-authority: PEM/tls.crt", "client-certificate: /nonexistent/c.crt, client-key: PEM/tls.key",
     "user 'u': its client-certificate '/nonexistent/c.crt' cannot be read: the file does not exist"),
    ("certificate-authority: PEM/tls.crt", "client-certificate: PEM/tls.crt, client-key: /nonexistent/c.key",
     "user 'u': its client-key '/nonexistent/c.key' cannot be read: the file does not exist"),
    ("certificate-authority: PEM/tls.crt", "client-certificate: PEM/tls.key, client-key: PEM/tls.key",
     "user 'u': its client-certificate is not a PEM certificate"),
    ("certificate-authority: PEM/tls.crt", "client-certificate: PEM/tls.crt, client-key: PEM/tls.crt",
     "user 'u': its client-key is not a PEM private key"),
    ("certificate-authority: PEM/tls.crt", "client-certificate: PEM/tls.crt, client-key: PEM/other.key",
     "user 'u': its client certificate and key cannot be loaded (the key is not the certificate's)"),
    ("certificate-authority: PEM/tls.crt", "client-certificate: PEM/tls.crt, client-key: PEM/encrypted.key",
     "user 'u': its client key is encrypted with a passphrase, which the client cannot give"),
    ("certificate-authority: PEM/damaged.crt", "token: t",
     "cluster 'c': its certificate-authority cannot be loaded as PEM certificates"),
])
def test_a_tls_file_that_cannot_be_used_names_the_cluster_or_user_the_key_and_why(tmp_path, pem, cluster, user,
                                                                                 message):
    (pem / "damaged.crt").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    text = kubeconfig(cluster=f"{{server: 'https://127.0.0.1:9', {cluster.replace('PEM', str(pem))}}}",
                      user=f"{{{user.replace('PEM', str(pem))}}}")
    assert refused(tmp_path, text).startswith(message)


def test_a_client_certificate_is_loaded_with_its_key_and_the_ca_also_when_the_scheme_is_in_capitals(tmp_path, pem):
    """``HTTPS://`` is https to kubectl; the client's loader would skip the CA and the client
    certificate for it (it compares the scheme in lowercase only)."""
    data = base64.b64encode((pem / "tls.key").read_bytes()).decode()
    configuration = loaded(tmp_path, kubeconfig(
        cluster=f"{{server: 'HTTPS://127.0.0.1:9', certificate-authority: '{pem / 'tls.crt'}'}}",
        user=f"{{client-certificate: '{pem / 'tls.crt'}', client-key-data: '{data}'}}"))
    assert configuration.host == "https://127.0.0.1:9"
    assert configuration.ssl_ca_cert == str(pem / "tls.crt") and configuration.cert_file == str(pem / "tls.crt")
    assert open(configuration.key_file, "rb").read() == (pem / "tls.key").read_bytes()


def test_a_client_certificate_over_plain_http_is_refused(tmp_path, pem):
    text = kubeconfig(cluster="{server: 'http://127.0.0.1:8080'}",
                      user=f"{{client-certificate: '{pem / 'tls.crt'}', client-key: '{pem / 'tls.key'}'}}")
    assert refused(tmp_path, text) == ("user 'u' has a client certificate, which cannot be sent over http:// (cluster "
                                       "'c' has server 'http://127.0.0.1:8080'): use its https:// URL")


def test_a_ca_is_not_read_for_plain_http_as_the_client_does_not_use_it(tmp_path):
    text = kubeconfig(cluster="{server: 'http://127.0.0.1:8080', certificate-authority: /nonexistent/ca.crt}")
    assert loaded(tmp_path, text).host == "http://127.0.0.1:8080"


# -- the proxy -----------------------------------------------------------------------------------

@pytest.mark.parametrize("proxy, message", [
    ("socks5://127.0.0.1:1", "cluster 'c' has proxy-url 'socks5://127.0.0.1:1', a SOCKS proxy, which the agent does not "
                             "support (urllib3 needs PySocks for it, which is not installed): use an http:// or "
                             "https:// proxy, e.g. 'http://proxy.example:3128'"),
    ("notaurl", "cluster 'c' has proxy-url 'notaurl', which has no scheme: must be an http:// or https:// URL, e.g. "
                "'http://proxy.example:3128'"),
    ("ftp://proxy.example", "cluster 'c' has proxy-url 'ftp://proxy.example', which is not an http:// or https:// URL "
                            "with a host"),
    ("http://proxy.example:99999", "cluster 'c' has proxy-url 'http://proxy.example:99999', whose port 99999 is out "
                                   "of range: must be from 1 to 65535"),
    ("http://bob:s3cret@proxy.example:x", "cluster 'c' has proxy-url 'http://bob:***@proxy.example:x', whose port 'x' "
                                          "is not a number"),
])
def test_a_proxy_the_client_cannot_use_is_refused(tmp_path, proxy, message):
    assert refused(tmp_path, kubeconfig(cluster=f"{{server: 'https://127.0.0.1:9', proxy-url: '{proxy}'}}")).startswith(
        message)


def test_a_proxy_from_the_environment_is_checked_unless_no_proxy_bypasses_it(tmp_path, monkeypatch):
    remote = kubeconfig(cluster="{server: 'https://10.0.0.1:6443'}")
    monkeypatch.setenv("HTTPS_PROXY", "socks5h://proxy.example:1080")
    assert refused(tmp_path, remote).startswith("the proxy 'socks5h://proxy.example:1080' from $HTTPS_PROXY, a "
                                                "SOCKS proxy, which the agent does not support")
    monkeypatch.setenv("NO_PROXY", "10.0.0.0/8")
    assert loaded(tmp_path, remote).proxy is None


def test_the_environment_proxy_is_chosen_as_kubectl_chooses_it(tmp_path, monkeypatch):
    """Go's ``http.ProxyFromEnvironment``: loopback servers go direct, the upper-case variable
    wins, ``ALL_PROXY`` is not read, a value without a scheme is http; ``proxy-url`` is used
    whatever ``NO_PROXY`` says."""
    remote = kubeconfig(cluster="{server: 'https://10.0.0.1:6443'}")
    monkeypatch.setenv("HTTPS_PROXY", "http://upper.example:3128")
    monkeypatch.setenv("https_proxy", "http://lower.example:3128")
    assert loaded(tmp_path, kubeconfig()).proxy is None  # https://127.0.0.1:9
    assert loaded(tmp_path, remote).proxy == "http://upper.example:3128"
    monkeypatch.setenv("HTTPS_PROXY", "")  # empty counts as unset
    assert loaded(tmp_path, remote).proxy == "http://lower.example:3128"
    monkeypatch.delenv("https_proxy")
    monkeypatch.setenv("ALL_PROXY", "socks5://proxy.example:1080")
    assert loaded(tmp_path, remote).proxy is None
    monkeypatch.setenv("HTTPS_PROXY", "proxy.example:3128")
    assert loaded(tmp_path, remote).proxy == "http://proxy.example:3128"
    monkeypatch.setenv("NO_PROXY", "*")
    configuration = loaded(tmp_path, kubeconfig(cluster="{server: 'https://127.0.0.1:9', proxy-url: "
                                                        "'http://kc.example:3128'}"))
    assert configuration.proxy == "http://kc.example:3128" and configuration.no_proxy is None


@pytest.mark.parametrize("empty", ["''", "null"])
def test_an_empty_proxy_url_is_no_proxy_url_before_and_after_a_request(tmp_path, monkeypatch, empty):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    configuration = loaded(tmp_path, kubeconfig(cluster=f"{{server: 'https://10.0.0.1:6443', proxy-url: {empty}}}"))
    assert configuration.proxy == "http://proxy.example:3128"
    configuration.get_api_key_with_prefix("BearerToken")  # the loader's hook runs before each request
    assert configuration.proxy == "http://proxy.example:3128"


def test_a_proxy_url_that_is_not_a_string_is_refused_in_words(tmp_path):
    assert refused(tmp_path, kubeconfig(cluster="{server: 'https://127.0.0.1:9', proxy-url: {host: x}}")) == (
        "cluster 'c' has a proxy-url that is not a string: must be an http:// or https:// URL, e.g. "
        "'http://proxy.example:3128'")


def test_an_http_proxy_gets_the_user_and_password_of_its_url(tmp_path):
    """kubectl sends them as Proxy-Authorization; urllib3 would not."""
    configuration = loaded(tmp_path, kubeconfig(
        cluster="{server: 'https://127.0.0.1:9', proxy-url: 'http://bob:s%40cret@proxy.example:3128'}"))
    assert configuration.proxy == "http://bob:s%40cret@proxy.example:3128"
    assert configuration.proxy_headers == {"proxy-authorization": "Basic " + base64.b64encode(b"bob:s@cret").decode()}
    assert loaded(tmp_path, kubeconfig(cluster="{server: 'https://127.0.0.1:9', proxy-url: 'http://proxy.example:3128'}")
                  ).proxy_headers is None


@pytest.mark.parametrize("proxy", [None, "http://proxy.example:3128"])
def test_the_proxy_is_read_from_the_environment_once_not_per_request(tmp_path, monkeypatch, proxy):
    """The loader's hook re-sets the server before each request; the client would then read the
    proxy from the whole environment again (``getproxies``), about 64 us of CPU per request."""
    if proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy)
    configuration = loaded(tmp_path, kubeconfig(cluster="{server: 'https://10.0.0.1:6443'}"))
    assert configuration.refresh_api_key_hook is not None  # the client's own, for a token user

    def looked_up():
        raise AssertionError("the proxy was looked up again")
    monkeypatch.setattr("kubernetes.client.configuration.getproxies", looked_up)
    for _ in range(2):
        assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer t"
    assert configuration.proxy == proxy and configuration.host == "https://10.0.0.1:6443"


def test_a_proxy_ports_problem_says_what_it_must_be_once(tmp_path):
    assert refused(tmp_path, kubeconfig(cluster="{server: 'https://127.0.0.1:9', proxy-url: 'http://p.example:99999'}")
                   ) == "cluster 'c' has proxy-url 'http://p.example:99999', whose port 99999 is out of range: must be from 1 to 65535"


def test_a_proxy_password_that_is_not_url_encoded_is_refused_without_showing_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://bob:pa/ss@proxy.example:3128")
    message = refused(tmp_path, kubeconfig(cluster="{server: 'https://10.0.0.1:6443'}"))
    assert message == ("the proxy 'http://bob:***@proxy.example:3128' from $HTTPS_PROXY, whose user or password is not "
                       "URL-encoded: write '/', '?', '#' and '@' in them as %2F, %3F, %23 and %40, e.g. "
                       "'http://user:pa%2Fss@proxy.example:3128'")
    assert "pa" not in message.split("'")[1]


@pytest.mark.parametrize("url, shown", [
    ("http://bob:s3cret@proxy.example:3128", "http://bob:***@proxy.example:3128"),
    ("http://bob:p@proxy.example:3128/x@y", "http://bob:***@proxy.example:3128/x@y"),  # an @ in the path
    ("http://bob:pa/ss@proxy.example:3128", "http://bob:***@proxy.example:3128"),  # a / in the password
    ("http://bob@proxy.example:3128", "http://bob@proxy.example:3128"), ("proxy.example:3128", "proxy.example:3128"),
])
def test_a_proxy_is_shown_without_its_password(url, shown):
    from agent.kube.kubecreds import without_password
    assert without_password(url) == shown


def test_an_endless_token_file_is_refused_not_read_to_the_end(tmp_path):
    assert refused(tmp_path, kubeconfig(user="{tokenFile: /dev/zero}")) == (
        "user 'u': its tokenFile '/dev/zero' holds more than 64 KiB: must hold one token on one line")
