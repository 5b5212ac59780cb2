"""The figures of README "Scaling out": a real Selenium Grid 4 (hub + node) on this machine.

    .venv/bin/python bench/grid_figures.py [--runs 5]

Needs what `make grid` installs. Measures, and prints medians of:
- grid ready: starting hub + node until `GET /status` says ready;
- session creation: `POST /session` until the grid answers with the session and its `se:cdp`;
- connect: `TabManager.connect_grid` whole (session, CDP connection, tabs adopted);
- first list: `tabpilot serve --selenium-grid URL` over stdio, the first `browser_tabs list`
  (the server starts its grid session on first use), against a local launch for comparison;
- navigate: `browser_navigate` to a page of the local site, grid against local.
Everything runs on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support import selenium_grid
from tabpilot import TabManager, find_browser
from tabpilot._grid import create_session
from tabpilot.demo.site import LocalSite


def ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.0f} ms (n={len(seconds)}, min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f})"


async def library(grid_url: str, runs: int) -> tuple[list[float], list[float]]:
    created, connected = [], []
    for _ in range(runs):
        started = time.perf_counter()
        session = await create_session(grid_url)
        created.append(time.perf_counter() - started)
        await session.delete()
    async with TabManager() as manager:
        for _ in range(runs):
            started = time.perf_counter()
            instance = await manager.connect_grid(grid_url)
            connected.append(time.perf_counter() - started)
            await manager.close_instance(instance.id)
    return created, connected


async def served(args: list[str], site: LocalSite, runs: int) -> tuple[list[float], list[float]]:
    first, navigate = [], []
    for _ in range(runs):
        params = StdioServerParameters(command=sys.executable, args=["-m", "tabpilot", "serve", *args])
        async with Client(params) as client:
            started = time.perf_counter()
            listed = await client.call_tool("browser_tabs", {"action": "list"})
            first.append(time.perf_counter() - started)
            assert not listed.is_error
            for path in ("/page/a", "/page/b", "/page/c"):
                started = time.perf_counter()
                went = await client.call_tool("browser_navigate", {"url": site.url(path)})
                navigate.append(time.perf_counter() - started)
                assert not went.is_error
    return first, navigate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    browser = find_browser()
    ready = []
    for _ in range(3):
        with selenium_grid(browser) as grid:
            ready.append(grid.ready_after)
    with LocalSite() as site, selenium_grid(browser) as grid:
        created, connected = asyncio.run(library(grid.url, runs))
        grid_first, grid_nav = asyncio.run(served(["--selenium-grid", grid.url], site, runs))
        local_first, local_nav = asyncio.run(served(["--browser-path", browser], site, runs))
    print(f"grid ready (hub + node):        {ms(ready)}")
    print(f"session creation (POST):        {ms(created)}")
    print(f"connect_grid (session + CDP):   {ms(connected)}")
    print(f"first list, grid:               {ms(grid_first)}")
    print(f"first list, local launch:       {ms(local_first)}")
    print(f"navigate, grid:                 {ms(grid_nav)}")
    print(f"navigate, local:                {ms(local_nav)}")


if __name__ == "__main__":
    main()
