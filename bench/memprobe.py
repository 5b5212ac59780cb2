"""Memory probe: the tabpilot process's RSS with N noise tabs and full telemetry buffers.

    .venv/bin/python bench/memprobe.py                    # the server over stdio, as `make bench`
    .venv/bin/python bench/memprobe.py --mode library     # TabManager + Telemetry in this process
    .venv/bin/python bench/memprobe.py --mode library --detail   # + where the memory is (slow)

Loopback only: the pages come from `tabpilot.demo.site.LocalSite` on 127.0.0.1 with the bench's noise
page (`/bench/noise?logs=300&fetches=260`: 300 console lines and 260 fetches of 2 KB text). The
tabs load it, then every noise tab is reloaded `--rounds` times (default 3), so the logs,
network and bodies rings are full and evicting, and whatever Playwright keeps per request has
piled up as it would in a long session.

- `server` mode starts `python -m tabpilot serve --max-tabs 200` (optionally with
  MALLOC_ARENA_MAX from `--arena`), drives it with the MCP client and reads its VmRSS.
- `library` mode runs the site in a child process (so its memory is not counted), drives a
  `TabManager` with a `Telemetry` hooked in, and reads this process's VmRSS. `--detail` adds
  what lives: Playwright and tabpilot objects by class, glibc's malloc totals (in use vs. free
  in arenas) and tracemalloc's top allocation sites.

Prints one JSON object. `rss_mb` is the tabpilot process; in server mode `driver_rss_mb` is
Playwright's Node driver and `total_rss_mb` the two together (what the server costs);
`server_cpu_s` and `driver_cpu_s` are the CPU seconds each has used by then.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import ctypes
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the probe imports tabpilot only when it measures that import
    from tabpilot import TelemetryKind

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

NOISE = "/bench/noise?logs=300&fetches=260"
KINDS: tuple[TelemetryKind, ...] = ("logs", "network_waterfall", "network_bodies")


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def driver_rss_mb(server_pid: int) -> float:
    """RSS of Playwright's Node driver: the server's child process that is not a browser."""
    import procmem

    total = 0.0
    for pid in procmem.children(server_pid):
        if "node" in " ".join(procmem.cmdline(pid)[:1]):
            total += rss_mb(pid)
    return total


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def driver_cpu_s(server_pid: int) -> float:
    """CPU seconds of Playwright's Node driver (as `driver_rss_mb` finds it)."""
    import procmem

    return sum(
        cpu_s(pid) for pid in procmem.children(server_pid) if "node" in " ".join(procmem.cmdline(pid)[:1])
    )


def _site() -> Any:
    """A started LocalSite with the bench's noise page."""
    from tabpilot.demo.site import LocalSite

    site = LocalSite()
    site.__enter__()
    from server_bench import install_pages  # the very page `make bench` uses

    install_pages(site)
    return site


# -- server mode --------------------------------------------------------------------------------


async def server_mode(args: argparse.Namespace) -> dict[str, Any]:
    from mcp_procs import structured_of, tabpilot_server

    if args.arena is not None:
        os.environ["MALLOC_ARENA_MAX"] = str(args.arena)
    site = _site()
    try:
        server = tabpilot_server("--max-tabs", "200", "--max-total-tabs", "200")
        # The SDK passes a server only a few variables; this one gets ours (PYTHONPATH, MALLOC_*).
        server.params.env = dict(os.environ)
        async with server as srv:
            assert srv.pid is not None
            await srv.call("browser_tabs", action="list")
            idle = rss_mb(srv.pid)
            idle_driver = driver_rss_mb(srv.pid)
            tabs: list[int] = []
            for _ in range(args.tabs):
                opened = await srv.call("browser_tabs", action="new", url=site.url(NOISE), background=True)
                tabs.append(int(structured_of(opened)["result"]["tabId"]))
            for _ in range(args.rounds):
                for tab in tabs:
                    await srv.call("browser_navigate", action="reload", tabId=tab)
            await asyncio.sleep(args.quiet)
            full: dict[str, Any] = {}
            for kind in KINDS:
                data = structured_of(await srv.call("browser_observe", what=kind, limit=1))
                res = data.get("result", data)
                full[kind] = {"total": res.get("total_entries_all_tabs"), "dropped": res.get("dropped")}
            server_rss = rss_mb(srv.pid)
            driver_rss = driver_rss_mb(srv.pid)
            cpu = {"server_cpu_s": round(cpu_s(srv.pid), 2), "driver_cpu_s": round(driver_cpu_s(srv.pid), 2)}
            return {
                "mode": "server",
                "tabs": args.tabs,
                "rounds": args.rounds,
                "malloc_arena_max": args.arena,
                "idle_rss_mb": round(idle, 1),
                "idle_total_rss_mb": round(idle + idle_driver, 1),
                "rss_mb": round(server_rss, 1),
                "driver_rss_mb": round(driver_rss, 1),
                "total_rss_mb": round(server_rss + driver_rss, 1),
                **cpu,
                "buffers": full,
            }
    finally:
        site.__exit__(None, None, None)


# -- library mode -------------------------------------------------------------------------------


def _serve_site_forever() -> None:
    site = _site()
    print(site.origin, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # until the parent closes our stdin
    site.__exit__(None, None, None)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def malloc_totals() -> dict[str, float] | None:
    """glibc's view: bytes in use by malloc and bytes free inside its arenas (fragmentation)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return None
    mb = 1024 * 1024
    return {
        "arena_mb": round(info.arena / mb, 1),
        "in_use_mb": round(info.uordblks / mb, 1),
        "free_in_arenas_mb": round(info.fordblks / mb, 1),
        "mmapped_mb": round(info.hblkhd / mb, 1),
    }


def live_objects() -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        module = type(obj).__module__
        if module.startswith("playwright") or module.startswith("tabpilot"):
            counts[type(obj).__name__] += 1
    return dict(counts.most_common(15))


async def library_mode(args: argparse.Namespace) -> dict[str, Any]:
    import tracemalloc

    if args.detail:
        tracemalloc.start(args.frames)
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve-site"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        origin = child.stdout.readline().strip()
        from tabpilot import TabManager, Telemetry

        async with TabManager(max_tabs=200) as manager:
            telemetry = Telemetry()
            manager.add_target_hook(telemetry.attach_target)
            await manager.launch()
            await manager.settle()
            gc.collect()
            idle = rss_mb()
            tabs = []
            for _ in range(args.tabs):
                tabs.append(await manager.new_tab(origin + NOISE, background=True))
            for round_ in range(args.rounds):
                for tab in tabs:
                    await tab.page.reload()
                if args.verbose:
                    print(f"round {round_ + 1}: {rss_mb():.1f} MB", file=sys.stderr)
            await asyncio.sleep(args.quiet)
            await telemetry.settle()
            result: dict[str, Any] = {
                "mode": "library",
                "tabs": args.tabs,
                "rounds": args.rounds,
                "idle_rss_mb": round(idle, 1),
                "rss_mb": round(rss_mb(), 1),
                "buffers": {
                    kind: {"total": telemetry.held(kind), "dropped": telemetry.dropped(kind)}
                    for kind in KINDS
                },
                "listener_errors": telemetry.listener_errors,
                "body_failures": telemetry.body_failures,
            }
            gc.collect()
            result["rss_after_gc_mb"] = round(rss_mb(), 1)
            result["malloc"] = malloc_totals()
            with contextlib.suppress(OSError, AttributeError):
                ctypes.CDLL("libc.so.6").malloc_trim(0)
                result["rss_after_malloc_trim_mb"] = round(rss_mb(), 1)
            if args.detail:
                result["live_objects"] = live_objects()
                snap = tracemalloc.take_snapshot()
                result["tracemalloc_mb"] = round(sum(s.size for s in snap.statistics("filename")) / 2**20, 1)
                result["top_files"] = [
                    f"{s.size / 2**20:6.1f} MB {s.count:8d} {s.traceback[0].filename.split('site-packages/')[-1]}"
                    for s in snap.statistics("filename")[:10]
                ]
                result["top_lines"] = [
                    f"{s.size / 2**20:6.1f} MB {s.count:8d} "
                    + " <- ".join(
                        f"{f.filename.split('/')[-1]}:{f.lineno}" for f in list(s.traceback)[: args.frames]
                    )
                    for s in snap.statistics("traceback" if args.frames > 1 else "lineno")[:15]
                ]
            return result
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None, allow_abbrev=False
    )
    parser.add_argument("--mode", choices=("server", "library"), default="server")
    parser.add_argument("--tabs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="reloads of every noise tab after it opened")
    parser.add_argument("--quiet", type=float, default=2.0, help="seconds to let late events land")
    parser.add_argument("--arena", type=int, default=None, help="MALLOC_ARENA_MAX for the server")
    parser.add_argument("--detail", action="store_true", help="library mode: where the memory is")
    parser.add_argument("--frames", type=int, default=1, help="tracemalloc frames per site")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--serve-site", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_site:
        _serve_site_forever()
        return
    start = time.perf_counter()
    run = server_mode if args.mode == "server" else library_mode
    result = asyncio.run(run(args))
    result["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
