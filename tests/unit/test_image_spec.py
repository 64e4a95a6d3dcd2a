"""The Dockerfile and ``make image`` (scripts/image.py) describe one image: the same Debian release
and Python minor version, packages, files copied, user, cache directory, working directory,
environment and entrypoint; and deploy/ runs that image as that user with that cache directory.
So the image the tests build and run here (tests/test_image.py) is the one people build with
``docker build``. Reads files only: no build."""

from __future__ import annotations

import json
import os
import re
import shlex
import tarfile
from pathlib import Path

import pytest
import yaml

from scripts import image

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines = [line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in joined.splitlines()
            if line.strip()]


def one(name: str) -> str:
    found = [args for instruction, args in instructions() if instruction == name]
    assert len(found) == 1, f"the Dockerfile has {len(found)} {name} lines"
    return found[0]


def runs() -> list[list[str]]:
    """Each RUN's shell commands (split at ``&&``), as word lists."""
    return [shlex.split(command) for instruction, args in instructions() if instruction == "RUN"
            for command in args.split("&&")]


def setup_commands() -> list[list[str]]:
    return [shlex.split(line) for line in image.SETUP.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_base_release_and_python_minor_version_are_the_same():
    found = re.fullmatch(r"python:(\d+\.\d+)\.\d+-slim-(\w+)@sha256:[0-9a-f]{64}", one("FROM"))
    assert found, one("FROM")
    assert (found.group(1), found.group(2)) == (image.PYTHON, image.SUITE)
    assert "python3" in image.PYTHON_PACKAGES and "python3-venv" in image.PYTHON_PACKAGES


def test_the_same_debian_packages_are_installed():
    [install] = [words for words in runs() if words[:2] == ["apt-get", "install"]]
    assert "--no-install-recommends" in install
    assert [w for w in install[2:] if not w.startswith("-")] == list(image.APT_PACKAGES)


def test_the_same_files_are_copied_to_the_same_working_directory():
    assert one("WORKDIR") == image.WORKDIR
    copied = [args.split() for instruction, args in instructions() if instruction == "COPY"]
    sources = [word for words in copied for word in words[:-1]]
    assert sorted(sources) == sorted(image.APP_FILES)
    assert all(words[-1].rstrip("/") in (".", "./agent") for words in copied)


def test_dependencies_come_from_the_lock_with_hashes_and_the_project_without_dependencies():
    pips = [words for words in runs() if words[:2] == ["pip", "install"]]
    assert any({"--require-hashes", "-r", "requirements.lock"} <= set(words) for words in pips)
    assert any({"--no-deps", "--no-build-isolation"} <= set(words) for words in pips)
    mine = [words for words in setup_commands() if words[:1] == ["$pip"]]
    assert any({"--require-hashes", "-r", f"{image.WORKDIR}/requirements.lock"} <= set(words) for words in mine)
    assert any({"--no-deps", "--no-build-isolation", image.WORKDIR} <= set(words) for words in mine)


def test_the_same_user_and_cache_directory():
    [useradd] = [words for words in runs() if words[:1] == ["useradd"]]
    assert [words for words in setup_commands() if words[:1] == ["useradd"]] == [useradd]
    assert useradd[useradd.index("--uid") + 1] == str(image.USER_ID) and useradd[-1] == image.USER_NAME
    assert one("USER") == str(image.USER_ID)
    [install] = [words for words in runs() if words[:2] == ["install", "-d"]]
    assert [words for words in setup_commands() if words[:2] == ["install", "-d"]] == [install]
    assert install[-1] == image.ENV["GITOPS_AGENT_CACHE_DIR"]
    assert install[install.index("-o") + 1] == install[install.index("-g") + 1] == str(image.USER_ID)


def test_the_same_environment_and_entrypoint():
    words = shlex.split(one("ENV"))
    assert dict(word.split("=", 1) for word in words) == image.ENV
    assert image.ENV["HOME"] == f"/home/{image.USER_NAME}"
    assert json.loads(one("ENTRYPOINT")) == image.ENTRYPOINT
    assert json.loads(one("CMD")) == image.CMD
    config = image.image_config("sha256:" + "0" * 64, 0)["config"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert {k: env[k] for k in image.ENV} == image.ENV
    # the venv's gitops-agent is found first, as the base image's python is in its own PATH
    assert env["PATH"].split(":")[0] == f"{image.VENV}/bin"
    assert (config["User"], config["WorkingDir"], config["Entrypoint"], config["Cmd"]) == (
        str(image.USER_ID), image.WORKDIR, image.ENTRYPOINT, image.CMD)


def test_deploy_runs_this_image_as_its_user_with_its_cache_directory():
    deployment = yaml.safe_load((ROOT / "deploy" / "deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == image.image_ref()
    assert pod["securityContext"]["runAsUser"] == image.USER_ID
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["GITOPS_AGENT_CACHE_DIR"] == image.ENV["GITOPS_AGENT_CACHE_DIR"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert image.ENV["GITOPS_AGENT_CACHE_DIR"] in mounts


def test_the_layer_leaves_out_what_the_runtime_provides_and_keeps_everything_else():
    assert image._excluded("etc/resolv.conf") and image._excluded("proc/1") and image._excluded("var/log/dpkg.log")
    assert not image._excluded("var/log") and not image._excluded("proc") and not image._excluded("etc/passwd")
    assert not image._excluded("var/cache/gitops-agent") and not image._excluded("tmpfiles")


def tree(root: Path, stamp: int) -> Path:
    """A small root filesystem: a directory owned by 10001, a hardlink, a symlink, a file left in
    /dev and a file the runtime provides; every time set to ``stamp``."""
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("agent:x:10001:10001::/home/agent:/usr/sbin/nologin\n")
    (root / "etc" / "resolv.conf").write_text("nameserver 10.0.0.1\n")  # the build host's
    (root / "var" / "cache" / "gitops-agent").mkdir(parents=True)
    os.chown(root / "var" / "cache" / "gitops-agent", 10001, 10001)
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "perl").write_bytes(b"\x7fELF perl")
    os.link(root / "usr" / "bin" / "perl", root / "usr" / "bin" / "perl5.36.0")
    (root / "usr" / "bin" / "python3").symlink_to("python3.11")
    (root / "dev").mkdir()
    (root / "dev" / "leftover").write_text("x")
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)
    return root


def test_the_layer_is_the_same_bytes_whatever_the_files_times(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the tree has a file owned by 10001: chown needs root")
    first = image.write_layer(tree(tmp_path / "a", 1_000_000), tmp_path / "a.tar.gz", 1_700_000_000)
    second = image.write_layer(tree(tmp_path / "b", 2_000_000), tmp_path / "b.tar.gz", 1_700_000_000)
    assert first == second
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()
    with tarfile.open(tmp_path / "a.tar.gz") as layer:
        members = layer.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names, key=str.encode) and "etc/resolv.conf" not in names and "dev/leftover" not in names
    assert "dev" in names
    by_name = {m.name: m for m in members}
    assert {m.mtime for m in members} == {1_700_000_000} and {m.uname for m in members} == {""}
    assert (by_name["var/cache/gitops-agent"].uid, by_name["var/cache/gitops-agent"].gid) == (10001, 10001)
    assert by_name["usr/bin/perl5.36.0"].islnk() and by_name["usr/bin/perl5.36.0"].linkname == "usr/bin/perl"
    assert by_name["usr/bin/python3"].issym()
    assert first[0] != first[1]  # the diff_id is the uncompressed tar's, the digest the gzip's
