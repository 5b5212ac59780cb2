"""`ProcessWatch`: whether a process still runs, for a real child process (ended, not reaped)."""

from __future__ import annotations

import subprocess
import sys
import time

from tabpilot._process import ProcessWatch


def _ended(watch: ProcessWatch, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while watch.alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_watched_process_is_alive_until_it_ends_even_as_an_unreaped_zombie() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watch = ProcessWatch(child.pid)
    try:
        assert watch.alive()
        child.kill()
        assert _ended(watch)  # not waited for yet: a zombie, which runs no more
        assert child.poll() is not None
    finally:
        child.kill()
        child.wait()
        watch.close()


def test_a_closed_watch_still_answers_and_closing_twice_is_harmless() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watch = ProcessWatch(child.pid)
    try:
        watch.close()
        watch.close()
        assert watch.alive()  # from /proc now
        child.kill()
        assert _ended(watch)
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid names nothing now
    watch = ProcessWatch(child.pid)
    assert not watch.alive()
    watch.close()
