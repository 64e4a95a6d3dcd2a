"""The cluster configuration: the in-cluster service account or a kubeconfig, loaded into a
``kubernetes.client.Configuration``, every way it can be wrong refused with one reason.

Why a module of its own: the official client's loader is lenient where the agent must not be.
It reads a kubeconfig it may not open as "no configuration" (the reason lost), takes a server
without a scheme (``127.0.0.1:6443``) as plain HTTP behind a FutureWarning (a bearer token in
clear text), and when a user's ``exec`` credential plugin cannot run it logs the error and
carries on unauthenticated: every request then goes out anonymous (fail open). Here each of
these stops the command before anything runs, with a message naming the file, context,
cluster or user and what is allowed.

A server without a scheme is refused, not completed: kubectl completes it with ``https://``
only when the cluster has TLS settings (a CA, a client certificate or
``insecure-skip-tls-verify``) and with ``http://`` otherwise, so neither guess would always
match what kubectl does, and a wrong ``http://`` guess sends the credentials unencrypted.

Uses the client's public ``KubeConfigMerger`` (several files in ``$KUBECONFIG``, as kubectl
merges them) and ``KubeConfigLoader``; reads the selected context, cluster and user from the
merged configuration before the loader runs anything.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import urllib.parse

import yaml
from kubernetes import config
from kubernetes.config import kube_config

from . import flags

LOOKED_FOR = ("looked for the in-cluster service account, then $KUBECONFIG or ~/.kube/config; "
              "give --kubeconfig FILE")
SCHEMES = ("https", "http")
NOT_A_KUBECONFIG = "not a kubeconfig file (YAML with clusters, users and contexts)"


class ConfigError(Exception):
    """No usable cluster configuration; ``str()`` is the one-line reason."""


def load(configuration, kubeconfig: str | None = None, context: str | None = None) -> None:
    """Fill ``configuration`` (a ``kubernetes.client.Configuration``) from ``kubeconfig`` (a
    file) and ``context``; with neither, from the in-cluster service account when there is
    one, else from ``$KUBECONFIG`` (a list of files, as kubectl reads it) or ``~/.kube/config``.
    Raises ConfigError with the reason: a file that cannot be read (and the OS's reason), is
    not a kubeconfig, has no such context (the ones it has are listed), a cluster server that
    is not an ``https://`` or ``http://`` URL, a user whose exec credential plugin is missing
    or fails."""
    if not kubeconfig and not context:
        try:
            config.load_incluster_config(client_configuration=configuration)
            return
        except config.ConfigException:
            pass
    paths = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    if kubeconfig:
        try:
            os.stat(kubeconfig)
        except FileNotFoundError:
            raise ConfigError("the file does not exist") from None
        except OSError as err:
            raise ConfigError(f"cannot be read: {err.strerror or err}") from None
    try:
        merged = kube_config.KubeConfigMerger(paths)
    except OSError as err:  # chmod 000, a directory
        where = "" if kubeconfig else f"{err.filename} "
        raise ConfigError(f"{where}cannot be read: {err.strerror or err}") from None
    except config.ConfigException as err:  # an empty file
        raise ConfigError(" ".join(str(err).split())) from None
    except (yaml.YAMLError, AttributeError, TypeError, KeyError):
        raise ConfigError(NOT_A_KUBECONFIG) from None
    if merged.config is None:
        raise ConfigError(f"no configuration found ({LOOKED_FOR})")
    try:
        loader = _loader(merged, context)
        with _exec_errors() as failed:
            loader.load_and_set(configuration)
    except config.ConfigException as err:
        raise ConfigError(" ".join(str(err).split())) from None
    except (AttributeError, TypeError, KeyError, ValueError):
        raise ConfigError(NOT_A_KUBECONFIG) from None
    if failed:  # the loader logged it and went on without credentials
        user, plugin = _exec_of(merged.config, loader.current_context["context"])
        command = (plugin or {}).get("command")
        raise ConfigError(f"user {user!r}: its exec credential plugin {command!r} failed ({failed[0]}); "
                          "the agent does not connect without the credentials it should send")


def _loader(merged, context: str | None):
    """The loader of the merged configuration for ``context`` (None: its current-context),
    after checking what it will use: the context exists, its cluster's server is a URL, the
    exec plugin of its user can be found."""
    root = merged.config
    names = [_value(c).get("name") for c in root.safe_get("contexts") or []]
    known = ", ".join(str(n) for n in names) or "it has none"
    if context is not None and context not in names:
        given = flags.shown(context) if isinstance(context, flags.EnvValue) else f"--context {context!r}"
        raise ConfigError(f"{given} is not one of its contexts ({known})")
    current = root.safe_get("current-context")
    if context is None and not current:
        raise ConfigError(f"it names no current-context: give --context NAME (its contexts: {known})")
    if context is None and current not in names:
        raise ConfigError(f"its current-context {current!r} is not one of its contexts ({known})")
    loader = kube_config.KubeConfigLoader(config_dict=root, active_context=context, config_base_path=None,
                                          config_persister=merged.save_changes)
    selected = loader.current_context["context"]
    cluster = root["clusters"].get_with_name(selected["cluster"])
    _check_server(selected["cluster"], _value(cluster).get("cluster", {}).get("server"))
    user, plugin = _exec_of(root, selected)
    if plugin is not None:
        _check_command(user, plugin, cluster.path)
    return loader


def _value(node):
    """The plain value of a ``ConfigNode`` (the merger wraps each list item in one)."""
    value = getattr(node, "value", node)
    return value if isinstance(value, dict) else {}


def _check_server(cluster: str, server) -> None:
    """Refuse a server that is not an ``https://`` or ``http://`` URL with a host."""
    if not server:
        raise ConfigError(f"cluster {cluster!r} has no server: must be a URL starting with https:// "
                          "(e.g. 'https://HOST:6443')")
    server = str(server)
    parts = urllib.parse.urlsplit(server)
    try:
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
        hostname = parts.hostname
    except ValueError:
        hostname = None
    if parts.scheme.lower() not in SCHEMES or not hostname:
        scheme = "://" in server
        why = "is not an https:// or http:// URL with a host" if scheme else "has no scheme"
        example = "https://HOST:6443" if scheme else f"https://{server}"
        raise ConfigError(f"cluster {cluster!r} has server {server!r}, which {why}: must be a URL starting "
                          f"with https:// (or http://), e.g. {example!r}; the agent does not guess the scheme")


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
