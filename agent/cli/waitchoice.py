"""What ``sync --once --wait`` waits for: ``-l/--selector``, ``--app`` and ``-n/--wait-namespace``.

Why (issue 46, item 3): one repository holds many teams' Applications, and a deploy job waits
for its own. ``--wait`` alone waits for every Application the pass synced from Git, so another
team's broken Application fails the job. These flags choose which of the pass's Applications
the wait is for; the pass itself is unchanged (it syncs every Application of ``--path``).

The rule: an Application of the pass is waited for when it is in ``-n``'s namespace (when
given), is named by one ``--app`` (``NAME`` in any namespace, ``NAMESPACE/NAME`` exactly; when
given) and its live labels match ``-l`` (kubectl's syntax, ``agent.api.selectors``; when
given). ``--app`` with ``-l`` is refused, as kubectl refuses a name with a selector. A choice
that leaves nothing to wait for (a selector matching none, a name the pass did not sync) is one
line and exit 2: a typo must not pass as "all healthy".
"""

from __future__ import annotations

import argparse

from agent.api import selectors
from agent.api.schema import GROUP, KIND
from agent.cli import flags, nametypes


def add_flags(parser: argparse.ArgumentParser) -> None:
    """``sync``'s ``-l/--selector``, ``--app`` (repeated) and ``-n/--wait-namespace``."""
    parser.add_argument("-l", "--selector", type=nametypes.label_selector,
                        help="with --wait: wait only for the Applications of the pass whose labels match this "
                             "selector, as kubectl takes it (team=a, team!=b, 'team in (a,b)', env); the pass still "
                             "syncs them all; matching none is an error")
    parser.add_argument("--app", action="append", metavar="NAME", type=nametypes.application,
                        help="with --wait: wait only for this Application of the pass (NAME in any namespace, or "
                             "NAMESPACE/NAME); repeat for more; one the pass did not sync from Git is an error; "
                             "not with -l")
    parser.add_argument("-n", "--wait-namespace", metavar="NAMESPACE", type=nametypes.dns_label,
                        help="with --wait: wait only for the Applications of the pass in this namespace (not "
                             "--namespace, which places Applications that name none)")


def check(args: argparse.Namespace) -> None:
    """Refuse a choice without ``--wait`` or ``--app`` with ``-l``. Raises ``flags.UsageError``."""
    for given, flag in ((args.selector, "--selector"), (args.app, "--app"), (args.wait_namespace, "--wait-namespace")):
        if given and args.wait is None:
            raise flags.UsageError(f"{flag} is allowed only with --wait: it chooses what the wait is for; the "
                                   "pass syncs every Application of --path", flag=flag)
    if args.selector and args.app:
        raise flags.UsageError("--app cannot be provided when a selector is specified", flag="--selector")


def chosen(kube, synced: list[str], args: argparse.Namespace) -> tuple[frozenset[str] | None, str | None]:
    """``(keys, problem)``: the ``namespace/name`` of the pass's Applications (``synced``) the
    wait is for by the module docstring's rule (None: no choice given, all), or one line saying
    why there is nothing to wait for. One LIST of Applications per namespace for ``-l``.
    Raises ``ApiError`` when that list fails."""
    if not (args.selector or args.app or args.wait_namespace):
        return None, None
    keys = [k for k in synced if args.wait_namespace in (None, k.partition("/")[0])]
    where = f" in namespace {args.wait_namespace}" if args.wait_namespace else ""
    of = f"of the {len(synced)} Application{'s' if len(synced) != 1 else ''} this pass synced from Git{where}"
    if args.app:
        unmatched = [name for name in args.app if not any(_named(name, k) for k in keys)]
        if unmatched:
            return None, (f"--app {', '.join(unmatched)}: not one {of}: nothing to wait for it "
                          "(a typo, or not under --path?)")
        keys = [k for k in keys if any(_named(name, k) for name in args.app)]
    if args.selector:
        wanted = selectors.parse(args.selector)
        labels = {f"{ns}/{a['metadata']['name']}": a["metadata"].get("labels")
                  for ns in sorted({k.partition("/")[0] for k in keys}) for a in kube.list_in(GROUP, KIND, ns)}
        keys = [k for k in keys if selectors.matches(wanted, labels.get(k))]
        if not keys:
            return None, f"-l {args.selector!r} matches none {of}: nothing to wait for"
    if not keys:
        return None, f"no Application {of}: nothing to wait for"
    return frozenset(keys), None


def describe(args: argparse.Namespace) -> str:
    """The choice as the wait's first line says it, e.g. `` (-l team=a)``; ``""`` for none."""
    parts = ([f"-l {args.selector}"] * bool(args.selector) + [f"--app {a}" for a in args.app or ()]
             + [f"-n {args.wait_namespace}"] * bool(args.wait_namespace))
    return f" ({' '.join(parts)})" if parts else ""


def _named(name: str, key: str) -> bool:
    """True when ``--app name`` names the Application ``key`` (``namespace/name``)."""
    return key == name if "/" in name else key.partition("/")[2] == name
