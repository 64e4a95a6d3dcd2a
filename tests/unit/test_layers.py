"""The package's shape: layers import only downward, and no package holds an import cycle.

The contracts are ``[tool.importlinter]`` in pyproject.toml, checked by import-linter
(``lint-imports``) on the package as it is; this test fails the build when one is broken and
shows import-linter's report, which names each import that breaks it.
"""

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
