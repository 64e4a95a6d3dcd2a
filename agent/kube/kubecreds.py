"""The selected cluster's and user's settings checked: that every credential, TLS file and proxy
a kubeconfig configures can be read and will be sent, refused with one reason otherwise.

Why a module of its own: ``agent/kube/clusterconfig.py`` reads the kubeconfig files and chooses the
context, cluster and user; this module judges what was chosen, as plain mappings (a user's or a
cluster's settings) and the loaded ``kubernetes.client.Configuration``, never the loader's
``ConfigNode`` wrappers. It imports nothing of the agent but ``agent.common.values``.

Credentials are all or nothing. A user written as ``{}`` (or a context naming no user) sends
none, on purpose, as kubectl allows for a cluster behind ``kubectl proxy`` or another
authenticating proxy. A user that names credentials must yield them: the agent never connects
with fewer than the kubeconfig configures (impersonation, which the client cannot send, is
refused too). The files a cluster or user names (``tokenFile``, ``certificate-authority``,
``client-certificate``, ``client-key``) are read before anything is sent, relative to the
kubeconfig holding them, as kubectl reads them; a token file's final line break is dropped
(``values.one_line_token``, the rule of every token).

Proxies: ``proxy-url`` (or ``HTTPS_PROXY``/``HTTP_PROXY`` with ``NO_PROXY``, read as kubectl
reads them: ``agent/kube/proxyenv.py``) may be an ``http://`` or ``https://`` proxy, its user and password in the
URL sent as Proxy-Authorization (kubectl sends them; the client would not). A SOCKS proxy is
refused: urllib3 needs PySocks for it, which is not a dependency (no release since 2019).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import logging
import os
import re
import shutil
import ssl
import urllib.parse

import urllib3

from agent.common import values

PROXY_SCHEMES = ("http", "https")
SOCKS_SCHEMES = ("socks4", "socks4a", "socks5", "socks5h")
CREDENTIALS = ("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
               "client-key-data", "username", "password", "exec", "auth-provider")
IMPERSONATION = ("as", "as-uid", "as-groups", "as-user-extra")
AUTH_PROVIDERS = ("gcp", "oidc")  # what the client implements
ANONYMOUS = "write the user as {} to connect without credentials"


class ConfigError(Exception):
    """No usable cluster configuration; ``str()`` is the one-line reason."""



@dataclasses.dataclass
class Chosen:
    """The selected context's cluster and user as the kubeconfig writes them (``user``: None
    for no user)."""

    cluster_name: str
    cluster: dict
    user_name: str | None
    user: dict | None
    user_base: str = ""  # the directory the user's relative file names are read from


def url_problem(url: str, schemes: tuple[str, ...]) -> str | None:
    """What is wrong with ``url`` as a URL of one of ``schemes`` with a host, worded to follow
    ``..., which`` (or ``..., whose``); None when nothing is."""
    allowed = " or ".join(f"{s}://" for s in schemes)
    if "://" not in url:
        return "which has no scheme"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # an unclosed '[' of an IPv6 address
        return f"which is not an {allowed} URL with a host"
    try:
        port = parts.port
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
        return (f"whose port {port} is out of range: must be from 1 to 65535" if port.isdigit()
                else f"whose port {port!r} is not a number")
    if port == 0:
        return "whose port 0 is out of range: must be from 1 to 65535"
    if parts.scheme.lower() not in schemes or not parts.hostname:
        return f"which is not an {allowed} URL with a host"
    return None


# -- before loading: the files and credentials the user names -------------------------------

def _file_or_data(owner: str, settings: dict, key: str, base: str) -> tuple[str, bytes] | None:
    """(the key read, its content) for the TLS file ``key`` of ``settings`` or its ``key-data``
    (base64, which wins, as the loader reads it); None when neither is set. Raises ConfigError
    naming ``owner`` (``cluster 'c'``, ``user 'u'``) when the value is empty, the file cannot be
    read or the data is not base64."""
    data_key = f"{key}-data"
    for name in (data_key, key):
        if name in settings and not settings[name]:
            raise ConfigError(f"{owner} has an empty {name}: give it or remove the key")
    if data_key in settings:
        text = "".join(str(settings[data_key]).split())
        try:
            return data_key, base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as err:
            raise ConfigError(f"{owner}: its {data_key} is not base64 ({err}): must be the PEM file encoded "
                              "with base64 (base64 -w0 FILE)") from None
    if key in settings:
        return key, _read(owner, key, str(settings[key]), base)
    return None


def _read(owner: str, key: str, value: str, base: str, limit: int | None = None) -> bytes:
    """The content of the file ``value`` (relative to ``base``) that ``owner``'s ``key`` names;
    with ``limit``, refused when it holds more bytes than that (at most ``limit + 1`` are read)."""
    path = os.path.normpath(os.path.join(base, value))
    shown = repr(value) if path == value else f"{value!r} ({path})"
    try:
        with open(path, "rb") as file:
            content = file.read() if limit is None else file.read(limit + 1)
    except OSError as err:
        why = "the file does not exist" if isinstance(err, FileNotFoundError) else (err.strerror or str(err)).lower()
        raise ConfigError(f"{owner}: its {key} {shown} cannot be read: {why}") from None
    if limit is not None and len(content) > limit:
        raise ConfigError(f"{owner}: its {key} {shown} holds more than {limit // 1024} KiB: must hold "
                          f"{values.TOKEN_RULE}")
    return content


def _check_pem(owner: str, key: str, content: bytes, label: str) -> None:
    """Refuse ``content`` of ``owner``'s ``key`` unless it holds a PEM block whose label ends
    with ``label`` (``CERTIFICATE``, ``PRIVATE KEY``)."""
    if b"-----BEGIN " not in content or f"{label}-----".encode() not in content:
        raise ConfigError(f"{owner}: its {key} is not a PEM {label.lower()} (no '-----BEGIN ...{label}-----' line)")


def check_ca(name: str, cluster: dict, base: str) -> None:
    """Refuse a CA of the cluster ``name`` that is empty, cannot be read or is not PEM."""
    ca = _file_or_data(f"cluster {name!r}", cluster, "certificate-authority", base)
    if ca is not None:
        _check_pem(f"cluster {name!r}", ca[0], ca[1], "CERTIFICATE")


def check_user(name: str, user: dict, base: str, cluster: str, server: str) -> dict | None:
    """Refuse a user whose credentials cannot all be sent: impersonation, none the client knows,
    an empty value, half of a pair, a file that cannot be read, a token that is not one line, a
    client certificate over http://, an auth-provider the client does not have. A user with
    nothing in it (``{}``, or only ``extensions``) sends none, on purpose. Returns the user the
    loader is to read (its tokenFile read, its token without the blanks around it), or None when
    it reads ``user`` as it is."""
    if not [k for k in user if k != "extensions"]:
        return None
    who = f"user {name!r}"
    impersonating = [k for k in IMPERSONATION if k in user]
    if impersonating:
        raise ConfigError(f"{who} sets {', '.join(impersonating)} (impersonation), which the agent does not support: "
                          f"its requests would go out as {name!r} itself; remove it")
    if not any(k in user for k in CREDENTIALS):
        raise ConfigError(f"{who} has no credentials the agent can send (it sets {', '.join(map(str, user))}): give "
                          f"token, tokenFile, client-certificate and client-key, username and password, exec or "
                          f"auth-provider, or {ANONYMOUS}")
    for key in ("token", "tokenFile", "username"):
        if key in user and not user[key]:
            raise ConfigError(f"{who} has an empty {key}: give it or remove the key")
    if ("username" in user) != ("password" in user):
        has, lacks = ("username", "password") if "username" in user else ("password", "username")
        raise ConfigError(f"{who} has a {has} but no {lacks}: basic authentication sends both (the agent would "
                          "connect without them)")
    certs = [k for k in ("client-certificate", "client-certificate-data") if k in user]
    keys = [k for k in ("client-key", "client-key-data") if k in user]
    if bool(certs) != bool(keys):
        has, lacks = (certs[0], "client-key or client-key-data") if certs else (keys[0],
                                                                                 "client-certificate or client-certificate-data")
        raise ConfigError(f"{who} has {has} but no {lacks}: a client certificate is sent with its key")
    if certs and not server.startswith("https://"):
        raise ConfigError(f"{who} has a client certificate, which cannot be sent over http:// (cluster {cluster!r} "
                          f"has server {server!r}): use its https:// URL")
    if certs:
        cert = _file_or_data(who, user, "client-certificate", base)
        key = _file_or_data(who, user, "client-key", base)
        _check_pem(who, cert[0], cert[1], "CERTIFICATE")
        _check_pem(who, key[0], key[1], "PRIVATE KEY")
    provider = user.get("auth-provider")
    if "auth-provider" in user and (not isinstance(provider, dict) or provider.get("name") not in AUTH_PROVIDERS):
        named = provider.get("name") if isinstance(provider, dict) else None
        raise ConfigError(f"{who}: its auth-provider {named!r} is not supported: the client has "
                          f"{' and '.join(AUTH_PROVIDERS)}; use an exec credential plugin (kubectl has dropped the others too)")
    if "token" in user:  # the loader prefers it to tokenFile
        token, why = values.one_line_token(str(user["token"]))
        if why:
            raise ConfigError(f"{who}: its token is not {values.TOKEN_RULE} ({why}; not shown)")
        return {**user, "token": token} if token != user["token"] else None
    if "tokenFile" in user:
        token = read_token_file(who, user["tokenFile"], base)
        return {k: v for k, v in user.items() if k != "tokenFile"} | {"token": token}
    return None


def read_token_file(owner: str, value, base: str) -> str:
    """The token in the file ``value`` (relative to ``base``) that ``owner``'s tokenFile names,
    by ``values.one_line_token``. Raises ConfigError naming ``owner`` and the file (never the
    token) when it cannot be read, is not UTF-8 text or does not hold one token on one line.
    Read at load and again by ``agent/kube/tokenfile.py`` while the agent runs."""
    content = _read(owner, "tokenFile", str(value), base, limit=values.MAX_TOKEN_FILE)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{owner}: its tokenFile {value!r} is not UTF-8 text: must hold "
                          f"{values.TOKEN_RULE}") from None
    token, why = values.one_line_token(text)
    if why:
        raise ConfigError(f"{owner}: its tokenFile {value!r} does not hold {values.TOKEN_RULE} ({why})")
    return token


def check_command(user: str, plugin: dict, kubeconfig: str | None) -> None:
    """Refuse an exec plugin whose command cannot be started. The loader starts it as
    ``subprocess`` does, in the directory of the kubeconfig naming the cluster: a name with a
    '/' from there, a bare name on ``PATH`` (the plugin's ``env`` may set it)."""
    command = str(plugin.get("command") or "")
    if not command:
        raise ConfigError(f"user {user!r}: its exec credential plugin has no command")
    fix = "install it or correct users[].user.exec.command"
    if "/" not in command:
        env = plugin.get("env") if isinstance(plugin.get("env"), list) else []
        path = next((str(e.get("value")) for e in env if isinstance(e, dict) and e.get("name") == "PATH"),
                    os.environ.get("PATH", os.defpath))
        if shutil.which(command, path=path) is None:
            raise ConfigError(f"user {user!r}: its exec credential plugin command {command!r} was not found "
                              f"on PATH ({path}); {fix}")
        return
    found = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(kubeconfig)) if kubeconfig else os.getcwd(),
                                          command))
    if not os.path.isfile(found):
        raise ConfigError(f"user {user!r}: its exec credential plugin command {command!r} was not found "
                          f"({found!r} is not a file); {fix}")
    if not os.access(found, os.X_OK):
        raise ConfigError(f"user {user!r}: its exec credential plugin command {command!r} cannot be run "
                          f"({found!r} is not executable); {fix}")


