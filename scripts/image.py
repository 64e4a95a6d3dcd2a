"""``make image``: the agent's container image, built with no registry and no container engine.

The image is the one the Dockerfile describes (``tests/unit/test_image_spec.py`` keeps the two
saying the same things): Debian ``bookworm`` with its Python 3.11, git, openssh-client and
ca-certificates; the locked dependencies (``requirements.lock``, hashes checked) and the project
in a virtual environment; user 10001, working directory ``/app``, the same environment and
entrypoint. Where the Dockerfile starts from ``python:3.11-slim-bookworm`` from a registry, this
starts from Debian's packages (``mmdebstrap``, run as root, no daemon).

Steps (``build``):

1. the wheels of ``requirements.lock`` and of the build tool (``BUILD_TOOLS``), downloaded by
   this machine's pip into ``build/wheels/`` (a cache; each file's hash is checked when it is
   installed), for CPython 3.11 on manylinux x86_64;
2. ``mmdebstrap``: the root filesystem from Debian's mirror, with ``/usr/share/doc``, man pages,
   info and locales left out as in Debian's slim images; then, inside it (chroot, offline): the
   venv ``/opt/venv``, the lock installed with ``--require-hashes --no-index``, the project from
   ``/app`` (``--no-deps --no-build-isolation``, as the Dockerfile does), the user ``agent``
   (10001, home ``/home/agent``) and the cache directory ``/var/cache/gitops-agent`` it owns;
   every ``__pycache__`` replaced by checked-hash ``.pyc`` files (valid whatever the files' times,
   and the same bytes on every build: ``PYTHONHASHSEED=0``);
3. one layer: the root filesystem as a tar (entries sorted, every mtime ``SOURCE_DATE_EPOCH``,
   owners numeric as in the root filesystem, no names), gzip'd with no name and no time; left
   out: the contents of ``dev``, ``proc``, ``sys``, ``run`` and ``tmp``, apt's lists and caches,
   logs, and the files the build host lent (``etc/resolv.conf``, ``etc/hostname``): the runtime
   provides those;
4. the OCI image layout ``build/image/`` (``oci-layout``, ``index.json``, ``blobs/sha256/``) and
   ``build/gitops-agent-image.tar``: the layout plus Docker's ``manifest.json`` in one tar, as
   ``docker save`` writes it since Docker 25, which ``docker load``, ``podman load``,
   ``skopeo copy oci-archive:`` and ``kind load image-archive`` read.

Reproducible: ``SOURCE_DATE_EPOCH`` is the time of the last commit that changed what goes into
the image (``APP_FILES`` or this script: ``git log -1 --format=%ct -- ...``), so a commit of docs or
tests leaves the digest as it was; the same inputs (the files the Dockerfile copies, this script, Debian's package versions) give
the same digest; ``check`` builds a second time and compares. Prints the manifest digest (what a
registry shows after ``skopeo copy``), the image ID (the config's digest, what ``docker images``
shows) and the sizes.

Usage: ``python scripts/image.py build [--out DIR]`` (default ``build``), ``python
scripts/image.py check`` (builds into ``build/image-check`` and compares with ``build/``, building
that first when its inputs changed). Needs root and ``mmdebstrap`` (``scripts/test-deps.sh``
installs it), Debian's mirror and PyPI (or pip's configured index). Errors are one line and exit 2.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# -- what the image is: the Dockerfile says the same (tests/unit/test_image_spec.py) ------------
SUITE = "bookworm"
PYTHON = "3.11"
PYTHON_PACKAGES = ("python3", "python3-venv")  # the python base image's part: its Python and venv
APT_PACKAGES = ("git", "openssh-client", "ca-certificates")  # the Dockerfile's apt-get install
USER_ID = 10001
USER_NAME = "agent"
WORKDIR = "/app"
APP_FILES = ("requirements.lock", "pyproject.toml", "README.md", "agent")  # the Dockerfile's COPYs
ENV = {
    "GITOPS_AGENT_CACHE_DIR": "/var/cache/gitops-agent",
    "HOME": "/home/agent",
    "MALLOC_ARENA_MAX": "2",
    "PYTHONUNBUFFERED": "1",
}
# What the python base image's own environment gives the Dockerfile's image: its Python first on
# PATH (here the venv's) and a UTF-8 locale.
BASE_ENV = {
    "PATH": "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
ENTRYPOINT = ["gitops-agent"]
CMD = ["--help"]
VENV = "/opt/venv"
MIRRORS = (
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
)
# Left out as debian:bookworm-slim leaves them out (its /etc/dpkg/dpkg.cfg.d/docker).
DPKG_EXCLUDES = ("path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright",
                 "path-exclude=/usr/share/man/*", "path-exclude=/usr/share/info/*",
                 "path-exclude=/usr/share/locale/*", "path-exclude=/usr/share/lintian/*")
# The project's build backend (pyproject.toml: setuptools>=68; 70.1 and later build wheels without
# the wheel package, which the python base image has and Debian's venv has not), pinned by hash.
BUILD_TOOLS = ("setuptools==75.8.0 "
               "--hash=sha256:e3982f444617239225d675215d51f6ba05f845d4eec313da4418fdbb56fb27e3\n")
# The wheels' tags: CPython 3.11 on glibc x86_64 (bookworm has glibc 2.36).
WHEEL_TAGS = (["--python-version", PYTHON, "--implementation", "cp", "--abi", "cp311", "--abi", "abi3",
               "--abi", "none", "--platform", "any", "--platform", "manylinux2014_x86_64"]
              + [arg for minor in range(36, 4, -1) for arg in ("--platform", f"manylinux_2_{minor}_x86_64")])
# Relative paths whose contents stay out of the layer (the directories themselves stay).
EMPTIED = ("dev", "proc", "sys", "run", "tmp", "var/tmp", "var/cache/apt", "var/lib/apt/lists", "var/log",
           "var/cache/ldconfig")
LEFT_OUT = ("etc/resolv.conf", "etc/hostname", "etc/hosts", "etc/machine-id")  # the runtime's
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"

SETUP = f"""set -eu
cd /
python3 -m venv {VENV}
pip="{VENV}/bin/pip --disable-pip-version-check --no-cache-dir --no-input"
$pip install -q --no-index --find-links /tmp/wheels --require-hashes --no-deps --no-compile -r /tmp/build-tools.lock
$pip install -q --no-index --find-links /tmp/wheels --require-hashes --no-compile -r {WORKDIR}/requirements.lock
$pip install -q --no-index --no-deps --no-build-isolation --no-compile {WORKDIR}
rm -rf {WORKDIR}/build {WORKDIR}/*.egg-info /tmp/wheels /tmp/build-tools.lock /tmp/setup.sh /root/.cache
useradd --uid {USER_ID} --create-home --shell /usr/sbin/nologin {USER_NAME}
install -d -o {USER_ID} -g {USER_ID} -m 0755 {ENV["GITOPS_AGENT_CACHE_DIR"]}
find /usr/lib/python3 /usr/lib/python{PYTHON} {VENV} -name __pycache__ -type d -prune -exec rm -rf {{}} +
python{PYTHON} -m compileall -q -q --invalidation-mode checked-hash -x /lib2to3/tests/ \\
    /usr/lib/python{PYTHON} /usr/lib/python3/dist-packages {VENV}/lib/python{PYTHON}/site-packages
test -x {VENV}/bin/{ENTRYPOINT[0]}
"""


class BuildError(RuntimeError):
    """A step failed; the message names it (and the tail of its output)."""


@dataclass(frozen=True)
class Built:
    """A finished build under ``out``: the manifest digest, the image ID (config digest), the
    compressed and uncompressed layer sizes in bytes, the seconds it took and the inputs' key."""

    out: Path
    digest: str
    image_id: str
    size: int
    unpacked_size: int
    seconds: float
    key: str

    @property
    def layout(self) -> Path:
        return self.out / "image"

    @property
    def archive(self) -> Path:
        return self.out / "gitops-agent-image.tar"

    def layer(self) -> Path:
        """The layer blob (gzip'd tar) in the layout."""
        manifest = _blob(self.layout, json.loads((self.layout / "index.json").read_text())["manifests"][0]["digest"])
        return _blob(self.layout, json.loads(manifest.read_text())["layers"][0]["digest"])

    def config(self) -> dict:
        manifest = _blob(self.layout, json.loads((self.layout / "index.json").read_text())["manifests"][0]["digest"])
        return json.loads(_blob(self.layout, json.loads(manifest.read_text())["config"]["digest"]).read_text())


def _blob(layout: Path, digest: str) -> Path:
    return layout / "blobs" / "sha256" / digest.split(":", 1)[1]


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def image_ref() -> str:
    """``gitops-agent:VERSION``: what deploy/deployment.yaml names."""
    return f"gitops-agent:{version()}"


def source_date_epoch() -> int:
    """The time (seconds) of the last commit that changed APP_FILES or this script, else
    ``$SOURCE_DATE_EPOCH``. BuildError without either."""
    inputs = [*APP_FILES, str(Path(__file__).resolve().relative_to(ROOT))]
    proc = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%ct", "--", *inputs],
                          capture_output=True, text=True)
    if proc.returncode == 0 and proc.stdout.strip():
        return int(proc.stdout.strip())
    if os.environ.get("SOURCE_DATE_EPOCH", "").isdigit():
        return int(os.environ["SOURCE_DATE_EPOCH"])
    raise BuildError("no commit to date the image by (not a git checkout) and SOURCE_DATE_EPOCH is not set")


def _app_files() -> list[Path]:
    files = []
    for name in APP_FILES:
        path = ROOT / name
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                            and p.suffix != ".pyc")
        else:
            files.append(path)
    return files


def inputs_key() -> str:
    """A digest of what the build reads from this repository: the files the Dockerfile copies,
    this script and SOURCE_DATE_EPOCH (Debian's and PyPI's files are named by the lock and the
    mirror, not hashed here). Equal keys: a build may be reused."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(str(source_date_epoch()).encode())
    for path in _app_files():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _run(what: str, cmd: list[str], env: dict | None = None) -> None:
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace")
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.rstrip().splitlines()[-25:])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd[:3])} ...\n{tail}")


def download_wheels(cache: Path, tools_lock: Path) -> None:
    """Every wheel the lock and BUILD_TOOLS name into ``cache`` (files already there are kept)."""
    cache.mkdir(parents=True, exist_ok=True)
    _run("downloading the locked wheels", [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                            "--only-binary=:all:", "--require-hashes", *WHEEL_TAGS, "-d", str(cache),
                                            "-r", str(ROOT / "requirements.lock"), "-r", str(tools_lock)])


def _stage(stage: Path, wheels: Path) -> None:
    """What mmdebstrap copies into the root filesystem: /app as the Dockerfile copies it, the
    wheels and the setup script."""
    app = stage / WORKDIR.lstrip("/")
    for path in _app_files():
        dest = app / path.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for path in stage.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (stage / "tmp").mkdir()
    shutil.copytree(wheels, stage / "tmp" / "wheels")
    (stage / "tmp" / "build-tools.lock").write_text(BUILD_TOOLS)
    (stage / "tmp" / "setup.sh").write_text(SETUP)
    stage.chmod(0o755)


def root_filesystem(rootfs: Path, stage: Path, epoch: int) -> None:
    """mmdebstrap into ``rootfs`` (must not exist), then the setup script inside it."""
    if shutil.which("mmdebstrap") is None:
        raise BuildError("mmdebstrap is not installed: apt-get install mmdebstrap (scripts/test-deps.sh does it as root)")
    if os.geteuid() != 0:
        raise BuildError("mmdebstrap runs as root here (--mode=root): run make image as root")
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LC_ALL": "C.UTF-8",
           "SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0", "TMPDIR": str(rootfs.parent)}
    cmd = ["mmdebstrap", "--mode=root", "--variant=minbase", "--format=directory", "--quiet",
           "--include=" + ",".join(PYTHON_PACKAGES + APT_PACKAGES),
           *[f"--dpkgopt={rule}" for rule in DPKG_EXCLUDES],
           f"--customize-hook=sync-in {stage} /",
           '--customize-hook=chroot "$1" /bin/sh /tmp/setup.sh',
           SUITE, str(rootfs), *MIRRORS]
    _run("mmdebstrap", cmd, env=env)
    if not (rootfs / "usr" / "bin" / f"python{PYTHON}").exists():
        raise BuildError(f"the root filesystem has no python{PYTHON}: {SUITE}'s python3 is not {PYTHON}")


class _Hashing:
    """A write-only file that hashes and counts what passes through to ``sink``."""

    def __init__(self, sink):
        self.sink, self.sha, self.size = sink, hashlib.sha256(), 0

    def write(self, data) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.sink.write(data) if self.sink is not None else len(data)

    def flush(self) -> None:
        pass


def _excluded(rel: str) -> bool:
    if rel in LEFT_OUT:
        return True
    return any(rel.startswith(prefix + "/") for prefix in EMPTIED)


def _entries(rootfs: Path) -> list[str]:
    """Relative paths in the layer, sorted (byte order), directories before their contents."""
    found = []
    for dirpath, dirnames, filenames in os.walk(rootfs):
        rel_dir = os.path.relpath(dirpath, rootfs)
        for name in dirnames + filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if not _excluded(rel):
                found.append(rel)
        dirnames[:] = [d for d in dirnames if not _excluded(d if rel_dir == "." else f"{rel_dir}/{d}")]
    return sorted(found, key=lambda rel: rel.encode())


def write_layer(rootfs: Path, dest: Path, epoch: int) -> tuple[str, str, int, int]:
    """The layer tar of ``rootfs``, gzip'd into ``dest``. Returns (diff_id, digest, compressed size,
    uncompressed size); sockets are left out."""
    with open(dest, "wb") as raw_file:
        compressed = _Hashing(raw_file)
        with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0, compresslevel=6) as zipped:
            plain = _Hashing(zipped)
            with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for rel in _entries(rootfs):
                    path = rootfs / rel
                    info = tar.gettarinfo(str(path), arcname=rel)
                    if info is None:  # a socket
                        continue
                    info.mtime, info.uname, info.gname = epoch, "", ""
                    if info.isreg():
                        with open(path, "rb") as handle:
                            tar.addfile(info, handle)
                    else:
                        tar.addfile(info)
    return f"sha256:{plain.sha.hexdigest()}", f"sha256:{compressed.sha.hexdigest()}", compressed.size, plain.size


def _json(doc) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _put(layout: Path, data: bytes, media_type: str) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}


def image_config(diff_id: str, epoch: int) -> dict:
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    return {
        "architecture": "amd64", "os": "linux", "created": created,
        "config": {
            "User": str(USER_ID), "WorkingDir": WORKDIR, "Entrypoint": ENTRYPOINT, "Cmd": CMD,
            "Env": [f"{k}={v}" for k, v in {**BASE_ENV, **ENV}.items()],
            "Labels": {"org.opencontainers.image.title": "gitops-agent",
                       "org.opencontainers.image.version": version(),
                       "org.opencontainers.image.base.name": f"debian:{SUITE} (mmdebstrap, scripts/image.py)"},
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": f"scripts/image.py: mmdebstrap {SUITE} "
                     f"{' '.join(PYTHON_PACKAGES + APT_PACKAGES)}; requirements.lock; the project"}],
    }


def write_layout(layout: Path, diff_id: str, layer_digest: str, layer_size: int, epoch: int) -> dict:
    """The OCI layout around ``layer`` (already in ``layout/blobs/sha256``). Returns the index's
    manifest descriptor."""
    config = _put(layout, _json(image_config(diff_id, epoch)), CONFIG_TYPE)
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "config": config,
                "layers": [{"mediaType": LAYER_TYPE, "digest": layer_digest, "size": layer_size}]}
    descriptor = _put(layout, _json(manifest), MANIFEST_TYPE)
    descriptor["annotations"] = {"io.containerd.image.name": f"docker.io/library/{image_ref()}",
                                 "org.opencontainers.image.ref.name": version()}
    (layout / "index.json").write_bytes(_json({"schemaVersion": 2, "mediaType": INDEX_TYPE,
                                               "manifests": [descriptor]}))
    (layout / "oci-layout").write_bytes(_json({"imageLayoutVersion": "1.0.0"}))
    return {"manifest": descriptor, "config": config}


def write_archive(layout: Path, archive: Path, config_digest: str, layer_digest: str, epoch: int) -> None:
    """``layout`` plus Docker's manifest.json as one tar (Docker 25's ``docker save`` format)."""
    docker_manifest = _json([{"Config": f"blobs/sha256/{config_digest.split(':')[1]}", "RepoTags": [image_ref()],
                              "Layers": [f"blobs/sha256/{layer_digest.split(':')[1]}"]}])
    entries = sorted([str(p.relative_to(layout)) for p in layout.rglob("*")] + ["manifest.json"])
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for rel in entries:
            info = tarfile.TarInfo(rel)
            info.mtime, info.uid, info.gid = epoch, 0, 0
            if rel == "manifest.json":
                info.size, info.mode = len(docker_manifest), 0o644
                tar.addfile(info, io.BytesIO(docker_manifest))
            elif (layout / rel).is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = (layout / rel).stat().st_size, 0o644
                with open(layout / rel, "rb") as handle:
                    tar.addfile(info, handle)


def build(out: Path = ROOT / "build", log=sys.stderr) -> Built:
    """Build the image into ``out/image`` and ``out/gitops-agent-image.tar`` (replacing them) and
    record the inputs' key in ``out/image.json``. BuildError names a failed step."""
    started = time.monotonic()
    epoch, key = source_date_epoch(), inputs_key()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="image-", dir=out))
    try:
        print(f"image: {image_ref()}, SOURCE_DATE_EPOCH={epoch}; downloading the locked wheels", file=log, flush=True)
        tools_lock = work / "build-tools.lock"
        tools_lock.write_text(BUILD_TOOLS)
        download_wheels(ROOT / "build" / "wheels", tools_lock)
        _stage(work / "stage", ROOT / "build" / "wheels")
        print(f"image: mmdebstrap {SUITE} and the venv (about two minutes)", file=log, flush=True)
        rootfs = work / "rootfs"
        root_filesystem(rootfs, work / "stage", epoch)
        print("image: writing the layer", file=log, flush=True)
        layout = work / "image"
        (layout / "blobs" / "sha256").mkdir(parents=True)
        layer_tmp = layout / "blobs" / "sha256" / "layer.tmp"
        diff_id, layer_digest, size, unpacked = write_layer(rootfs, layer_tmp, epoch)
        layer_tmp.rename(_blob(layout, layer_digest))
        shutil.rmtree(rootfs)
        described = write_layout(layout, diff_id, layer_digest, size, epoch)
        archive = work / "gitops-agent-image.tar"
        write_archive(layout, archive, described["config"]["digest"], layer_digest, epoch)
        built = Built(out=out, digest=described["manifest"]["digest"], image_id=described["config"]["digest"],
                      size=size, unpacked_size=unpacked, seconds=round(time.monotonic() - started, 1), key=key)
        shutil.rmtree(out / "image", ignore_errors=True)
        os.replace(layout, out / "image")
        os.replace(archive, out / "gitops-agent-image.tar")
        record = {k: v for k, v in built.__dict__.items() if k != "out"}
        (out / "image.json").write_text(json.dumps(record, indent=2) + "\n")
        return built
    finally:
        _remove(work)


def _remove(path: Path) -> None:
    """Remove a work directory, unmounting anything mmdebstrap left mounted in it first."""
    if not path.exists():
        return
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
              if line.split()[1].startswith(str(path) + "/")]
    for mount in sorted(mounts, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


def existing(out: Path = ROOT / "build") -> Built | None:
    """The build recorded in ``out/image.json`` when its inputs' key is today's and its files are
    there; else None."""
    try:
        record = json.loads((out / "image.json").read_text())
    except (OSError, ValueError):
        return None
    built = Built(out=out, **record)
    if built.key != inputs_key() or not built.archive.exists() or not (built.layout / "index.json").exists():
        return None
    return built


def build_or_reuse(out: Path = ROOT / "build", log=sys.stderr) -> Built:
    """``existing(out)``, else ``build(out)``; one build at a time per ``out`` (a lock file)."""
    import fcntl

    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return existing(out) or build(out, log)


def describe(built: Built) -> str:
    mib = 1024 * 1024
    return (f"{image_ref()} built in {built.seconds:.0f}s\n"
            f"  digest:   {built.digest} (manifest; gitops-agent@{built.digest} once pushed)\n"
            f"  image ID: {built.image_id} (config; docker images shows its first 12 digits)\n"
            f"  size:     {built.size / mib:.1f} MiB compressed, {built.unpacked_size / mib:.1f} MiB unpacked\n"
            f"  layout:   {built.layout}\n  archive:  {built.archive}")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "build"
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else ROOT / "build"
    try:
        if command == "build":
            print(describe(build(out)))
        elif command == "check":
            first = build_or_reuse(out)
            second = build(out / "image-check")
            print(describe(first) + "\n" + describe(second))
            if (first.digest, first.image_id) != (second.digest, second.image_id):
                print(f"not reproducible: {first.digest} then {second.digest}", file=sys.stderr)
                return 1
            print(f"reproducible: two builds gave {first.digest}")
        elif command == "key":
            print(inputs_key())
        else:
            print(f"usage: {sys.argv[0]} build|check|key [--out DIR]", file=sys.stderr)
            return 2
    except BuildError as err:
        print(f"make image: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
