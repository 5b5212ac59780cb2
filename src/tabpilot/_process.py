"""Local processes, as far as tabpilot watches them: whether one runs, whether it is the browser
of a given profile, and which process is the browser a launch is starting.

Read from /proc where there is one (Linux); elsewhere `pid_alive` falls back to a signal 0 and a
launch's browser is not looked for (`launched_browser` never finds one). A process asked about on
every tool call is watched through a pidfd where Linux has them (`ProcessWatch`).
"""

from __future__ import annotations

import asyncio
import math
import os
import select

FIND_EVERY = 0.05
"""Seconds between looks for the browser a launch started (one look reads every process's
command line: well under a millisecond for a hundred processes)."""
WATCH_EVERY = 0.1
"""Seconds between checks that a browser still being launched runs."""


def _stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state, parent, ...: `man 5 proc`
    numbers them from 3), or none if it cannot be read (the process is gone, or there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()
    except OSError:
        return []


def pid_alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not) without being its parent."""
    fields = _stat(pid)
    if fields:
        return fields[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


class ProcessWatch:
    """Whether one process still runs, asked often (every tool call asks about the browser).

    Where Linux has pidfds, a pidfd polled without waiting: under a microsecond, against about 16
    for reading /proc (`pid_alive`), and it keeps naming the same process if the pid is reused.
    It turns readable when the process ends (a zombie has ended). Elsewhere, `pid_alive`.
    `close()` releases the pidfd; the watch then falls back to `pid_alive`.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = None
        self._poll: select.poll | None = None
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # no pidfds here, or no such process
            return
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        self._fd, self._poll = fd, poll

    def alive(self) -> bool:
        if self._poll is None:
            return pid_alive(self.pid)
        return not self._poll.poll(0)

    def close(self) -> None:
        fd, self._fd, self._poll = self._fd, None, None
        if fd is not None:
            os.close(fd)


def started_at(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (/proc's `starttime`): with its pid, it
    names one process, not a later one that got the same pid. None where there is no /proc."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


async def pid_ends(pid: int, *, within: float = math.inf, every: float = 0.005) -> bool:
    """Whether the process has ended, or ends within `within` seconds (checked `every` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while pid_alive(pid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(every)
    return True


def _args(pid: int | str) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _parent(pid: int | str) -> int | None:
    try:
        return int(_stat(pid)[1])
    except (ValueError, IndexError):
        return None


def _profile_arg(profile: str) -> bytes:
    # Playwright passes the profile as an absolute path, without a trailing slash.
    return f"--user-data-dir={os.path.abspath(profile)}".encode()


def runs_profile(pid: int, profile: str) -> bool:
    """Whether process `pid` is a browser started on `profile` (a pid reused since is not)."""
    return _profile_arg(profile) in _args(pid)


def profile_processes(profile: str) -> list[int]:
    """The processes whose command line names `profile`: a browser on it and its helpers (each
    helper's command line is one string), or none where there is no /proc."""
    wanted = _profile_arg(profile)
    return [int(pid) for pid in _pids() if any(_names(arg, wanted) for arg in _args(pid))]


def _pids() -> list[str]:
    """The ids of the processes running now, as /proc names them; none where there is no /proc."""
    try:
        return [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _names(arg: bytes, wanted: bytes) -> bool:
    start = arg.find(wanted)
    end = start + len(wanted)
    # The whole path: a profile named like this one with more after it is another.
    return start >= 0 and (end == len(arg) or arg[end : end + 1] == b" ")


def launched_browser(profile: str) -> int | None:
    """The main process of the browser this process's Playwright driver (a child of ours) is
    launching on `profile`, or None if there is none (yet), or no /proc to find it in."""
    wanted = _profile_arg(profile)
    for pid in _pids():
        args = _args(pid)
        # Chromium's helper processes (renderers, GPU, zygote) carry `--type=`; their own
        # command line is one string, so the exact argument matches the browser itself only.
        if wanted not in args or any(arg.startswith(b"--type=") for arg in args):
            continue
        driver = _parent(pid)
        if driver is not None and _parent(driver) == os.getpid():
            return int(pid)
    return None


async def launch_ends(profile: str) -> int:
    """Wait until the browser a launch starts on `profile` has been seen running and has ended
    since; its pid. Runs until cancelled while the browser runs, or where it cannot be found."""
    pid = launched_browser(profile)
    while pid is None:
        await asyncio.sleep(FIND_EVERY)
        pid = launched_browser(profile)
    await pid_ends(pid, every=WATCH_EVERY)
    return pid