# -- after loading: what the client will send -------------------------------------------------

def check_sent(configuration, chosen: Chosen) -> None:
    """Refuse when the loaded configuration lacks credentials the user configures (an
    auth-provider that gave no token, a client certificate that was not taken): the loader
    goes on without them."""
    user = chosen.user or {}
    header = bool((configuration.api_key or {}).get("BearerToken"))
    cert = bool(configuration.cert_file)
    wanted = []
    if any(k in user for k in ("token", "tokenFile", "username", "auth-provider")) and not header:
        provider = user.get("auth-provider")
        wanted.append(f"its auth-provider {provider.get('name')!r} gave no token" if isinstance(provider, dict)
                      else "its token was not taken")
    if any(k.startswith("client-") for k in user) and not cert:
        wanted.append("its client certificate was not taken")
    if "exec" in user and not (header or cert):
        wanted.append("its exec credential plugin gave no credentials")
    if wanted:
        raise ConfigError(f"user {chosen.user_name!r}: {'; '.join(wanted)}; the agent does not connect without the "
                          "credentials it should send")


def check_tls(configuration, chosen: Chosen) -> None:
    """Refuse a CA, or a client certificate and key, that TLS cannot load (a PEM block that is
    damaged, a key that is not the certificate's): the connection would fail on every request
    as if the server were unreachable."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if configuration.ssl_ca_cert:
        try:
            context.load_verify_locations(cafile=configuration.ssl_ca_cert)
        except (ssl.SSLError, OSError) as err:
            key = "certificate-authority-data" if "certificate-authority-data" in chosen.cluster else "certificate-authority"
            raise ConfigError(f"cluster {chosen.cluster_name!r}: its {key} cannot be loaded as PEM certificates "
                              f"({_ssl_reason(err)})") from None
    if configuration.cert_file:
        asked = []  # a key encrypted with a passphrase: OpenSSL would ask on the terminal

        def passphrase():
            asked.append(True)
            return b""
        try:
            context.load_cert_chain(configuration.cert_file, configuration.key_file, password=passphrase)
        except (ssl.SSLError, OSError) as err:
            if asked:
                raise ConfigError(f"user {chosen.user_name!r}: its client key is encrypted with a passphrase, which "
                                  "the client cannot give: decrypt it (openssl pkey -in KEY -out KEY.plain)") from None
            user = chosen.user or {}
            what = ("its client certificate and key" if any(k.startswith("client-") for k in user)
                    else "the client certificate and key its exec credential plugin gave")
            mismatch = getattr(err, "reason", None) == "KEY_VALUES_MISMATCH"
            why = "the key is not the certificate's" if mismatch else _ssl_reason(err)
            raise ConfigError(f"user {chosen.user_name!r}: {what} cannot be loaded ({why})") from None


def _ssl_reason(err: Exception) -> str:
    reason = getattr(err, "reason", None)
    return str(reason).replace("_", " ").lower() if reason else "a damaged PEM block"


def check_proxy(configuration, cluster: str | None, settings: dict, variable: str | None = None) -> None:
    """Refuse a proxy the client cannot use: not an ``http://`` or ``https://`` URL with a host
    (a SOCKS proxy needs PySocks, not a dependency). The proxy is the cluster's ``proxy-url``,
    else the one ``variable`` (``HTTPS_PROXY`` ...) gave for the server (``clusterconfig``
    chooses it as kubectl does). Its user and password are sent as Proxy-Authorization, as
    kubectl sends them."""
    proxy = configuration.proxy
    if proxy is None or proxy == "":
        return
    if settings.get("proxy-url") and cluster is not None:
        if not isinstance(proxy, str):
            raise ConfigError(f"cluster {cluster!r} has a proxy-url that is not a string: must be an http:// or "
                              "https:// URL, e.g. 'http://proxy.example:3128'")
        given = f"cluster {cluster!r} has proxy-url {without_password(proxy)!r}"
    else:
        given = f"the proxy {without_password(str(proxy))!r} from ${variable or 'HTTPS_PROXY'}"
    proxy = str(proxy)
    scheme = proxy.split("://", 1)[0].lower() if "://" in proxy else ""
    if scheme in SOCKS_SCHEMES:
        raise ConfigError(f"{given}, a SOCKS proxy, which the agent does not support (urllib3 needs PySocks for it, "
                          "which is not installed): use an http:// or https:// proxy, e.g. 'http://proxy.example:3128'")
    if "@" in proxy.partition("://")[2] and "@" not in urllib.parse.urlsplit(proxy).netloc:
        raise ConfigError(f"{given}, whose user or password is not URL-encoded: write '/', '?', '#' and '@' in "
                          "them as %2F, %3F, %23 and %40, e.g. 'http://user:pa%2Fss@proxy.example:3128'")
    why = url_problem(proxy, PROXY_SCHEMES)
    if why:  # a port's problem says what it must be already
        raise ConfigError(f"{given}, {why}" if "must be" in why else
                          f"{given}, {why}: must be an http:// or https:// URL, e.g. 'http://proxy.example:3128'")
    parts = urllib.parse.urlsplit(proxy)
    if parts.username is not None or parts.password is not None:
        credentials = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
        configuration.proxy_headers = {**(configuration.proxy_headers or {}),
                                       **urllib3.util.make_headers(proxy_basic_auth=credentials)}


def without_password(url: str) -> str:
    """``url`` with the password of its user-info shown as ``***``. The user-info ends at the
    last ``@`` of the authority (before the first ``/``, ``?`` or ``#``); when the authority has
    none, a password with an unencoded ``/``, ``?`` or ``#`` is assumed and the last ``@`` of
    the whole URL ends it, so nothing of the password is shown either way."""
    head, sep, tail = url.partition("://")
    authority = re.split(r"[/?#]", tail, maxsplit=1)[0]
    userinfo, at, _ = (authority if "@" in authority else tail).rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{head}://{userinfo.split(':', 1)[0]}:***@{tail[len(userinfo) + 1:]}"


class _Collect(logging.Filter):
    """Keeps (and drops) what the kubeconfig loader logs as an error while it loads."""

    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and os.path.basename(record.pathname) == "kube_config.py":
            self.messages.append(" ".join(record.getMessage().split()))
            return False
        return True


@contextlib.contextmanager
def exec_errors():
    """The errors the loader logs (on the root logger) instead of raising, while the block
    runs: an exec plugin that failed or answered without credentials."""
    collect = _Collect()
    root = logging.getLogger()
    root.addFilter(collect)
    try:
        yield collect.messages
    finally:
        root.removeFilter(collect)
