"""The agent's image (``make image``: scripts/image.py) run as a pod of deploy/ runs it.

docs/guides/in-cluster.md is followed as written (its Install commands against the test control
plane) up to where a kubelet would take over. Then the test takes the kubelet's place for one of
the Deployment's pods: it unpacks the image's layer and starts it with ``runc``, with

- the pod's securityContext: uid and gid 10001 (``fsGroup`` as a supplementary group), no
  capabilities, no new privileges, a read-only root filesystem;
- its volumes: a directory for the cache (an ``emptyDir``), a tmpfs at ``/tmp``, and at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` the ServiceAccount's token (a TokenRequest
  bound to that pod, as the kubelet's projected volume asks for), the cluster's CA and the namespace;
- its environment: the image's, then the container's from deploy/ with the downward API's values
  read from that pod, then ``KUBERNETES_SERVICE_HOST`` and ``_PORT``;
- its command: the image's entrypoint with deploy/'s args;
- its rights: deploy/'s default, namespaced RBAC (components/namespaced-rbac: no ClusterRole of its
  own but a list of Ingresses, Roles in team-a and team-b, watches off), so it syncs into team-a.

What differs from a kubelet, and why: the host's network namespace is shared (the control plane
listens on its loopback), so deploy/'s ports (``:8080``, ``:8082``, ``127.0.0.1:8081``) are moved
to free ones; no rlimits, no cgroup limits and no seccomp profile (this sandbox refuses setrlimit);
``GITOPS_AGENT_REPO`` names the test's repository: a bare repository bind-mounted read-only
(``file://``), or served over HTTPS (tests/faults.GitHttpServer), whose CA is appended to the
image's bundle, mounted over ``/etc/ssl/certs/ca-certificates.crt`` as a cluster adds a private CA.

The image is built once per test run, in ``build/`` (scripts/image.build_or_reuse: reused while
the inputs' key is unchanged). Building and running need root, mmdebstrap and runc
(scripts/test-deps.sh installs them); without them the tests are skipped, and fail when CI is set.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scripts import image as image_mod
from tests.faults import GitHttpServer, bare_clone, free_port
from tests.support import app_yaml, wait_for

# One worker builds and runs the image; the first test's timeout covers a build on a loaded machine
# (about 4 minutes at a load of 9 on 2 cores).
pytestmark = [pytest.mark.usefixtures("crd"), pytest.mark.xdist_group("image"), pytest.mark.timeout(1800)]
ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guides" / "in-cluster.md"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
NAMESPACE = "gitops-agent"  # deploy/'s
STOP_LIMIT = 5.0  # seconds from SIGTERM to the container's end
TEAM = "team-a"  # deploy/'s first tenant namespace: its namespaced Role and tenants.yaml's block are there


def missing(what: str) -> None:
    """Skip for want of ``what``; fail instead when the environment variable ``CI`` is set."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}, and CI is set: the image's tests may not be skipped in CI", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="module")
