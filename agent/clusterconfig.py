"""The cluster configuration: the in-cluster service account or a kubeconfig, loaded into a
``kubernetes.client.Configuration``, every way it can be wrong refused with one reason.

Why a module of its own: the official client's loader is lenient where the agent must not be.
It reads a kubeconfig it may not open as "no configuration" (the reason lost), takes a server
without a scheme (``127.0.0.1:6443``) as plain HTTP behind a FutureWarning (a bearer token in
clear text), and when a user's ``exec`` credential plugin cannot run it logs the error and
carries on unauthenticated: every request then goes out anonymous (fail open). The same happens
for a context naming a user that is not in ``users:``, a user with a ``username`` and no
``password``, an empty ``tokenFile`` or a client certificate without its key. Here each of these
stops the command before anything runs, with a message naming the file, context, cluster or user
and what is allowed, in the agent's words (never the client's ``Invalid kube-config file ...``,
an OS error number or a traceback).

A server without a scheme is refused, not completed: kubectl completes it with ``https://``
only when the cluster has TLS settings (a CA, a client certificate or
``insecure-skip-tls-verify``) and with ``http://`` otherwise, so neither guess would always
match what kubectl does, and a wrong ``http://`` guess sends the credentials unencrypted.

Credentials are all or nothing. A user written as ``{}`` (or a context naming no user) sends
none, on purpose, as kubectl allows for a cluster behind ``kubectl proxy`` or another
authenticating proxy. A user that names credentials must yield them: the agent never connects
with fewer than the kubeconfig configures (impersonation, which the client cannot send, is
refused too). The files a cluster or user names (``tokenFile``, ``certificate-authority``,
``client-certificate``, ``client-key``) are read before anything is sent, relative to the
kubeconfig holding them, as kubectl reads them; a token file's final line break is dropped
(``flags.one_line_token``, the rule of every token).

Proxies: ``proxy-url`` (or ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``, which the client reads
too, with ``NO_PROXY``) may be an ``http://`` or ``https://`` proxy, its user and password in the
URL sent as Proxy-Authorization (kubectl sends them; the client would not). A SOCKS proxy is
refused: urllib3 needs PySocks for it, which is not a dependency (no release since 2019).

Uses the client's public ``KubeConfigMerger`` (several files in ``$KUBECONFIG``, as kubectl
merges them) and ``KubeConfigLoader``; reads every file and the selected context, cluster and
user before the loader runs anything.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import logging
import os
import shutil
import ssl
import urllib.parse

import urllib3
import yaml
from kubernetes import config
from kubernetes.client import rest
from kubernetes.config import kube_config

from . import flags

LOOKED_FOR = ("looked for the in-cluster service account, then $KUBECONFIG or ~/.kube/config; "
              "give --kubeconfig FILE")
SCHEMES = ("https", "http")
PROXY_SCHEMES = ("http", "https")
SOCKS_SCHEMES = ("socks4", "socks4a", "socks5", "socks5h")
NOT_A_KUBECONFIG = "not a kubeconfig file (YAML with clusters, users and contexts)"
CREDENTIALS = ("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
               "client-key-data", "username", "password", "exec", "auth-provider")
IMPERSONATION = ("as", "as-uid", "as-groups", "as-user-extra")
AUTH_PROVIDERS = ("gcp", "oidc")  # what the client implements
ANONYMOUS = "write the user as {} to connect without credentials"


class ConfigError(Exception):
    """No usable cluster configuration; ``str()`` is the one-line reason."""


def load(configuration, kubeconfig: str | None = None, context: str | None = None) -> None:
    """Fill ``configuration`` (a ``kubernetes.client.Configuration``) from ``kubeconfig`` (a
    file) and ``context``; with neither, from the in-cluster service account when there is
    one, else from ``$KUBECONFIG`` (a list of files, as kubectl reads it) or ``~/.kube/config``.
    Raises ConfigError with the reason: a file that cannot be read (and the OS's reason), is
    not UTF-8 text or not a kubeconfig, has no such context (the ones it has are listed), a
    context naming a cluster or user it does not have, a cluster server that is not an
    ``https://`` or ``http://`` URL, a user whose credentials cannot all be sent (a file missing,
    a half of a pair, an exec credential plugin missing or failing), a proxy that is not an
    ``http://`` or ``https://`` URL."""
    if not kubeconfig and not context:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            pass
        else:
            _check_proxy(configuration, None, {})
            return
    if kubeconfig:
        try:
            os.stat(kubeconfig)
        except FileNotFoundError:
            raise ConfigError("the file does not exist") from None
        except OSError as err:
            raise ConfigError(f"cannot be read: {err.strerror or err}") from None
        if kube_config.ENV_KUBECONFIG_PATH_SEPARATOR in kubeconfig:  # the merger would split it
            raise ConfigError(f"its path holds {kube_config.ENV_KUBECONFIG_PATH_SEPARATOR!r}, which the client reads "
                              "as a list of files: give it another name (or a link to it)")
        files, current = _read_files([kubeconfig], named=False)  # the caller names it
    else:  # a list, as kubectl reads it
        files, current = _read_files([os.path.expanduser(p) for p in (os.environ.get("KUBECONFIG") or "~/.kube/config")
                                      .split(kube_config.ENV_KUBECONFIG_PATH_SEPARATOR) if p], named=True)
    if not files:
        raise ConfigError(f"no configuration found ({LOOKED_FOR})")
    try:
        merged = kube_config.KubeConfigMerger(kube_config.ENV_KUBECONFIG_PATH_SEPARATOR.join(files))
    except OSError as err:  # changed since it was read
        raise ConfigError(f"{err.filename} cannot be read: {err.strerror or err}") from None
    except (config.ConfigException, yaml.YAMLError, AttributeError, TypeError, KeyError):
        raise ConfigError(NOT_A_KUBECONFIG) from None
    if merged.config is None:
        raise ConfigError(f"no configuration found ({LOOKED_FOR})")
    loader, chosen = _loader(merged, context, current)
    try:
        with _exec_errors() as failed:
            loader.load_and_set(configuration)
    except OSError as err:  # a file named in it, changed since it was read
        raise ConfigError(f"{err.filename} cannot be read: {err.strerror or err}") from None
    except (config.ConfigException, AttributeError, TypeError, KeyError, ValueError) as err:
        provider = (chosen.user or {}).get("auth-provider")
        if isinstance(provider, dict):  # gcp without google-auth, a cmd-path that fails
            why = " ".join(str(err).split()) if isinstance(err, config.ConfigException) else "it gave no token"
            raise ConfigError(f"user {chosen.user_name!r}: its auth-provider {provider.get('name')!r} failed "
                              f"({why}); the agent does not connect without the credentials it should send") from None
        raise ConfigError(NOT_A_KUBECONFIG) from None
    if failed:  # the loader logged it and went on without credentials
        user, plugin = _exec_of(merged.config, loader.current_context["context"])
        command = (plugin or {}).get("command")
        raise ConfigError(f"user {user!r}: its exec credential plugin {command!r} failed ({failed[0]}); "
                          "the agent does not connect without the credentials it should send")
    _check_sent(configuration, chosen)
    _check_tls(configuration, chosen)
    _check_proxy(configuration, chosen.cluster_name, chosen.cluster)


