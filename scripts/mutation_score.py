"""Print the mutation score per module from mutmut's results under mutants/ (run after `mutmut run`).

Score = killed / all mutants of the module; timeouts, suspicious, survivors, mutants no unit
test reaches ("no tests") and not-yet-checked ones all count against it. Exit status 1 when the
pure core (CORE) or the pass (PASS) scores below THRESHOLD, so `make mutation` fails then.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

CORE = ("manifests.loader", "kinds.render", "kinds.deployment", "kinds.service", "kinds.configmap", "kinds.ingress",
        "kinds.autoscaler", "kinds.job", "engine.taskgate", "engine.taskwait", "kinds.registry", "kinds.podspec", "kinds.cronjob", "manifests.schedulerules", "engine.plan", "engine.status", "engine.history", "engine.news", "views.appview", "views.explainview", "kinds.health", "manifests.specrules",
        "api.quantity")
PASS = ("engine.sync", "engine.sourceread", "engine.livestate", "engine.appplan", "engine.appapply", "engine.childapply",
        "engine.statuses", "engine.wantedby", "engine.prune", "engine.remember", "engine.passvalues", "engine.sources",
        "engine.tenancy", "engine.hostclaim")
"""The pass's stage modules, specified by the unit tests of the whole pass (tests/unit/engine/test_pass*.py)."""
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
    core, passes, other = Counter(), Counter(), Counter()
    for name, c in by_module.items():
        print(line(name, c))
        (core if name in CORE else passes if name in PASS else other).update(c)
    failed = False
    for group, c in (("core", core), ("pass", passes)):
        print(line(group, c))
        total = sum(c.values())
        score = 100.0 * c["killed"] / total if total else 100.0
        print(f"{group} mutation score {score:.1f} % (required {THRESHOLD:.0f} %)")
        failed |= bool(total) and score < THRESHOLD
    if other:
        print(line("others", other))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
