"""The proxy for the API server, chosen as kubectl chooses it, against the real control plane
(on loopback): an environment proxy is not used for it, a kubeconfig's proxy-url always is."""

from __future__ import annotations

import sys

import pytest
import yaml

from tests.support import app_yaml

pytestmark = pytest.mark.usefixtures("crd")
DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens on port 9 (discard) here
NO_BYPASS = {"NO_PROXY": "", "no_proxy": ""}  # whatever the runner has: empty counts as unset


def test_an_environment_proxy_is_not_used_for_a_loopback_server(agent, repo, namespace, objects):
    """kubectl run in a shell with HTTPS_PROXY set for the internet still reaches a local cluster."""
    repo.write("apps/web.yaml", app_yaml("web"))
    head = repo.commit()
    proc = agent.sync(repo.path, "--namespace", namespace,
                      env={"HTTPS_PROXY": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY, **NO_BYPASS})
    assert proc.returncode == 0, proc.stderr
    assert objects.app(namespace, "web")["status"]["lastSyncedCommit"] == head


def test_a_proxy_url_is_used_whatever_no_proxy_says_and_named_when_it_fails(agent, repo, namespace, cluster, tmp_path,
                                                                          objects):
    config = yaml.safe_load(open(cluster.kubeconfig))
    config["clusters"][0]["cluster"]["proxy-url"] = DEAD_PROXY
    proxied = tmp_path / "proxied-kubeconfig"
    proxied.write_text(yaml.safe_dump(config))
    repo.write("apps/web.yaml", app_yaml("web"))
    repo.commit()
    proc = agent.run([sys.executable, "-m", "agent", "sync", "--once", "--repo", str(repo.path), "--kubeconfig", str(proxied),
                      "--cache-dir", str(agent.cache_dir), "--namespace", namespace, "--api-retry-seconds", "1"],
                     env={**NO_BYPASS, "NO_PROXY": "127.0.0.1"})
    assert proc.returncode == 2
    assert f"cannot connect to {cluster.server} through the proxy {DEAD_PROXY}: Connection refused" in proc.stderr
    assert objects.app(namespace, "web") is None