def built():
    """The image (scripts/image.Built), built or reused."""
    if os.geteuid() != 0:
        missing("building the image (mmdebstrap --mode=root) and running it (runc) need root")
    for tool in ("mmdebstrap", "runc"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed (scripts/test-deps.sh installs it with apt-get when run as root)")
    started = time.monotonic()
    result = image_mod.build_or_reuse(log=sys.stderr)
    print(f"\nimage ready in {time.monotonic() - started:.0f}s:\n{image_mod.describe(result)}", file=sys.stderr)
    return result


@pytest.fixture(scope="module")
def rootfs(built, tmp_path_factory):
    """The image's one layer, unpacked (owners numeric, as in the image); removed afterwards."""
    root = tmp_path_factory.mktemp("image") / "rootfs"
    root.mkdir()
    subprocess.run(["tar", "-xzf", str(built.layer()), "-C", str(root), "--numeric-owner", "--same-permissions"],
                   check=True, capture_output=True)
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


def guide_install_block() -> list[str]:
    """The commands of the guide's first ``sh`` block under ``## Install``, comments removed."""
    text = GUIDE.read_text().split("\n## Install\n", 1)[1]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


@pytest.fixture(scope="module")
def installed(cluster, built):
    """The guide's Install commands, as written: ``make image`` is the build above; the archive it
    loads into the cluster is the one built; the kubectl commands run against the control plane.
    Returns the Deployment's pods once they exist (kwok plays their node: no container runs).
    First the cluster-wide RBAC that other tests on this worker's control plane apply
    (``deploy/rbac.yaml``: the migration guide, the least-privilege tests) is deleted: the guide's
    default is namespaced, and the pod test asserts that it made no ClusterRole."""
    cluster.kubectl("delete", "clusterrolebinding,clusterrole", "gitops-agent", "--ignore-not-found", check=False)
    for command in guide_install_block():
        words = command.split()
        if words[:2] == ["make", "image"]:
            continue  # the build fixture ran scripts/image.py, as make image does
        if words[0] in ("kind", "minikube"):
            assert (ROOT / words[-1].split("=")[-1]).resolve() == built.archive.resolve(), command
            continue
        assert words[0] == "kubectl", f"a command of the guide this test does not follow: {command}"
        cluster.kubectl(*words[1:], cwd=ROOT)
    listed = ["get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=gitops-agent", "-o", "json"]

    def pods() -> list[dict]:  # less those of an earlier Deployment still terminating
        return [p for p in json.loads(cluster.kubectl(*listed).stdout)["items"]
                if not p["metadata"].get("deletionTimestamp")]

    wait_for(lambda: len(pods()) == 2, timeout=60, what="the Deployment's two pods")
    yield pods()
    cluster.kubectl("delete", "deployment", "gitops-agent", "-n", NAMESPACE, "--ignore-not-found", check=False)


def test_the_guide_builds_and_loads_the_image_deploy_runs(built, installed):
    archive = tarfile.open(built.archive)
    [docker_manifest] = json.load(archive.extractfile("manifest.json"))
    pod_spec = installed[0]["spec"]
    assert docker_manifest["RepoTags"] == [pod_spec["containers"][0]["image"]] == [image_mod.image_ref()]
    index = json.load(archive.extractfile("index.json"))
    assert index["manifests"][0]["digest"] == built.digest
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == f"docker.io/library/{image_mod.image_ref()}"
    # every blob named is there with its digest: what docker load, podman load and skopeo check
    manifest = json.load(archive.extractfile(f"blobs/sha256/{built.digest.split(':')[1]}"))
    assert docker_manifest["Config"] == f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"
    assert docker_manifest["Layers"] == [f"blobs/sha256/{layer['digest'].split(':')[1]}" for layer in manifest["layers"]]
    for blob in [manifest["config"], *manifest["layers"]]:
        member = archive.getmember(f"blobs/sha256/{blob['digest'].split(':')[1]}")
        assert member.size == blob["size"]
    config = built.config()
    with gzip.open(built.layer()) as layer:
        assert "sha256:" + hashlib.file_digest(layer, "sha256").hexdigest() == config["rootfs"]["diff_ids"][0]
    assert (config["config"]["User"], config["config"]["WorkingDir"]) == ("10001", "/app")
    assert pod_spec["securityContext"]["runAsUser"] == 10001 and pod_spec["serviceAccountName"] == NAMESPACE


def test_podman_and_skopeo_read_the_archive_with_its_digest(built, tmp_path):
    """skopeo reads archives with the library podman load uses (containers/image): the OCI side
    copies with the digest kept (what ``skopeo copy oci-archive:... docker://REGISTRY/...`` pushes),
    the Docker side (manifest.json) gives the same configuration."""
    if shutil.which("skopeo") is None:
        missing("skopeo is not installed (scripts/test-deps.sh installs it with apt-get when run as root)")
    copy = tmp_path / "copy"
    subprocess.run(["skopeo", "copy", "-q", f"oci-archive:{built.archive}", f"oci:{copy}:{image_mod.version()}"],
                   check=True, capture_output=True, timeout=300)
    assert json.loads((copy / "index.json").read_text())["manifests"][0]["digest"] == built.digest
    docker = json.loads(subprocess.run(["skopeo", "inspect", f"docker-archive:{built.archive}"], check=True,
                                       capture_output=True, text=True, timeout=300).stdout)
    assert docker["Env"] == built.config()["config"]["Env"]
    assert docker["Layers"] == built.config()["rootfs"]["diff_ids"]  # the Docker side names layers by diff_id


def test_the_root_filesystem_is_what_the_pod_needs(rootfs):
    assert "agent:x:10001:10001::/home/agent:/usr/sbin/nologin" in (rootfs / "etc" / "passwd").read_text()
    for path in ("home/agent", "var/cache/gitops-agent"):
        assert ((rootfs / path).stat().st_uid, (rootfs / path).stat().st_gid) == (10001, 10001), path
    assert (rootfs / "etc/ssl/certs/ca-certificates.crt").stat().st_size > 100_000  # the CA bundle git and pip use
    assert os.access(rootfs / "opt/venv/bin/gitops-agent", os.X_OK)
    assert sorted(p.name for p in (rootfs / "app").iterdir()) == sorted(image_mod.APP_FILES)
    pycs = list((rootfs / "opt/venv/lib").glob("python3.11/site-packages/agent/__pycache__/*.pyc"))
    assert pycs and all(int.from_bytes(p.read_bytes()[4:8], "little") == 0b11 for p in pycs)  # checked-hash


def pod_env(pod: dict, overrides: dict, image_env: list[str]) -> list[str]:
    """The container's environment as the kubelet makes it: the image's, then deploy/'s with the
    downward API's fields read from ``pod`` (an optional Secret that is missing: left out), then
    ``overrides``."""
    env = dict(item.split("=", 1) for item in image_env)
    for item in pod["spec"]["containers"][0]["env"]:
        source = item.get("valueFrom", {})
        if "value" in item:
            env[item["name"]] = item["value"]
        elif "fieldRef" in source:
            value = pod
            for key in source["fieldRef"]["fieldPath"].split("."):
                value = value[key]
            env[item["name"]] = value
        else:
            assert source["secretKeyRef"]["optional"], item
    env.update(overrides)
    return [f"{k}={v}" for k, v in env.items()]


class Container:
    """One runc container from ``rootfs`` (read-only), with ``mounts`` (destination -> (source,
    writable)) beside the runtime's own; ``runc run`` in the foreground, its output in ``log``."""

    def __init__(self, work: Path, rootfs: Path, args: list[str], env: list[str], mounts: dict, hostname: str):
        self.work, self.id = work, f"gitops-agent-{uuid.uuid4().hex[:8]}"
        self.state, self.bundle, self.log = work / "runc", work / "bundle", work / "container.log"
        self.bundle.mkdir(parents=True)
        runtime = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        ]
        volumes = [{"destination": dest, "type": "bind", "source": str(src),
                    "options": ["rbind", "nosuid", "nodev", "rw" if writable else "ro"]}
                   for dest, (src, writable) in mounts.items()]
        volumes.append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                        "options": ["nosuid", "nodev", "mode=1777"]})
        config = {
            "ociVersion": "1.0.2",
            "process": {"terminal": False, "user": {"uid": 10001, "gid": 10001, "additionalGids": [10001]},
                        "args": args, "env": env, "cwd": "/app", "noNewPrivileges": True,
                        "capabilities": {k: [] for k in ("bounding", "effective", "permitted", "inheritable",
                                                         "ambient")}},
            "root": {"path": str(rootfs), "readonly": True},
            "hostname": hostname,
            "mounts": runtime + volumes,
            "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")],  # network: the host's
                      "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
                      "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]},
        }
        (self.bundle / "config.json").write_text(json.dumps(config, indent=2))
        self.proc: subprocess.Popen | None = None

    def runc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["runc", "--root", str(self.state), *args], capture_output=True, text=True,
                              check=check, timeout=30)

    def start(self) -> None:
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(["runc", "--root", str(self.state), "run", "--bundle", str(self.bundle),
                                          self.id], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.proc.poll() is not None or self.runc("state", self.id, check=False).returncode == 0,
                 timeout=30, what="runc to create the container")
        assert self.proc.poll() is None, f"the container ended at once:\n{self.output()}"

    def pid(self) -> int:
        return json.loads(self.runc("state", self.id).stdout)["pid"]

    def output(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def remove(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.runc("kill", self.id, "KILL", check=False)
            self.proc.wait(timeout=30)
        self.runc("delete", "--force", self.id, check=False)


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def lease_holder(api) -> str | None:
    """deploy/'s Lease's holder; None when there is no Lease yet."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        return client.CoordinationV1Api(api).read_namespaced_lease("gitops-agent", NAMESPACE).spec.holder_identity
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def clear_team(cluster) -> None:
    """No Application (hence, through their ownerReferences, no child) left in ``TEAM``."""
    cluster.kubectl("delete", "applications", "--all", "-n", TEAM, "--wait", "--ignore-not-found", check=False)


def https_server(tmp_path: Path, root: Path) -> tuple[GitHttpServer, Path]:
    """An HTTPS Git server on 127.0.0.1 serving ``root``, with a new self-signed certificate."""
    cert, key = tmp_path / "git.crt", tmp_path / "git.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return GitHttpServer(root, tls=(cert, key)), cert


@pytest.mark.parametrize("transport", ["file", "https"])
def test_the_image_runs_as_a_pod_of_deploy(cluster, api, built, rootfs, installed, repo, objects, tmp_path,
                                           transport):
    # deploy/'s namespaced RBAC (its default): the agent's Roles, its tenant and its namespace policy cover
    # team-a and team-b only, so the Application goes to team-a, emptied before and after
    namespace = TEAM
    clear_team(cluster)
    repo.write("web.yaml", app_yaml("web", namespace=namespace))
    head = repo.commit()
    served = tmp_path / "served"
    bare = bare_clone(repo.path, served / "apps.git")
    mounts: dict[str, tuple[Path, bool]] = {}
    server = None
    if transport == "file":  # a volume the pod's user owns, mounted read-only
        subprocess.run(["chown", "-R", "10001:10001", str(bare)], check=True)
        mounts["/srv/apps.git"] = (bare, False)
        url = "file:///srv/apps.git"
    else:
        server, cert = https_server(tmp_path, served)
        bundle = tmp_path / "ca-certificates.crt"
        bundle.write_bytes((rootfs / "etc/ssl/certs/ca-certificates.crt").read_bytes() + cert.read_bytes())
        mounts["/etc/ssl/certs/ca-certificates.crt"] = (bundle, False)
        url = server.url("apps.git")
    pod = installed[0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    account = tmp_path / "serviceaccount"  # what the kubelet's projected volume holds
    account.mkdir()
    token = cluster.kubectl("create", "token", pod["spec"]["serviceAccountName"], "-n", NAMESPACE, "--bound-object-kind",
                            "Pod", "--bound-object-name", name, "--bound-object-uid", uid).stdout.strip()
    (account / "token").write_text(token)
    shutil.copyfile(cluster.state_dir / "certs" / "apiserver.crt", account / "ca.crt")
    (account / "namespace").write_text(NAMESPACE)
    mounts[SA_DIR] = (account, False)
    cache = tmp_path / "cache"  # the emptyDir: the fsGroup's
    cache.mkdir()
    os.chown(cache, 0, 10001)
    cache.chmod(0o2775)
    mounts["/var/cache/gitops-agent"] = (cache, True)
    hosts = tmp_path / "hosts"  # the kubelet's
    hosts.write_text(f"127.0.0.1\tlocalhost\n127.0.0.1\t{name}\n")
    mounts["/etc/hosts"] = (hosts, False)
    server_url = urlsplit(cluster.server)
    probe, http, ui = free_port(), free_port(), free_port()
    container_spec = pod["spec"]["containers"][0]
    env = pod_env(pod, {"GITOPS_AGENT_REPO": url, "GITOPS_AGENT_PROBE_ADDR": f":{probe}",
                        "GITOPS_AGENT_HTTP_ADDR": f":{http}", "GITOPS_AGENT_UI_ADDRESS": f"127.0.0.1:{ui}",
                        "KUBERNETES_SERVICE_HOST": server_url.hostname, "KUBERNETES_SERVICE_PORT": str(server_url.port)},
                  built.config()["config"]["Env"])
    container = Container(tmp_path / "container", rootfs, built.config()["config"]["Entrypoint"] + container_spec["args"],
                          env, mounts, name)
    try:
        if server is not None:
            server.__enter__()
        container.start()
        status = Path(f"/proc/{container.pid()}/status").read_text()
        assert "Uid:\t10001\t10001\t10001\t10001" in status and "CapEff:\t0000000000000000" in status, status
        # the entrypoint is the container's PID 1, which the kernel gives no default signal action:
        # SIGTERM stops it only because the agent handles it
        assert [line for line in status.splitlines() if line.startswith("NSpid:")][0].split()[-1] == "1", status
        [root_mount] = [line.split() for line in Path(f"/proc/{container.pid()}/mountinfo").read_text().splitlines()
                        if line.split()[4] == "/"]
        assert "ro" in root_mount[5].split(","), root_mount  # readOnlyRootFilesystem
        assert cluster.kubectl("get", "clusterrole", "gitops-agent", check=False).returncode != 0  # namespaced
        wait_for(lambda: lease_holder(api) == name, timeout=60, what=f"the Lease held by {name}")
        wait_for(lambda: ((objects.app(namespace, "web") or {}).get("status") or {}).get("lastSyncedCommit") == head,
                 timeout=90, what="the Application synced from the image")
        assert all(objects.trio(namespace, "web"))
        wait_for(lambda: get(probe, "/readyz")[0] == 200, timeout=30, what="/readyz 200")
        assert get(probe, "/healthz")[0] == 200
        code, metrics = get(probe, "/metrics")
        assert code == 200 and 'gitops_agent_passes_total{result="success"' in metrics
        assert get(http, "/healthz")[0] == 200
        if server is not None:
            assert any(path.startswith("/apps.git/") for _, _, path, _ in server.requests)
        started = time.monotonic()
        container.runc("kill", container.id, "TERM")
        container.proc.wait(timeout=30)
        elapsed = time.monotonic() - started
        assert elapsed < STOP_LIMIT, f"the container ended {elapsed:.1f}s after SIGTERM"
        assert container.proc.returncode == 0, container.output()
        assert not lease_holder(api), "the Lease was not released"
        lines = [json.loads(line) for line in container.log.read_text().splitlines() if line.startswith("{")]
        assert any(line.get("event") == "pass" and line.get("result") == "success" for line in lines), container.output()
    except BaseException:
        print(f"container log ({container.log}):\n{container.output()}", file=sys.stderr)
        raise
    finally:
        container.remove()
        if server is not None:
            server.__exit__(None, None, None)
        clear_team(cluster)
