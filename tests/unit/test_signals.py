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


def test_the_bare_wait_would_not_end():  # why signals.wait exists: Event.wait() with no timeout misses it
    script = SCRIPT.replace("signals.wait(done)", "done.wait()")
    try:
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=3)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError("Event.wait() returned: the premise of agent/common/signals.py no longer holds")
