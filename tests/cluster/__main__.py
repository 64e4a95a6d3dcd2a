"""Command line for the local control plane.

    python -m tests.cluster build
    python -m tests.cluster up --state-dir DIR      # prints DIR/kubeconfig
    python -m tests.cluster down --state-dir DIR
    python -m tests.cluster kubectl --state-dir DIR -- ARGS...
"""

import argparse
import subprocess
import sys
import time

from . import ClusterError, attach, build, down, up


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["build", "up", "down", "kubectl"])
    parser.add_argument("--state-dir", default=".cluster", help="where state and logs live")
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    opts = parser.parse_args(argv)
    opts.args = rest
    try:
        if opts.command == "build":
            started = time.monotonic()
            bins = build()
            print(f"{bins.cluster}\n{bins.kwok}\nbuilt or found in {time.monotonic() - started:.1f}s",
                  file=sys.stderr)
        elif opts.command == "up":
            started = time.monotonic()
            cluster = up(opts.state_dir)
            print(f"control plane ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
            print(cluster.kubeconfig)
        elif opts.command == "down":
            down(opts.state_dir)
        else:
            cluster = attach(opts.state_dir)
            cmd = [str(cluster.binaries.cluster), "kubectl", "--kubeconfig", str(cluster.kubeconfig), *opts.args]
            return subprocess.call(cmd)
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