# -- the files --------------------------------------------------------------------------------

def _read_files(paths: list[str], named: bool) -> tuple[list[str], str | None]:
    """(the files of ``paths`` that hold a configuration, the current-context of the first file
    that sets one, as kubectl merges them: the merger would take the last). Each file is read as
    UTF-8 YAML whose clusters, contexts and users are lists of entries with a name. ``named``:
    ``paths`` is ``$KUBECONFIG``'s list, whose missing or empty files are skipped, as kubectl
    skips them, and messages name the file; else it is ``--kubeconfig``'s one file, which the
    caller names, and empty is an error."""
    kept, current = [], None
    for path in paths:
        if not os.path.exists(path):
            continue
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as err:  # chmod 000, a directory
            raise ConfigError(_about(path, named, f"cannot be read: {err.strerror or err}")) from None
        try:
            doc = yaml.safe_load(data.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ConfigError(_about(path, named, f"is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                                                  f"{err.start}): must be a kubeconfig file (YAML with clusters, "
                                                  "users and contexts)")) from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark is not None else ""
            why = getattr(err, "problem", None) or "invalid YAML"
            raise ConfigError(_about(path, named, f"is {NOT_A_KUBECONFIG}: its YAML is invalid{at} ({why})")) from None
        if doc is None:  # nothing but comments
            if not named:
                raise ConfigError("it is empty: must be a kubeconfig file (YAML with clusters, users and contexts)")
            continue
        problem = _shape_problem(doc)
        if problem:
            raise ConfigError(_about(path, named, f"is {NOT_A_KUBECONFIG}: {problem}"))
        if current is None and doc.get("current-context"):
            current = doc["current-context"]
        kept.append(path)
    return kept, current


def _about(path: str, named: bool, phrase: str) -> str:
    """``phrase`` (``is ...``, ``cannot be read ...``) about the file ``path``, named or not."""
    return f"{path} {phrase}" if named else phrase.removeprefix("is ")


def _shape_problem(doc) -> str | None:
    """What keeps the YAML document ``doc`` from being a kubeconfig the merger can read, in
    words; None when nothing does."""
    if not isinstance(doc, dict):
        return f"it holds {_kind(doc)}, not a mapping"
    for key in ("clusters", "contexts", "users"):
        items = doc.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return f"its {key} is {_kind(items)}, not a list"
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                return f"{key}[{i}] has no name"
    if not isinstance(doc.get("current-context") or "", str):
        return f"its current-context is {_kind(doc['current-context'])}, not a name"
    return None


def _kind(value) -> str:
    kinds = {str: "a string", list: "a list", dict: "a mapping", bool: "a boolean", int: "a number", float: "a number"}
    return kinds.get(type(value), "a value")


# -- the context, its cluster and its user ----------------------------------------------------

@dataclasses.dataclass
class _Chosen:
    """The selected context's cluster and user as the kubeconfig writes them (``user``: None
    for no user)."""

    cluster_name: str
    cluster: dict
    user_name: str | None
    user: dict | None


def _loader(merged, context: str | None, current: str | None):
    """(the loader of the merged configuration for ``context`` (None: ``current``), the chosen
    cluster and user), after checking what it will use: the context exists and names a cluster
    and a user it has, the cluster's server is a URL and its CA can be read, the user's
    credentials can all be read and sent, its exec plugin can be found."""
    root = merged.config
    names = [_value(c).get("name") for c in root.safe_get("contexts") or []]
    known = ", ".join(str(n) for n in names) or "it has none"
    if context is not None and context not in names:
        given = flags.shown(context) if isinstance(context, flags.EnvValue) else f"--context {context!r}"
        raise ConfigError(f"{given} is not one of its contexts ({known})")
    if context is None and not current:
        raise ConfigError(f"it names no current-context: give --context NAME (its contexts: {known})")
    if context is None and current not in names:
        raise ConfigError(f"its current-context {current!r} is not one of its contexts ({known})")
    name = context if context is not None else current
    settings = _value(_named(root, "contexts", name)).get("context")
    if not isinstance(settings, dict):
        raise ConfigError(f"context {name!r} has no settings: must be a mapping naming a cluster and a user")
    cluster_name = settings.get("cluster")
    cluster_node = _named(root, "clusters", cluster_name) if cluster_name else None
    if cluster_node is None:
        clusters = ", ".join(str(_value(c).get("name")) for c in root.safe_get("clusters") or []) or "it has none"
        what = f"names cluster {cluster_name!r}, which is not" if cluster_name else "names no cluster: must name"
        raise ConfigError(f"context {name!r} {what} one of its clusters ({clusters})")
    cluster = _value(cluster_node).get("cluster")
    if not isinstance(cluster, dict):
        raise ConfigError(f"cluster {cluster_name!r} has no settings: must be a mapping with a server")
    server = _check_server(cluster_name, cluster.get("server"))
    user_name, user, user_node = settings.get("user") or None, None, None
    if user_name is not None:
        user_node = _named(root, "users", user_name)
        if user_node is None:
            users = ", ".join(str(_value(u).get("name")) for u in root.safe_get("users") or []) or "it has none"
            raise ConfigError(f"context {name!r} names user {user_name!r}, which is not one of its users ({users}); "
                              "the agent does not connect without its credentials")
        user = _value(user_node).get("user")
        if user is not None and not isinstance(user, dict):
            raise ConfigError(f"user {user_name!r} is {_kind(user)}: must be a mapping of credentials ({ANONYMOUS})")
    if server.startswith("https://"):  # the loader reads the CA for https only
        _check_ca(cluster_name, cluster, _base(cluster_node))
    new_user = _check_user(user_name, user, _base(user_node), cluster_name, server) if user else None
    chosen = _Chosen(cluster_name, cluster, user_name, user)
    if server != cluster.get("server"):
        root = _replaced(root, "clusters", cluster_node, "cluster", {**cluster, "server": server})
    if new_user is not None:
        root = _replaced(root, "users", user_node, "user", new_user)
    loader = kube_config.KubeConfigLoader(config_dict=root, active_context=name, config_base_path=None,
                                          config_persister=merged.save_changes)
    plugin_user, plugin = _exec_of(root, loader.current_context["context"])
    if plugin is not None:
        _check_command(plugin_user, plugin, cluster_node.path)
    return loader, chosen


def _value(node):
    """The plain value of a ``ConfigNode`` (the merger wraps each list item in one)."""
    value = getattr(node, "value", node)
    return value if isinstance(value, dict) else {}


def _named(root, kind: str, name):
    """The entry of ``root``'s list ``kind`` named ``name`` (the first: the merger keeps the
    first of a name, as kubectl does), or None."""
    return next((item for item in root.safe_get(kind) or [] if _value(item).get("name") == name), None)


def _base(node) -> str:
    """The directory relative paths in ``node`` are read from: its kubeconfig's, as the loader
    and kubectl read them."""
    path = getattr(node, "path", None)
    return os.path.abspath(os.path.dirname(path)) if path else ""


def _replaced(root, kind: str, node, key: str, value: dict):
    """A copy of ``root`` whose entry ``node`` of the list ``kind`` holds ``value`` at ``key``
    (the loader reads the copy; the merger's files, which it may write back, stay as they were)."""
    items = [kube_config.ConfigNode(n.name, {**n.value, key: value}, n.path) if n is node else n
             for n in root.value[kind]]
    return kube_config.ConfigNode(root.name, {**root.value, kind: items}, root.path)


def _url_problem(url: str, schemes: tuple[str, ...]) -> str | None:
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


def _check_server(cluster: str, server) -> str:
    """The server of ``cluster`` with its scheme in lowercase (``HTTPS://`` is https for kubectl;
    the loader would skip the CA and the client certificate). Refuses a server that is not an
    ``https://`` or ``http://`` URL with a host and a port from 1 to 65535."""
    if not server:
        raise ConfigError(f"cluster {cluster!r} has no server: must be a URL starting with https:// "
                          "(e.g. 'https://HOST:6443')")
    server = str(server)
    why = _url_problem(server, SCHEMES)
    if why and why.startswith("whose port"):
        raise ConfigError(f"cluster {cluster!r} has server {server!r}, {why}")
    if why:
        example = "https://HOST:6443" if "://" in server else f"https://{server}"
        raise ConfigError(f"cluster {cluster!r} has server {server!r}, {why}: must be a URL starting with https:// "
                          f"(or http://), e.g. {example!r}; the agent does not guess the scheme")
    scheme, rest_ = server.split("://", 1)
    return f"{scheme.lower()}://{rest_}"


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


def _read(owner: str, key: str, value: str, base: str) -> bytes:
    """The content of the file ``value`` (relative to ``base``) that ``owner``'s ``key`` names."""
    path = os.path.normpath(os.path.join(base, value))
    shown = repr(value) if path == value else f"{value!r} ({path})"
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as err:
        why = "the file does not exist" if isinstance(err, FileNotFoundError) else (err.strerror or str(err)).lower()
        raise ConfigError(f"{owner}: its {key} {shown} cannot be read: {why}") from None


def _check_pem(owner: str, key: str, content: bytes, label: str) -> None:
    """Refuse ``content`` of ``owner``'s ``key`` unless it holds a PEM block whose label ends
    with ``label`` (``CERTIFICATE``, ``PRIVATE KEY``)."""
    if b"-----BEGIN " not in content or f"{label}-----".encode() not in content:
        raise ConfigError(f"{owner}: its {key} is not a PEM {label.lower()} (no '-----BEGIN ...{label}-----' line)")


def _check_ca(name: str, cluster: dict, base: str) -> None:
    """Refuse a CA of the cluster ``name`` that is empty, cannot be read or is not PEM."""
    ca = _file_or_data(f"cluster {name!r}", cluster, "certificate-authority", base)
    if ca is not None:
        _check_pem(f"cluster {name!r}", ca[0], ca[1], "CERTIFICATE")


def _check_user(name: str, user: dict, base: str, cluster: str, server: str) -> dict | None:
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
        token, why = flags.one_line_token(str(user["token"]))
        if why:
            raise ConfigError(f"{who}: its token is not {flags.TOKEN_RULE} ({why}; not shown)")
        return {**user, "token": token} if token != user["token"] else None
    if "tokenFile" in user:
        content = _read(who, "tokenFile", str(user["tokenFile"]), base)
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{who}: its tokenFile {user['tokenFile']!r} is not UTF-8 text: must hold "
                              f"{flags.TOKEN_RULE}") from None
        token, why = flags.one_line_token(text)
        if why:
            raise ConfigError(f"{who}: its tokenFile {user['tokenFile']!r} does not hold {flags.TOKEN_RULE} ({why})")
        return {k: v for k, v in user.items() if k != "tokenFile"} | {"token": token}
    return None


