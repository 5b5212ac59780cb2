"""Process memory from /proc (Linux only): RSS of one process, PSS of a process tree.

RSS is what the issue asks for the server (one Python process). For the browser, PSS is the
honest sum: Chromium's processes share most of their pages, so adding their RSS counts the
shared libraries once per renderer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator


def available() -> bool:
    return os.path.exists("/proc/self/smaps_rollup")


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses; fields after the last ')' are fixed.
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _all_pids() -> Iterator[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def children(pid: int) -> list[int]:
    return [p for p in _all_pids() if _ppid(p) == pid]


def descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for p in _all_pids():
        pp = _ppid(p)
        if pp is not None:
            parents.setdefault(pp, []).append(p)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def find_child(parent: int, *needles: str) -> int | None:
    """The newest child of `parent` whose command line contains every needle as an argument."""
    matches = [p for p in children(parent) if all(n in cmdline(p) for n in needles)]
    return max(matches) if matches else None


def _kib_field(path: str, name: str) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mb(pid: int) -> float | None:
    kib = _kib_field(f"/proc/{pid}/status", "VmRSS")
    return kib / 1024 if kib is not None else None


def pss_mb(pid: int) -> float | None:
    kib = _kib_field(f"/proc/{pid}/smaps_rollup", "Pss")
    return kib / 1024 if kib is not None else None


def browser_root(ancestor: int) -> int | None:
    """The main process of the Chromium that `ancestor` launched (the one without a `--type=`)."""
    for pid in sorted(descendants(ancestor)):
        args = cmdline(pid)
        # Chromium's children rewrite their argv into one string, hence the join.
        if (
            args
            and "chrom" in os.path.basename(args[0].split(" ")[0]).lower()
            and "--type=" not in " ".join(args)
        ):
            return pid
    return None


def tree_pss_mb(root: int) -> tuple[float, int]:
    """Total PSS of `root` and all its descendants, and how many processes that is."""
    pids = [root, *descendants(root)]
    total = 0.0
    counted = 0
    for pid in pids:
        value = pss_mb(pid)
        if value is not None:
            total += value
            counted += 1
    return total, counted


def exe(pid: int) -> str:
    """The executable a process runs (empty when it is gone or not ours to read)."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def server_rss_mb(pid: int, browser_dir: str) -> tuple[float, list[int]]:
    """RSS of a server process plus its own helpers (e.g. Playwright's Node driver), not its browser.

    Every descendant whose executable lives in `browser_dir` (the browser and its helpers, e.g.
    crashpad) is left out, with everything under it. Returns (MB, the pids counted).
    """
    parents: dict[int, list[int]] = {}
    for p in _all_pids():
        pp = _ppid(p)
        if pp is not None:
            parents.setdefault(pp, []).append(p)
    prefix = os.path.join(os.path.realpath(browser_dir), "")
    counted: list[int] = []
    total = 0.0
    todo = [pid]
    while todo:
        current = todo.pop()
        if current != pid and os.path.realpath(exe(current) or "/nonexistent").startswith(prefix):
            continue
        value = rss_mb(current)
        if value is not None:
            total += value
            counted.append(current)
        todo.extend(parents.get(current, []))
    return total, counted
