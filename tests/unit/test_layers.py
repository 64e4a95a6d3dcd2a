"""The package's shape: layers import only downward, no package holds an import cycle, and each
library that reaches outside stays in its room (kubernetes, GitPython and the git binary, PyYAML).

The contracts are ``[tool.importlinter]`` in pyproject.toml, checked by import-linter
(``lint-imports``) on the package as it is; this test fails the build when one is broken and
shows import-linter's report, which names each import that breaks it.
"""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_hold():
    proc = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


RUNNERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "system",
           "execv", "execvp", "execvpe", "execl", "execlp", "spawnv", "spawnvp", "spawnl", "spawnlp", "popen"}


def _runs_git(call: ast.Call) -> bool:
    """Whether ``call`` starts the ``git`` binary: a process runner (``subprocess.run``,
    ``Popen``, ``os.system``, ``os.exec*``...) whose command is a literal ``["git", ...]`` or a
    ``"git ..."`` string, or Git's own runner ``gitproc.run``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "gitproc":
        return name == "run"
    if name not in RUNNERS:
        return False
    args = [*call.args, *(k.value for k in call.keywords if k.arg in ("args", "cmd", "command"))]
    for arg in args[:2]:  # os.execvp("git", [...]) names it first, subprocess in a list
        first = arg.elts[0] if isinstance(arg, (ast.List, ast.Tuple)) and arg.elts else arg
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.split(" ")[0] in ("git", "/usr/bin/git"):
            return True
    return False


def test_the_git_binary_runs_only_in_agent_source():
    """Git commands run only in ``agent/source`` (GitPython's import is a contract above; this
    is its binary): a module elsewhere reads Git through ``agent.source``."""
    found = []
    for path in sorted((ROOT / "agent").rglob("*.py")):
        if (ROOT / "agent" / "source") in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and _runs_git(node)]
    assert not found, f"the git binary run outside agent/source: {found}"


def test_the_check_finds_git_runs():
    def runs(code: str) -> bool:
        return _runs_git(ast.parse(code).body[0].value)

    assert runs('subprocess.run(["git", "log"], cwd=x)') and runs('Popen(("git", "fetch"))')
    assert runs('os.system("git log")') and runs('gitproc.run(["log"], cwd=x, env={}, timeout=1)')
    assert runs('subprocess.check_output(args=["git", "show"])') and runs('os.execvp("git", ["git", "log"])')
    assert not runs('subprocess.run(["kubectl", "get"])') and not runs('gitproc.cancel()')
    assert not runs('subprocess.run(["gitx"])') and not runs('print("git")')


MAX_ENGINE_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def test_every_function_fits_on_a_screen():
    """No function (a declarative table of flags included) is longer than ``MAX_FUNCTION_LINES``."""
    long = []
    for path in sorted((ROOT / "agent").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        long += [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
                 for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, long


def test_no_module_of_the_engine_is_over_400_lines():
    """The pass's modules stay readable: each under ``MAX_ENGINE_MODULE_LINES``; a larger one is
    two jobs (split it, as ``sources.py`` left ``plan.py``)."""
    big = [f"{path.relative_to(ROOT)} ({n} lines)" for path in sorted((ROOT / "agent" / "engine").glob("*.py"))
           if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_ENGINE_MODULE_LINES]
    assert not big, big