def _exec_of(root, context: dict) -> tuple[str | None, dict | None]:
    """(the user named by ``context``, its exec plugin's settings when the loader would run
    it, else None): the loader tries an auth-provider and a token first."""
    name = context.get("user")
    entry = next((_value(u) for u in root.safe_get("users") or [] if _value(u).get("name") == name), {})
    user = entry.get("user") if isinstance(entry.get("user"), dict) else {}
    plugin = user.get("exec")
    if not name or not isinstance(plugin, dict) or user.get("token") or user.get("tokenFile") \
            or user.get("auth-provider"):
        return name, None
    return name, plugin


def _check_command(user: str, plugin: dict, kubeconfig: str | None) -> None:
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

def _check_sent(configuration, chosen: _Chosen) -> None:
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


def _check_tls(configuration, chosen: _Chosen) -> None:
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


def _check_proxy(configuration, cluster: str | None, settings: dict) -> None:
    """Refuse a proxy the client cannot use: not an ``http://`` or ``https://`` URL with a host
    (a SOCKS proxy needs PySocks, not a dependency). The proxy comes from the cluster's
    ``proxy-url`` or the environment (``HTTPS_PROXY`` ...), unless ``NO_PROXY`` bypasses it for
    the server. Its user and password are sent as Proxy-Authorization, as kubectl sends them."""
    proxy = configuration.proxy
    bypass = getattr(rest, "should_bypass_proxies", None)
    if not proxy or (bypass is not None and bypass(configuration.host, configuration.no_proxy or "")):
        return
    proxy = str(proxy)
    shown = _without_password(proxy)
    if settings.get("proxy-url") and cluster is not None:
        given = f"cluster {cluster!r} has proxy-url {shown!r}"
    else:
        names = [n for n in os.environ if n.lower() in ("https_proxy", "http_proxy", "all_proxy")
                 and os.environ[n] == proxy]
        given = f"the proxy {shown!r} from ${names[0] if names else 'HTTPS_PROXY'}"
    scheme = proxy.split("://", 1)[0].lower() if "://" in proxy else ""
    if scheme in SOCKS_SCHEMES:
        raise ConfigError(f"{given}, a SOCKS proxy, which the agent does not support (urllib3 needs PySocks for it, "
                          "which is not installed): use an http:// or https:// proxy, e.g. 'http://proxy.example:3128'")
    why = _url_problem(proxy, PROXY_SCHEMES)
    if why:
        raise ConfigError(f"{given}, {why}: must be an http:// or https:// URL, e.g. 'http://proxy.example:3128'")
    parts = urllib.parse.urlsplit(proxy)
    if parts.username is not None or parts.password is not None:
        credentials = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
        configuration.proxy_headers = {**(configuration.proxy_headers or {}),
                                       **urllib3.util.make_headers(proxy_basic_auth=credentials)}


def _without_password(url: str) -> str:
    """``url`` with the password of its user-info shown as ``***``."""
    head, sep, tail = url.partition("://")
    userinfo, at, host = tail.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{head}://{userinfo.split(':', 1)[0]}:***@{host}"


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
def _exec_errors():
    """The errors the loader logs (on the root logger) instead of raising, while the block
    runs: an exec plugin that failed or answered without credentials."""
    collect = _Collect()
    root = logging.getLogger()
    root.addFilter(collect)
    try:
        yield collect.messages
    finally:
        root.removeFilter(collect)
