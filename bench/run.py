"""`make bench`: how fast tabpilot is, and how its cost grows with tabs and data.

    .venv/bin/python bench/run.py [--quick] [--no-save] [--no-peers | --peers-only]

Everything runs through a real MCP client over stdio against the built-in local site on
127.0.0.1: the bare MCP round trip and plain Playwright are measured in the same run, so the
ratios hold on any machine. Then the same steps against the peers (Playwright MCP and Chrome
DevTools MCP, installed by `make peers` into .peers/; bench/peers.py), with the same Chromium.
Prints a progress line on stderr and the tables on stdout; writes the same figures as JSON to
bench/results/<timestamp>.json and bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import inspect
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import baseline
import peers
import server_bench
from harness import Figure, Progress, Results, render
from mcp_procs import bare_server

from tabpilot import find_browser
from tabpilot.demo.site import LocalSite

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"


def dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def machine() -> dict[str, Any]:
    version = dist_version

    try:
        browser = find_browser()
        chromium = subprocess.run(
            [browser, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except Exception as exc:
        browser, chromium = "?", f"unknown ({exc})"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=BENCH_DIR, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "chromium": chromium,
        "browser_path": browser,
        "playwright": version("playwright"),
        "mcp": version("mcp"),
        "tabpilot": version("tabpilot"),
        "commit": commit,
    }


async def measure(results: Results, progress: Progress, quick: bool) -> None:
    plan = server_bench.QUICK if quick else server_bench.FULL
    with LocalSite() as site:
        # The memory floor first, while no other browser runs.
        await baseline.browser_pss(site, results, progress, tabs=20)
        async with baseline.PlaywrightPages(site) as pw:
            bench = server_bench.ServerBench(site, results, progress, plan, pw)
            await bench.startup()
            progress.begin("starting servers")
            async with bare_server() as bare:
                await bench.session(bare)


def telemetry(results: Results, progress: Progress, quick: bool) -> None:
    """helper-2's telemetry benchmark (bench/telemetry_bench.py), when it is there."""
    progress.begin("telemetry: browser_observe ingest and query")
    if not (BENCH_DIR / "telemetry_bench.py").exists():
        results.note("browser_observe ingest/query: not available (bench/telemetry_bench.py is missing).")
        return
    try:
        import telemetry_bench

        data = telemetry_bench.run(quick)
        if inspect.isawaitable(data):
            data = asyncio.run(data)  # type: ignore[arg-type]
    except Exception as exc:
        results.note(f"browser_observe ingest/query: failed ({exc!r}).")
        results.extra["telemetry_error"] = traceback.format_exc()
        return
    results.extra["telemetry"] = data
    _add_telemetry_figures(results, data, [])


def _unit_of(key: str) -> Any:
    key = key.lower()
    if key.endswith("/s") or key.endswith("_per_s"):
        return "/s"
    if key.endswith("ms") or "_ms_" in key:
        return "ms"
    if key.endswith("mb"):
        return "MB"
    if key.endswith("chars"):
        return "chars"
    if key.endswith("ratio") or key.endswith("_x"):
        return "x"
    return "count"


def _add_telemetry_figures(results: Results, data: Any, path: list[str]) -> None:
    """Show the numbers of the telemetry report in the table, whatever its nesting."""
    section = "telemetry (browser_observe)"
    if isinstance(data, dict):
        if "median" in data and isinstance(data["median"], int | float):
            key = "telemetry." + ".".join(path)
            fig = Figure(
                key, section, " ".join(path), _unit_of(str(data.get("unit", path[-1] if path else "")))
            )
            fig.given = (float(data["median"]), float(data.get("p90", data["median"])), int(data.get("n", 0)))
            results.figures[key] = fig
            return
        for k, v in data.items():
            _add_telemetry_figures(results, v, [*path, str(k)])
    elif isinstance(data, int | float) and not isinstance(data, bool) and path:
        results.value("telemetry." + ".".join(path), section, " ".join(path), _unit_of(path[-1]), float(data))


def save(results: Results, meta: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    payload = {
        **meta,
        "figures": {k: f.to_dict() for k, f in results.figures.items()},
        "targets": [t.to_dict() for t in results.targets],
        "notes": results.notes,
        **results.extra,
    }
    text = json.dumps(payload, indent=2) + "\n"
    path = RESULTS_DIR / f"{meta['started'].replace(':', '').replace('-', '')}.json"
    path.write_text(text)
    (RESULTS_DIR / "latest.json").write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None, allow_abbrev=False
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions and no 100-tab level: about 2 minutes"
    )
    parser.add_argument("--no-save", action="store_true", help="print the table only; write no JSON")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-peers", action="store_true", help="leave out the comparison with the peers")
    which.add_argument(
        "--peers-only", action="store_true", help="only the comparison with the peers (bench/peers.py)"
    )
    args = parser.parse_args(argv)

    started = datetime.now(UTC).replace(microsecond=0)
    results = Results()
    progress = Progress()
    failed = False
    if not args.peers_only:
        try:
            asyncio.run(measure(results, progress, args.quick))
        except Exception as exc:
            # Show what was measured before the failure: a partial table is still worth reading.
            failed = True
            results.note(f"The run stopped early: {exc}")
            results.extra["error"] = traceback.format_exc()
        telemetry(results, progress, args.quick)
        server_bench.analyse(results)
    if not args.no_peers:
        try:
            asyncio.run(peers.run(results, progress, args.quick, dist_version("tabpilot")))
        except Exception as exc:
            failed = True
            results.note(f"The peer comparison stopped early: {exc}")
            results.extra["peers_error"] = traceback.format_exc()
    progress.done()

    duration = time.monotonic() - progress.start
    meta: dict[str, Any] = {
        "started": started.isoformat().replace("+00:00", "Z"),
        "duration_s": round(duration, 1),
        "mode": ("quick" if args.quick else "full") + (" (peers only)" if args.peers_only else ""),
        "machine": machine(),
    }
    m = meta["machine"]
    print(
        f"tabpilot bench ({meta['mode']}, {duration:.0f} s): {m['cores']} cores {m['machine']}, "
        f"Python {m['python']}, {m['chromium']}, Playwright {m['playwright']}, mcp {m['mcp']}\n"
    )
    if results.figures or results.notes:
        print(render(results))
    if "peers" in results.extra:
        print("\n" + peers.render(results.extra["peers"]))
    if failed:
        for key in ("error", "peers_error"):
            if key in results.extra:
                print("\n" + results.extra[key], file=sys.stderr)
    if not args.no_save:
        path = save(results, meta)
        print(f"\nJSON: {path.relative_to(BENCH_DIR.parent)} (and bench/results/latest.json)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
