"""The tenant boundary (issue 42), against the real control plane: what one commit to the synced
branch may not do however the flags are left. A system namespace and the agent's own namespace
are refused unless named explicitly."""

from __future__ import annotations

import pytest

from tests.support import app_yaml

pytestmark = pytest.mark.usefixtures("crd")


@pytest.mark.parametrize("flags", [(), ("--allowed-namespaces", "*"), ("--allowed-namespaces", "kube-*,team-*")])
def test_an_application_in_kube_system_is_refused_without_being_named(flags, agent, repo, namespace, objects):
    repo.write("dns.yaml", app_yaml("dns", namespace="kube-system"))
    repo.write("ok.yaml", app_yaml("ok", namespace=namespace))
    repo.commit()
    allowed = ("--allowed-namespaces", f"{namespace},{flags[1]}") if flags else ()
    proc = agent.sync(repo.path, *allowed)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("error: dns.yaml:5: metadata.namespace: Application kube-system/dns: namespace 'kube-system' is a system "
            "namespace, refused unless --allowed-namespaces names it as a plain name") in proc.stderr
    assert objects.trio("kube-system", "dns") == (None, None, None)
    assert all(objects.trio(namespace, "ok"))


def test_the_agents_own_namespace_is_refused_unless_named(agent, repo, namespaces, objects):
    own, team = namespaces("own"), namespaces("team")
    repo.write("a.yaml", app_yaml("grab", namespace=own))
    repo.write("b.yaml", app_yaml("web", namespace=team))
    repo.commit()
    env = {"POD_NAMESPACE": own}
    proc = agent.sync(repo.path, env=env)
    assert proc.returncode == 2
    assert (f"error: a.yaml:5: metadata.namespace: Application {own}/grab: namespace '{own}' is the agent's own "
            f"namespace (POD_NAMESPACE), refused unless --allowed-namespaces names it as a plain name (a glob does "
            f"not; add '{own}' to the list to allow it); nothing was created, changed or pruned there") in proc.stderr
    assert objects.trio(own, "grab") == (None, None, None) and all(objects.trio(team, "web"))
    proc = agent.sync(repo.path, "--allowed-namespaces", f"{own},{team}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(objects.trio(own, "grab"))
