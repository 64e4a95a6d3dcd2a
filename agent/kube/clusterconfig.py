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

Credentials, TLS files and proxies are checked by ``agent/kube/kubecreds.py`` (all or nothing: the
agent never connects with fewer credentials than configured); this module reads the files,
chooses the context, its cluster and its user, checks the server, and runs the loader.

Uses the client's public ``KubeConfigMerger`` (several files in ``$KUBECONFIG``, as kubectl
merges them) and ``KubeConfigLoader``; reads every file and the selected context, cluster and
user before the loader runs anything.
"""

from __future__ import annotations

import os

from kubernetes import config
from kubernetes.config import kube_config

from agent.common import values
from agent.kube import proxyenv, tokenfile
from agent.kube.kubecreds import (ANONYMOUS, Chosen, ConfigError, check_ca, check_command, check_proxy, check_sent,
                                  check_tls, check_user, exec_errors, url_problem)
from agent.manifests import yamlload

__all__ = ["ConfigError", "load"]

LOOKED_FOR = ("looked for the in-cluster service account, then $KUBECONFIG or ~/.kube/config; "
              "give --kubeconfig FILE")
SCHEMES = ("https", "http")
NOT_A_KUBECONFIG = "not a kubeconfig file (YAML with clusters, users and contexts)"


IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def load(configuration, kubeconfig: str | None = None, context: str | None = None) -> str:
    """Fill ``configuration`` (a ``kubernetes.client.Configuration``) from ``kubeconfig`` (a
    file) and ``context``; with neither, from the in-cluster service account when there is
    one, else from ``$KUBECONFIG`` (a list of files, as kubectl reads it) or ``~/.kube/config``.
    Raises ConfigError with the reason: a file that cannot be read (and the OS's reason), is
    not UTF-8 text or not a kubeconfig, has no such context (the ones it has are listed), a
    context naming a cluster or user it does not have, a cluster server that is not an
    ``https://`` or ``http://`` URL, a user whose credentials cannot all be sent (a file missing,
    a half of a pair, an exec credential plugin missing or failing), a proxy that is not an
    ``http://`` or ``https://`` URL. A user's tokenFile is read again while ``configuration`` is
    used, at most once a minute, as kubectl reads it (``agent/kube/tokenfile.py``).

    Returns the namespace a command without ``-n`` works in, as kubectl chooses it (client-go's
    ``clientcmd``): the chosen context's ``namespace``, else ``default``; in the cluster
    ``$POD_NAMESPACE``, else the service account's namespace file, else ``default``."""
    if not kubeconfig and not context:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            pass
        else:
            check_proxy(configuration, None, {}, _choose_proxy(configuration, {}))
            return _in_cluster_namespace()
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
    except (config.ConfigException, yamlload.YAMLError, AttributeError, TypeError, KeyError):
        raise ConfigError(NOT_A_KUBECONFIG) from None
    if merged.config is None:
        raise ConfigError(f"no configuration found ({LOOKED_FOR})")
    loader, chosen = _loader(merged, context, current)
    try:
        with exec_errors() as failed:
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
    check_sent(configuration, chosen)
    check_tls(configuration, chosen)
    check_proxy(configuration, chosen.cluster_name, chosen.cluster, _choose_proxy(configuration, chosen.cluster))
    tokenfile.install(configuration, chosen)
    namespace = (loader.current_context.get("context") or {}).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def _in_cluster_namespace() -> str:
    """The namespace of the pod this runs in (client-go's ``inClusterClientConfig.Namespace``)."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open(IN_CLUSTER_NAMESPACE_FILE, encoding="utf-8") as file:
            return file.read().strip() or "default"
    except OSError:
        return "default"


def _choose_proxy(configuration, cluster: dict) -> str | None:
    """Set the proxy of ``configuration`` as kubectl chooses it, once, and return the environment
    variable it came from (None: the cluster's ``proxy-url``, or no proxy). ``cluster``: the
    kubeconfig's cluster settings (``{}`` in the cluster).

    kubectl uses a cluster's ``proxy-url`` for every request, ``NO_PROXY`` or not; without one,
    the environment as Go reads it (``agent/kube/proxyenv.py``: never for a loopback server,
    ``HTTPS_PROXY`` before ``https_proxy``, no ``ALL_PROXY``). Setting the proxy explicitly also
    keeps the client from reading the whole environment again before every request: its
    loaders' token hook re-sets the server's URL each time, and the URL's setter re-reads the
    proxy (``urllib.request.getproxies``), about 64 us of CPU per request (issue 11)."""
    variable = None
    if not cluster.get("proxy-url"):
        proxy, variable = proxyenv.chosen(configuration.host, os.environ)
        configuration.proxy = proxy
    else:
        configuration.proxy = configuration.proxy
    configuration.no_proxy = None  # decided here: the REST client must not apply NO_PROXY again
    return variable


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
            doc = yamlload.safe_load(data.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ConfigError(_about(path, named, f"is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                                                  f"{err.start}): must be a kubeconfig file (YAML with clusters, "
                                                  "users and contexts)")) from None
        except yamlload.YAMLError as err:
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

def _loader(merged, context: str | None, current: str | None):
    """(the loader of the merged configuration for ``context`` (None: ``current``), the chosen
    cluster and user), after checking what it will use: the context exists and names a cluster
    and a user it has, the cluster's server is a URL and its CA can be read, the user's
    credentials can all be read and sent, its exec plugin can be found."""
    root = merged.config
    names = [_value(c).get("name") for c in root.safe_get("contexts") or []]
    known = ", ".join(str(n) for n in names) or "it has none"
    if context is not None and context not in names:
        given = values.shown(context) if isinstance(context, values.EnvValue) else f"--context {context!r}"
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
    if "proxy-url" in cluster and cluster["proxy-url"] in (None, ""):  # as kubectl: no proxy-url at all (the loader
        del cluster["proxy-url"]  # would put the empty one back before every request, over the environment's)
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
        check_ca(cluster_name, cluster, _base(cluster_node))
    new_user = check_user(user_name, user, _base(user_node), cluster_name, server) if user else None
    chosen = Chosen(cluster_name, cluster, user_name, user, _base(user_node))
    if server != cluster.get("server"):
        root = _replaced(root, "clusters", cluster_node, "cluster", {**cluster, "server": server})
    if new_user is not None:
        root = _replaced(root, "users", user_node, "user", new_user)
    loader = kube_config.KubeConfigLoader(config_dict=root, active_context=name, config_base_path=None,
                                          config_persister=merged.save_changes)
    plugin_user, plugin = _exec_of(root, loader.current_context["context"])
    if plugin is not None:
        check_command(plugin_user, plugin, cluster_node.path)
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


def _check_server(cluster: str, server) -> str:
    """The server of ``cluster`` with its scheme in lowercase (``HTTPS://`` is https for kubectl;
    the loader would skip the CA and the client certificate). Refuses a server that is not an
    ``https://`` or ``http://`` URL with a host and a port from 1 to 65535."""
    if not server:
        raise ConfigError(f"cluster {cluster!r} has no server: must be a URL starting with https:// "
                          "(e.g. 'https://HOST:6443')")
    server = str(server)
    why = url_problem(server, SCHEMES)
    if why and why.startswith("whose port"):
        raise ConfigError(f"cluster {cluster!r} has server {server!r}, {why}")
    if why:
        example = "https://HOST:6443" if "://" in server else f"https://{server}"
        raise ConfigError(f"cluster {cluster!r} has server {server!r}, {why}: must be a URL starting with https:// "
                          f"(or http://), e.g. {example!r}; the agent does not guess the scheme")
    scheme, rest_ = server.split("://", 1)
    return f"{scheme.lower()}://{rest_}"


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

