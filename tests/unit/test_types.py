"""The package's types: strict mypy holds on the modules ``[tool.mypy]`` in pyproject.toml names
(agent.kinds and agent.engine, but for the modules it excludes until they join).

This test fails the build on any type error and shows mypy's report, which names each file,
line and error.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_strict_mypy_holds():
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout
