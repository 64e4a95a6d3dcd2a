"""docs/guides/ci.md works as written in an applications repository that does not contain this
project (issue 46 item 6): its GitHub Actions workflow, read from the guide, run job by job and
step by step against the real control plane.

A runner is played by directories: ``actions/checkout`` is a fresh clone of the applications
repository (a bare repository, as GitHub serves it) at ``$GITHUB_SHA``, in the same workspace
for every job; ``actions/setup-python`` is a new virtual environment (made once for the module:
the install step of each job runs all the same); ``gh pr comment`` and ``actions/upload-artifact``
are skipped. Every other step is the guide's ``run:`` script, run as GitHub runs it
(``bash --noprofile --norc -eo pipefail``), in the workspace, with the guide's ``env:`` and
``${{ ... }}`` expressions filled in. The workflow's ``AGENT`` is a wheel built from this checkout
as ``make dist`` builds one, pinned by its sha256: the project itself is not on the package
index, its dependencies are. Nothing of this checkout is on the job's ``PYTHONPATH``.

The applications repository holds team a's ``web`` and team b's ``api``, whose image the fake node
cannot pull: the sync job waits for team a alone (``-l team=a``) and ends 0. ``run`` syncs the
repository's URL beside every job: CI's checkout is its ``origin``, one source with it (issue 46
item 1), so the plan lists the pull request's change alone; and commits only move forward (item
2), so ``run``, still at the previous commit after the merge's sync job, never puts the old image
back.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster import FAIL_LABEL
from tests.support import GitRepo, app_yaml, wait_for
from tests.test_run import start_agent  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guides" / "ci.md"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")

pytestmark = pytest.mark.usefixtures("crd")


def workflow() -> dict:
    """The guide's workflow: the YAML block of its section "GitHub Actions"."""
    body = GUIDE.read_text(encoding="utf-8").split("\n## GitHub Actions\n", 1)[1].split("\n## ", 1)[0]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", body, re.S).group(1))


