"""Removing a browser profile tabpilot made, with what the stopped browser left outside it; what
a process that must end at once (its clean stop cut short) still removes (`clean_up_at_exit`);
and what a tabpilot process that was killed left behind (`sweep_abandoned`)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

from ._process import pid_alive, profile_processes, started_at

logger = logging.getLogger("tabpilot")

SOCKET_DIR_PREFIXES = ("org.chromium.Chromium.", "com.google.Chrome.")
"""Names of the directories Chromium and Chrome make in the temp dir for their singleton socket."""
EXIT_KILL_WAIT = 1.0
"""Seconds `clean_up_at_exit` waits for the browsers it killed to end."""

_made: dict[str, bool] = {}
"""The temporary directories this process made and has not removed yet (`made_temporary`), each
True if it is a browser's profile."""


TEMPORARY_PREFIXES = ("tp-", "tabpilot-profile-")
"""The names of the temporary directories tabpilot makes (the driver's private temp dir, a
browser's profile), before `mkdtemp`'s random part."""
OWNER_FILE = ".tabpilot-owner"
"""In each of them: the process that made it (host, pid, start time), for `sweep_abandoned`."""


def made_temporary(path: str, *, profile: bool) -> str:
    """Note `path`, a temporary directory just made (`profile`: a browser's), as one to remove
    if the process ends without removing it (`clean_up_at_exit`); `forget_temporary` once removed.
    It is marked as this process's, so that a later tabpilot removes it if this one is killed."""
    _made[path] = profile
    with contextlib.suppress(OSError):
        Path(path, OWNER_FILE).write_text(_owner(os.getpid()))
    return path


def _owner(pid: int) -> str:
    return f"{socket.gethostname()} {pid} {started_at(pid) or '-'}"


def sweep_abandoned(root: str | None = None) -> list[str]:
    """Remove the temporary directories (`TEMPORARY_PREFIXES`) in `root` (the temp dir) that a
    tabpilot process made and left as it was killed (SIGKILL: nothing of its own ran then): those
    whose owner (`OWNER_FILE`) ran on this host and runs no more, and on which no browser runs.
    One without a mark (being made, or another user's, which we may not read) is left alone.
    Returns the directories removed."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(root or tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(TEMPORARY_PREFIXES) or entry.path in _made:
            continue
        try:
            host, pid, started = Path(entry.path, OWNER_FILE).read_text().split()
            owner = int(pid)
        except (OSError, ValueError):
            continue
        if host != socket.gethostname():  # another host's, in a temp dir they share
            continue
        if pid_alive(owner) and started in ("-", started_at(owner)):
            continue  # its owner runs (or, with no start time to tell, a process with its pid)
        if profile_processes(entry.path):  # a browser the killed process left still runs on it
            continue
        remove_profile(entry.path, for_good=False)
        removed.append(entry.path)
        logger.info("removed %s, left by tabpilot process %s (killed: it no longer runs)", entry.path, owner)
    return removed


def forget_temporary(path: str) -> None:
    """`path` was removed for good (after its browser ended)."""
    _made.pop(path, None)


def remove_profile(profile: str, *, for_good: bool = True) -> None:
    """Remove `profile` and the directory of its browser's singleton socket. Chromium makes that
    directory in the temp dir (the profile's `SingletonSocket` link names the socket in it) and
    removes it on a clean exit only: a killed or crashed browser leaves it behind. Call this once
    the browser is gone (not `for_good`: its helpers may still write into it, and it is removed
    again later)."""
    with contextlib.suppress(OSError):
        socket_dir = os.path.dirname(os.readlink(os.path.join(profile, "SingletonSocket")))
        if os.path.basename(socket_dir).startswith(SOCKET_DIR_PREFIXES):
            shutil.rmtree(socket_dir, ignore_errors=True)
    shutil.rmtree(profile, ignore_errors=True)
    if for_good:
        forget_temporary(profile)


def clean_up_at_exit() -> None:
    """For a process that ends now without closing its browsers (a second stop signal cut its
    clean stop short, or that stop ran out of time): kill the browsers still running on the
    temporary profiles it made, then remove those profiles and the driver's temp dirs. Playwright's
    driver would close the browsers as the process goes, but only after it, and a browser writes
    into its profile until it has gone. Synchronous (a signal handler may call it), bounded by
    `EXIT_KILL_WAIT`; nothing to do when the browsers were closed."""
    made = list(_made.items())
    if not made:
        return
    browsers = [pid for path, profile in made if profile for pid in profile_processes(path)]
    for pid in browsers:
        with contextlib.suppress(OSError):
            os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    deadline = time.monotonic() + EXIT_KILL_WAIT
    while any(pid_alive(pid) for pid in browsers) and time.monotonic() < deadline:
        time.sleep(0.01)
    for path, profile in made:
        if profile:
            remove_profile(path)
        else:
            shutil.rmtree(path, ignore_errors=True)
            forget_temporary(path)
