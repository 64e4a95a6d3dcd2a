"""Print the mutation score per module from mutmut's results under mutants/ (run after `mutmut run`).

Score = killed / all mutants of the module; timeouts, suspicious, survivors, mutants no unit
test reaches ("no tests") and not-yet-checked ones all count against it. Exit status 1 when the
pure core (CORE) scores below THRESHOLD, so `make mutation` fails then.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

CORE = ("manifests.loader", "kinds.render", "kinds.deployment", "kinds.service", "kinds.configmap", "kinds.ingress",
        "kinds.autoscaler", "kinds.registry", "engine.plan", "engine.status", "engine.history", "engine.news", "views.appview", "views.explainview", "kinds.health", "manifests.specrules",
        "api.quantity")
THRESHOLD = 90.0


def counts(meta: Path) -> Counter:
    """Mutant statuses ("killed", "survived", "timeout", ...) in one module's .meta file."""
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return Counter(status_by_exit_code[code] for code in codes.values())


def line(name: str, c: Counter) -> str:
    total = sum(c.values())
    score = 100.0 * c["killed"] / total if total else 100.0
    return (f"{name:<20} {c['killed']:>5}/{total:<5} {score:6.1f} %   survived {c['survived']}, "
            f"timeout {c['timeout']}, suspicious {c['suspicious']}, no tests {c['no tests']}, "
            f"not checked {c['not checked']}")


def main(root: Path = Path("mutants/agent")) -> int:
    metas = sorted(root.rglob("*.py.meta"))
    if not metas:
        print(f"no mutmut results under {root}: run `mutmut run` first", file=sys.stderr)
        return 2
    by_module = {".".join(m.relative_to(root).parts).removesuffix(".py.meta"): counts(m) for m in metas}
    core, other = Counter(), Counter()
    for name, c in by_module.items():
        print(line(name, c))
        (core if name in CORE else other).update(c)
    print(line("core", core))
    if other:
        print(line("others", other))
    total = sum(core.values())
    score = 100.0 * core["killed"] / total if total else 100.0
    print(f"core mutation score {score:.1f} % (required {THRESHOLD:.0f} %)")
    return 0 if score >= THRESHOLD else 1


if __name__ == "__main__":
    sys.exit(main())
