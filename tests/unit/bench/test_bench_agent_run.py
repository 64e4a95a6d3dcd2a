"""bench.agent_run: a pass's peak RSS is the agent process's own, not its Git children's."""

import subprocess
import sys
import time

from bench import agent_run


def test_the_peak_rss_is_the_processs_own_without_its_childrens(tmp_path):
    """Linux folds the largest waited-for descendant into ``wait4``'s ``ru_maxrss``; a Git child
    of the pass used to be reported as the agent's peak."""
    # the 1 s: the sampler reads VmHWM every 20 ms, and must read it once past the 40 MiB on a loaded machine
    code = ("import subprocess, sys, time; own = bytearray(40 << 20); time.sleep(1); "
            "subprocess.run([sys.executable, '-c', 'child = bytearray(300 << 20)'])")
    log = tmp_path / "log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT)
    done = agent_run.wait(proc, time.monotonic(), log, timeout=60)
    assert done.code == 0
    assert 40 <= done.rss_mib < 200, done.rss_mib


def test_a_process_that_is_gone_has_no_high_water_mark():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert agent_run.high_water_kib(proc.pid) == 0
