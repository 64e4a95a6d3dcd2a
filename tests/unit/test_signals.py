"""A SIGTERM delivered to a thread other than the main one still ends the wait
(agent/common/signals.py): the main thread blocks SIGTERM, so the kernel must deliver it to
the other thread, and the handler runs in the main thread at its next slice."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import os, signal, threading, time
from agent.common import signals
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # created before the mask: takes SIGTERM
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
os.kill(os.getpid(), signal.SIGTERM)
signals.wait(done)
print("ended")
"""


def test_a_signal_taken_by_another_thread_ends_the_wait():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert (proc.returncode, proc.stdout.strip()) == (0, "ended"), proc.stderr