def test_the_guide_installs_a_pinned_release_and_never_the_work_tree():
    flow = workflow()
    assert re.fullmatch(r"https://\S+/releases/download/v[\d.]+/gitops_agent-[\d.]+-py3-none-any\.whl#sha256=\S+",
                        flow["env"]["AGENT"])
    for job in flow["jobs"].values():
        runs = [step.get("run", "") for step in job["steps"]]
        assert 'pip install "gitops-agent @ $AGENT"' in runs
        assert not any("pip install ." in run for run in runs)
    assert "sync --once --wait" in " ".join(step.get("run", "") for step in flow["jobs"]["sync"]["steps"])


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    """``(AGENT, bin)``: the wheel of this checkout as ``make dist`` builds it (``pip wheel
    --no-deps`` of a copy of the sources: no stale build directory gets in), as a ``file://`` URL
    with its sha256, and the ``bin`` directory of a new virtual environment with nothing in it
    (``actions/setup-python``), from the interpreter this one's environment was made from."""
    base = tmp_path_factory.mktemp("runner")
    src = base / "src"
    shutil.copytree(ROOT / "agent", src / "agent", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(src)],
                   check=True, cwd=base, timeout=300)
    wheel = next((base / "dist").glob("gitops_agent-*-py3-none-any.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    python = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(python), "-m", "venv", str(base / "venv")], check=True, timeout=300)
    return f"{wheel.as_uri()}#sha256={digest}", base / "venv" / "bin"


class Runner:
    """Runs jobs of the guide's workflow in ``workspace`` (see the module docstring)."""

    def __init__(self, agent_url: str, bin_dir: Path, apps: Path, workspace: Path, temp: Path, kubeconfig: Path):
        self.apps, self.workspace, self.temp, self.agent = apps, workspace, temp, agent_url  # AGENT: the wheel
        self.secrets = {"secrets.KUBECONFIG": kubeconfig.read_text(), "github.token": "unused"}
        keep = {k: v for k, v in os.environ.items()  # pip's own settings (index, certificates) stay the runner's
                if not k.startswith(("GITOPS_AGENT_", "PYTHON", "VIRTUAL_ENV", "XDG_CACHE_HOME"))}
        self.env = {**keep, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "CI": "true",
                    "RUNNER_TEMP": str(temp), "GITHUB_WORKSPACE": str(workspace),
                    "XDG_CACHE_HOME": str(temp / "cache"),  # the agent's Git mirrors: a runner starts with none
                    "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}

    def checkout(self, sha: str) -> None:
        """``actions/checkout``: the repository cloned into the workspace, ``sha`` checked out detached."""
        shutil.rmtree(self.workspace, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", self.apps.as_uri(), str(self.workspace)], check=True)
        subprocess.run(["git", "-C", str(self.workspace), "checkout", "-q", "--detach", sha], check=True)

    def run(self, name: str, event: str, sha: str, number: int | None = None) -> list[str]:
        """Run the job ``name`` for ``event`` at commit ``sha``; returns the names of the steps
        run. A step that exits non-zero fails the test with its output."""
        shutil.rmtree(self.temp, ignore_errors=True)
        self.temp.mkdir(parents=True)
        flow = workflow()
        values = {**self.secrets, "github.event.pull_request.number": str(number)}
        env = {**self.env, **flow.get("env", {}), "AGENT": self.agent, "GITHUB_EVENT_NAME": event, "GITHUB_SHA": sha,
               "GITHUB_REF": "refs/heads/main" if event == "push" else f"refs/pull/{number}/merge"}
        done = []
        for index, step in enumerate(flow["jobs"][name]["steps"]):
            uses, script = step.get("uses", ""), step.get("run", "")
            if uses.startswith("actions/checkout@"):
                self.checkout(sha)
            elif uses.startswith("actions/setup-python@") or uses.startswith("actions/upload-artifact@"):
                pass  # the environment of ``runner``; the artifact is read by the test from the workspace
            elif script.startswith("gh pr comment"):
                assert "--body-file plan.md" in script
            else:
                assert not uses, f"a step this test cannot play: {uses}"
                step_env = {k: EXPRESSION.sub(lambda m: values[m.group(1)], str(v))
                            for k, v in (step.get("env") or {}).items()}
                path = self.temp / f"step-{index}.sh"
                path.write_text(EXPRESSION.sub(lambda m: values[m.group(1)], script))
                proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
                                      cwd=self.workspace, env={**env, **step_env}, capture_output=True, text=True,
                                      timeout=600)
                print(f"--- {name}: {step.get('name', script)}\nexit {proc.returncode}\n{proc.stdout[-3000:]}"
                      f"{proc.stderr[-3000:]}")
                assert proc.returncode == 0, f"step {step.get('name', script)!r} exited {proc.returncode}"
                assert "Traceback" not in proc.stdout + proc.stderr
            done.append(step.get("name") or uses)
        return done


def team(name: str, owner: str, namespace: str, image: str = "nginx:1.27", broken: bool = False) -> str:
    """An Application of team ``owner`` (label ``team``); ``broken``: the fake node fails to pull
    its image (tests/cluster ``FAIL_LABEL``), Degraded after 10 s."""
    doc = yaml.safe_load(app_yaml(name, image=image, namespace=namespace))
    doc["metadata"]["labels"] = {"team": owner}
    if broken:
        doc["spec"]["podLabels"] = {FAIL_LABEL: "image-pull"}
        doc["spec"]["rollout"] = {"failAfterSeconds": 10}
    return yaml.safe_dump(doc, sort_keys=False)


def image(objects, namespace: str) -> str:
    return objects.deployment(namespace, "web")["spec"]["template"]["spec"]["containers"][0]["image"]


def test_the_guides_jobs_run_as_written_from_a_pinned_wheel(runner, start_agent, cluster, namespace, objects,
                                                            tmp_path):
    agent_url, bin_dir = runner
    apps = tmp_path / "apps.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(apps)], check=True)
    work = GitRepo.create(tmp_path / "work")
    work.write("apps/a/web.yaml", team("web", "a", namespace))
    work.write("apps/b/api.yaml", team("api", "b", namespace, image="registry.invalid/api:nope", broken=True))
    first = work.commit("web and api")
    work.git("push", "-q", str(apps), "main")
    start_agent(apps.as_uri(), "--path", "apps", "--interval", "300")  # run, on the URL
    jobs = Runner(agent_url, bin_dir, apps, tmp_path / "workspace", tmp_path / "runner-temp", cluster.kubeconfig)

    done = jobs.run("sync", "push", first)  # the first merge to main
    assert done[2:5] == ["install the agent", "validate (no cluster)",
                         "sync, then wait until team a's Applications are healthy"]
    shown = subprocess.run([str(bin_dir / "python"), "-c", "import agent; print(agent.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=jobs.env, check=True).stdout
    assert shown.startswith(str(bin_dir.parent)), shown  # the wheel's agent, not this checkout's
    report = json.loads((tmp_path / "workspace" / "sync.json").read_text())
    assert (report["ok"], report["exitCode"], report["wait"]["result"]) == (True, 0, "healthy")
    app = objects.app(namespace, "web")
    assert (app["status"]["health"]["status"], app["status"]["lastSyncedCommit"]) == ("Healthy", first)
    wait_for(lambda: (objects.app(namespace, "api")["status"].get("health") or {}).get("status") == "Degraded",
             timeout=60, what="team b's Application to be Degraded")  # and the job above ended 0 all the same

    work.git("checkout", "-q", "-b", "change")  # a pull request: a new image
    work.write("apps/a/web.yaml", team("web", "a", namespace, image="nginx:1.28"))
    change = work.commit("web: nginx 1.28")
    work.git("push", "-q", str(apps), "change:refs/heads/change")
    jobs.run("plan", "pull_request", change, number=1)
    plan = (tmp_path / "workspace" / "plan.md").read_text()
    assert "nginx:1.28" in plan and f"Deployment/{namespace}/web" in plan, plan
    assert "OwnershipConflict" not in plan and f"Deployment/{namespace}/api" not in plan, plan  # the change alone
    assert image(objects, namespace) == "nginx:1.27"

    work.git("push", "-q", str(apps), "change:main")  # merged; run, still at the previous commit, beside it
    jobs.run("sync", "push", change)
    report = json.loads((tmp_path / "workspace" / "sync.json").read_text())
    assert (report["ok"], report["exitCode"], report["wait"]["result"]) == (True, 0, "healthy")
    assert image(objects, namespace) == "nginx:1.28"
    seen = set()
    for _ in range(50):  # 5 s: run's passes on the watch events keep the merge's image
        seen.add(image(objects, namespace))
        time.sleep(0.1)
    assert seen == {"nginx:1.28"}, seen
    status = objects.app(namespace, "web")["status"]
    assert (status["health"]["status"], status["lastSyncedCommit"]) == ("Healthy", change)
    assert status["observedBy"] in ("sync --once", "run")  # whichever wrote the status last
