"""tabpilot next to its peers, in one run: the same steps against Playwright MCP and Chrome DevTools MCP.

Every server is started over stdio and driven by the MCP SDK's own client, with the same
Chromium binary and the same local site on 127.0.0.1 (nothing else is reached: the peers' update
checks and usage statistics are switched off). Each step is mapped to each server's own tools and
repeated round-robin, call for call, so all three see the same machine load, and each round starts
with the next server, so none always follows the same other; the figures are medians. The peers are installed by `make peers` into `.peers/` (pinned versions).

Steps, per server:

- spawn to MCP session ready, and spawn to the first tool result (list tabs/pages; the peers
  launch their browser on the first call, tabpilot at start);
- navigate a tab to a local page; a full snapshot of a small page; a new tab and the first
  snapshot of it; a full snapshot of a 300-element page; a click that opens a tab;
- at 20 busy tabs (300 console lines and 260 fetches of 2 KB each), once every page made all
  its fetches: the server's memory (its process plus its own helpers such as Playwright's Node
  driver, without the browser), list tabs, switch tab, and close every other tab;
- the size of the tool list (compact JSON of tools/list);
- a lab scenario as an agent would run it: open pages, follow a link that opens a tab, read it,
  click in it, go back to the first tab, close the rest. A page is read from a response that
  already shows it, else with a snapshot; the scenario counts the calls and the characters of
  every response (text content plus structured content as JSON). tabpilot runs it a second time
  with `--navigate-returns page` (navigations answer with URL and title, not the tree): the
  measure of its default choice.

tabpilot's `browser_snapshot` of an unchanged page answers in one line: the timed snapshot steps
pass `full=true` (they measure producing the tree); the lab scenario uses the defaults.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import procmem
from harness import Progress, Results, p90
from mcp.types import CallToolResult
from mcp_procs import BenchError, McpProcess, text_of
from server_bench import Served, install_pages

from tabpilot import find_browser
from tabpilot.demo.site import LocalSite

ROOT = Path(__file__).resolve().parent.parent
PEERS_DIR = ROOT / ".peers"
MODULES = PEERS_DIR / "node_modules"
PLAYWRIGHT_MCP = "@playwright/mcp"
DEVTOOLS_MCP = "chrome-devtools-mcp"
PLAYWRIGHT_CLI = MODULES / PLAYWRIGHT_MCP / "cli.js"
DEVTOOLS_CLI = MODULES / DEVTOOLS_MCP / "build" / "src" / "bin" / "chrome-devtools-mcp.js"

TOOL_LIST_LIMIT = 12_000
BUSY_TABS = 20
BUSY_PAGE = "/bench/noise?logs=300&fetches={fetches}&tab={tab}"
BUSY_FETCHES = 260
BUSY_WAIT = 300.0
"""Seconds the busy tabs get to make all their fetches (one local site serves every browser)."""
SMALL_PAGE = "/page/small"
MANY = 150
"""/many?n=150: 150 buttons and 150 links, 300 elements."""


@dataclass(frozen=True, slots=True)
class PeerPlan:
    startups: int
    reps: int
    """Timed calls of the quick steps (navigate, snapshots, list, switch)."""
    new_tabs: int
    clicks: int
    close_others: int


FULL = PeerPlan(startups=5, reps=15, new_tabs=10, clicks=10, close_others=3)
QUICK = PeerPlan(startups=2, reps=5, new_tabs=4, clicks=4, close_others=1)


def response_chars(result: CallToolResult) -> int:
    """What a response costs an agent: its text content plus its structured content as JSON."""
    chars = len(text_of(result))
    if result.structured_content is not None:
        chars += len(json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False))
    return chars


def _ref_after(text: str, needle: str, pattern: re.Pattern[str]) -> str | None:
    for line in text.splitlines():
        if needle in line:
            match = pattern.search(line)
            if match:
                return match.group(1)
    return None


def package_version(name: str) -> str | None:
    try:
        data = json.loads((MODULES / name / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = data.get("version")
    return str(version) if version else None


# -- the servers -------------------------------------------------------------------------------


class Server(ABC):
    """One MCP server under test, with each benchmark step mapped to its own tools.

    Tab handles are ints: tabpilot's tab ids, Chrome DevTools MCP's page ids, and for Playwright
    MCP (which addresses tabs by position) handles of a mirror of its tab order.
    """

    key: str
    name: str
    version: str
    ref_pattern: re.Pattern[str]

    def __init__(self) -> None:
        self.proc: McpProcess | None = None
        self.home = 0
        self.log: list[tuple[str, int, int]] | None = None
        """While the lab scenario runs: (tool, response characters, of which text) of every call."""

    @abstractmethod
    def argv(self, browser: str, workdir: str) -> list[str]:
        """The server's command line, with `browser` the Chromium to use and `workdir` its scratch dir."""

    env: dict[str, str] = {}  # noqa: RUF012 (read only)
    needles: tuple[str, ...] = ()
    """Arguments that find the server's pid among our children (none: the child that is new)."""

    def process(self, browser: str, workdir: str) -> McpProcess:
        command, *args = self.argv(browser, workdir)
        return McpProcess(args, command=command, needles=self.needles, env=self.env)

    @property
    def command(self) -> str:
        argv = self.argv("<chromium>", "<tmp dir>")
        return " ".join(
            [
                os.path.basename(argv[0]),
                *(os.path.relpath(a, ROOT) if a.startswith(str(ROOT)) else a for a in argv[1:]),
            ]
        )

    async def call(self, tool: str, **args: Any) -> CallToolResult:
        assert self.proc is not None
        result = await self.proc.call(tool, **args)
        if self.log is not None:
            self.log.append((tool, response_chars(result), len(text_of(result))))
        return result

    # The steps. `prepare` is whatever must happen before a call on `tab` (Playwright MCP acts
    # on its current tab only): untimed in the timed steps, counted in the lab scenario.
    async def prepare(self, tab: int) -> None:
        return None

    @abstractmethod
    async def list_tabs(self) -> CallToolResult: ...

    @abstractmethod
    async def start(self) -> None:
        """Learn the first tab (the home tab) after the first call."""

    @abstractmethod
    async def navigate(self, tab: int, url: str) -> CallToolResult: ...

    @abstractmethod
    async def snapshot(self, tab: int, *, full: bool = True) -> CallToolResult:
        """A snapshot of `tab` (prepared); `full=False` is what an agent calls by default."""

    @abstractmethod
    async def new_tab(self, url: str, *, background: bool = False) -> tuple[int, CallToolResult]: ...

    @abstractmethod
    async def switch(self, tab: int) -> CallToolResult: ...

    @abstractmethod
    async def close(self, tab: int) -> CallToolResult: ...

    @abstractmethod
    async def close_others(self, keep: int) -> None: ...

    @abstractmethod
    async def click(self, tab: int, ref: str) -> tuple[CallToolResult, int | None]:
        """Click `ref` on `tab` (prepared); the tab the click opened, when the response names it."""

    @abstractmethod
    async def opened_tab(self, opener: int) -> int:
        """Find the tab a click opened when its response did not name it (by listing tabs)."""

    @abstractmethod
    def tabs(self) -> list[int]:
        """The tabs this server has, as the benchmark tracked them."""

    def ref(self, text: str, needle: str) -> str:
        ref = _ref_after(text, needle, self.ref_pattern)
        if ref is None:
            raise BenchError(f"{self.name}: no element {needle!r} with a ref in:\n{text[:1500]}")
        return ref


class Tabpilot(Server):
    """tabpilot with its defaults (text content only), read from the text as a model reads it."""

    key = "tabpilot"
    name = "tabpilot"
    ref_pattern = re.compile(r"\[ref=([0-9A-Za-z]+)\]")
    _tab_line = re.compile(r"^- tab (\d+): .*$", re.MULTILINE)
    _opened_tab = re.compile(r"^Opened tab (\d+)", re.MULTILINE)
    _opened_event = re.compile(r"^- tab (\d+) opened \([^)]*\) by tab (\d+)", re.MULTILINE)

    def __init__(self, version: str, options: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.version = version
        self.options = options
        """More `tabpilot serve` options (the lab scenario's run with `--navigate-returns page`)."""
        self._tabs: list[int] = []

    needles = ("tabpilot", "serve")

    def argv(self, browser: str, workdir: str) -> list[str]:
        return [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser, *self.options]

    async def list_tabs(self) -> CallToolResult:
        return await self.call("browser_tabs", action="list")

    def _listed(self, result: CallToolResult) -> list[tuple[int, str]]:
        """(id, line) of every tab in the response's ### Tabs section."""
        tabs = text_of(result).split("### Tabs", 1)[-1].split("\n### ", 1)[0]
        return [(int(m.group(1)), m.group(0)) for m in self._tab_line.finditer(tabs)]

    async def start(self) -> None:
        listed = self._listed(await self.list_tabs())
        active = [tab for tab, line in listed if line.endswith("[active]")]
        if len(active) != 1:
            raise BenchError(f"tabpilot: no active tab in {listed}")
        self.home = active[0]
        self._tabs = [tab for tab, _ in listed]

    async def navigate(self, tab: int, url: str) -> CallToolResult:
        return await self.call("browser_navigate", url=url, tabId=tab)

    async def snapshot(self, tab: int, *, full: bool = True) -> CallToolResult:
        if full:
            return await self.call("browser_snapshot", tabId=tab, full=True)
        return await self.call("browser_snapshot", tabId=tab)

    async def new_tab(self, url: str, *, background: bool = False) -> tuple[int, CallToolResult]:
        args: dict[str, Any] = {"background": True} if background else {}
        result = await self.call("browser_tabs", action="new", url=url, **args)
        match = self._opened_tab.search(text_of(result))
        if match is None:
            raise BenchError(f"tabpilot: no opened tab in:\n{text_of(result)[:1500]}")
        tab = int(match.group(1))
        self._tabs.append(tab)
        return tab, result

    async def switch(self, tab: int) -> CallToolResult:
        return await self.call("browser_tabs", action="activate", tabId=tab)

    async def close(self, tab: int) -> CallToolResult:
        result = await self.call("browser_tabs", action="close", tabId=tab)
        self._tabs.remove(tab)
        return result

    async def close_others(self, keep: int) -> None:
        await self.call("browser_tabs", action="close_others", keepTabId=keep)
        self._tabs = [keep]

    async def click(self, tab: int, ref: str) -> tuple[CallToolResult, int | None]:
        result = await self.call("browser_click", ref=ref)
        for match in self._opened_event.finditer(text_of(result)):
            if int(match.group(2)) == tab:
                opened = int(match.group(1))
                self._tabs.append(opened)
                return result, opened
        return result, None

    async def opened_tab(self, opener: int) -> int:
        listed = self._listed(await self.list_tabs())
        strays = [t for t, line in listed if f"[opened by tab {opener}]" in line and t not in self._tabs]
        if not strays:
            raise BenchError("tabpilot: the tab the click opened is not in the tab list")
        self._tabs.append(strays[-1])
        return strays[-1]

    def tabs(self) -> list[int]:
        return list(self._tabs)


class PlaywrightMcp(Server):
    """Playwright MCP: tabs by position (`browser_tabs` list/new/select/close), tools act on the current tab."""

    key = "playwright"
    name = "Playwright MCP"
    ref_pattern = re.compile(r"\[ref=([0-9A-Za-z]+)\]")
    _current_line = re.compile(r"^- (\d+): \(current\)", re.MULTILINE)
    _tab_line = re.compile(r"^- (\d+): ", re.MULTILINE)

    def __init__(self, version: str) -> None:
        super().__init__()
        self.version = version
        self._order: list[int] = []
        self._next = 1
        self.current = 0

    needles = (str(PLAYWRIGHT_CLI),)

    def argv(self, browser: str, workdir: str) -> list[str]:
        # --no-sandbox: what Playwright (and so tabpilot) passes to Chromium by default.
        # --output-dir: it writes the snapshots of action responses to files there.
        args = [
            "--headless",
            "--isolated",
            "--no-sandbox",
            "--executable-path",
            browser,
            "--output-dir",
            workdir,
        ]
        return ["node", str(PLAYWRIGHT_CLI), *args]

    def _handle(self) -> int:
        self._next += 1
        return self._next - 1

    def _index(self, tab: int) -> int:
        return self._order.index(tab)

    def _sync_current(self, result: CallToolResult) -> None:
        text = text_of(result)
        match = self._current_line.search(text)
        if match and int(match.group(1)) < len(self._order):
            self.current = self._order[int(match.group(1))]

    async def call(self, tool: str, **args: Any) -> CallToolResult:
        result = await super().call(tool, **args)
        self._sync_current(result)
        return result

    async def prepare(self, tab: int) -> None:
        if tab != self.current:
            await self.switch(tab)

    async def list_tabs(self) -> CallToolResult:
        return await self.call("browser_tabs", action="list")

    async def start(self) -> None:
        listing = text_of(await self.list_tabs())
        self._order = [self._handle() for _ in self._tab_line.findall(listing)]
        if len(self._order) != 1:
            raise BenchError(f"Playwright MCP started with {len(self._order)} tabs:\n{listing}")
        self.home = self.current = self._order[0]

    async def navigate(self, tab: int, url: str) -> CallToolResult:
        assert tab == self.current, "prepare() first"
        return await self.call("browser_navigate", url=url)

    async def snapshot(self, tab: int, *, full: bool = True) -> CallToolResult:
        assert tab == self.current, "prepare() first"
        return await self.call("browser_snapshot")

    async def new_tab(self, url: str, *, background: bool = False) -> tuple[int, CallToolResult]:
        tab = self._handle()
        self._order.append(tab)
        # The new tab becomes the current one (there is no background option).
        self.current = tab
        return tab, await self.call("browser_tabs", action="new", url=url)

    async def switch(self, tab: int) -> CallToolResult:
        return await self.call("browser_tabs", action="select", index=self._index(tab))

    async def close(self, tab: int) -> CallToolResult:
        index = self._index(tab)
        self._order.remove(tab)
        return await self.call("browser_tabs", action="close", index=index)

    async def close_others(self, keep: int) -> None:
        # One call per tab, from the last (positions before it do not move).
        for tab in reversed(list(self._order)):
            if tab != keep:
                await self.close(tab)

    async def click(self, tab: int, ref: str) -> tuple[CallToolResult, int | None]:
        assert tab == self.current, "prepare() first"
        before = len(self._order)
        result = await self.call("browser_click", target=ref)
        # The response lists the open tabs when the set changed; a new one is the last.
        text = text_of(result)
        if "### Open tabs" in text:
            section = text.split("### Open tabs", 1)[1].split("###", 1)[0]
            count = len(self._tab_line.findall(section))
            if count == before + 1:
                opened = self._handle()
                self._order.append(opened)
                return result, opened
        return result, None

    async def opened_tab(self, opener: int) -> int:
        count = len(self._tab_line.findall(text_of(await self.list_tabs())))
        if count != len(self._order) + 1:
            raise BenchError(
                f"Playwright MCP: expected {len(self._order) + 1} tabs after the click, found {count}"
            )
        opened = self._handle()
        self._order.append(opened)
        return opened

    def tabs(self) -> list[int]:
        return list(self._order)


class DevToolsMcp(Server):
    """Chrome DevTools MCP: stable page ids (`pageId` on every page tool, its default routing)."""

    key = "devtools"
    name = "Chrome DevTools MCP"
    ref_pattern = re.compile(r"uid=(\S+)")
    _selected = re.compile(r"^(\d+): .*\[selected\]\s*$", re.MULTILINE)
    _page_line = re.compile(r"^(\d+): ", re.MULTILINE)

    def __init__(self, version: str) -> None:
        super().__init__()
        self.version = version
        self._pages: list[int] = []

    # No update check (the registry), no usage statistics, no CrUX look-ups: nothing but loopback.
    env = {"CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1"}  # noqa: RUF012

    def argv(self, browser: str, workdir: str) -> list[str]:
        args = ["--headless", "--isolated", "--executablePath", browser]
        args += ["--no-usage-statistics", "--no-performance-crux"]
        # --no-sandbox: what Playwright (and so tabpilot) passes to Chromium by default.
        return ["node", str(DEVTOOLS_CLI), *args, "--chromeArg=--no-sandbox"]

    async def list_tabs(self) -> CallToolResult:
        return await self.call("list_pages")

    async def start(self) -> None:
        text = text_of(await self.list_tabs())
        self._pages = [int(p) for p in self._page_line.findall(text)]
        selected = self._selected.search(text)
        if selected is None or len(self._pages) != 1:
            raise BenchError(f"Chrome DevTools MCP: unexpected first page list:\n{text}")
        self.home = int(selected.group(1))

    async def navigate(self, tab: int, url: str) -> CallToolResult:
        return await self.call("navigate_page", pageId=tab, type="url", url=url)

    async def snapshot(self, tab: int, *, full: bool = True) -> CallToolResult:
        return await self.call("take_snapshot", pageId=tab)

    async def new_tab(self, url: str, *, background: bool = False) -> tuple[int, CallToolResult]:
        args: dict[str, Any] = {"background": True} if background else {}
        result = await self.call("new_page", url=url, **args)
        ids = [int(p) for p in self._page_line.findall(text_of(result))]
        fresh = [p for p in ids if p not in self._pages]
        if len(fresh) != 1:
            raise BenchError(f"Chrome DevTools MCP: new_page did not name one new page:\n{text_of(result)}")
        self._pages.append(fresh[0])
        return fresh[0], result

    async def switch(self, tab: int) -> CallToolResult:
        return await self.call("select_page", pageId=tab)

    async def close(self, tab: int) -> CallToolResult:
        result = await self.call("close_page", pageId=tab)
        self._pages.remove(tab)
        return result

    async def close_others(self, keep: int) -> None:
        for tab in list(self._pages):
            if tab != keep:
                await self.close(tab)

    async def click(self, tab: int, ref: str) -> tuple[CallToolResult, int | None]:
        result = await self.call("click", pageId=tab, uid=ref)
        text = text_of(result)
        if "## Opened pages" in text:
            section = text.split("## Opened pages", 1)[1].split("##", 1)[0]
            fresh = [int(p) for p in self._page_line.findall(section) if int(p) not in self._pages]
            if fresh:
                self._pages.append(fresh[0])
                return result, fresh[0]
        return result, None

    async def opened_tab(self, opener: int) -> int:
        ids = [int(p) for p in self._page_line.findall(text_of(await self.list_tabs()))]
        fresh = [p for p in ids if p not in self._pages]
        if not fresh:
            raise BenchError("Chrome DevTools MCP: the page the click opened is not listed")
        self._pages.append(fresh[-1])
        return fresh[-1]

    def tabs(self) -> list[int]:
        return list(self._pages)


def available_servers(tabpilot_version: str) -> tuple[list[Server], list[str]]:
    """tabpilot and every peer installed in .peers/ (with node); notes on what is missing."""
    servers: list[Server] = [Tabpilot(tabpilot_version)]
    notes: list[str] = []
    if shutil.which("node") is None:
        return servers, [
            "peers: not measured: `node` is not on PATH (install Node.js 20+, then `make peers`)."
        ]
    for cls, package, cli in (
        (PlaywrightMcp, PLAYWRIGHT_MCP, PLAYWRIGHT_CLI),
        (DevToolsMcp, DEVTOOLS_MCP, DEVTOOLS_CLI),
    ):
        version = package_version(package)
        if version is None or not cli.exists():
            notes.append(
                f"peers: {cls.name} not measured: {package} is not installed in .peers/ (run `make peers`)."
            )
            continue
        servers.append(cls(version))
    return servers, notes


# -- the steps ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Step:
    key: str
    label: str
    unit: str
    goal: str
    """'ratio' (tabpilot <= best peer), or 'limit' (tabpilot <= `limit`) and the ratio shown too."""
    limit: float | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    note: str = ""

    def median(self, server: str) -> float:
        values = self.samples.get(server) or []
        return statistics.median(values) if values else math.nan


STEPS: list[tuple[str, str, str, str, float | None]] = [
    ("startup.initialized", "spawn to MCP session ready", "ms", "ratio", None),
    ("startup.first_result", "spawn to first tool result (list tabs)", "ms", "ratio", None),
    ("navigate", "navigate a tab to a local page", "ms", "ratio", None),
    ("snapshot.small", f"snapshot of a small page ({SMALL_PAGE}, full tree)", "ms", "ratio", None),
    ("new_tab", "open a new tab on a local page", "ms", "ratio", None),
    ("snapshot.first", "first snapshot of the tab just opened", "ms", "ratio", None),
    ("snapshot.many", f"snapshot of a 300-element page (/many?n={MANY})", "ms", "ratio", None),
    (
        "click.new_tab",
        "click that opens a tab (target=_blank link), to the new tab's id",
        "ms",
        "ratio",
        None,
    ),
    (
        "memory.busy",
        f"server memory at {BUSY_TABS} busy tabs (RSS, without the browser)",
        "MB",
        "ratio",
        None,
    ),
    ("tabs.list", f"list tabs at {BUSY_TABS} tabs", "ms", "ratio", None),
    ("tabs.switch", f"switch tab at {BUSY_TABS} tabs", "ms", "ratio", None),
    ("tabs.close_others", f"close all others at {BUSY_TABS} tabs", "ms", "ratio", None),
    ("tools.chars", "tool list (compact JSON of tools/list)", "chars", "limit", TOOL_LIST_LIMIT),
    ("tools.count", "tools in the list", "count", "info", None),
    ("lab.chars", "lab scenario: response characters", "chars", "ratio", None),
    ("lab.calls", "lab scenario: calls (fewest)", "count", "ratio", None),
    ("lab.text_chars", "lab scenario: text content only", "chars", "info", None),
    ("lab.ms", "lab scenario: wall time", "ms", "info", None),
    # The other answer a navigation can give (--navigate-returns page): URL and title, no tree.
    ("lab.page.chars", "lab scenario, --navigate-returns page: response characters", "chars", "info", None),
    ("lab.page.calls", "lab scenario, --navigate-returns page: calls", "count", "info", None),
    ("lab.page.ms", "lab scenario, --navigate-returns page: wall time", "ms", "info", None),
]


class PeerBench:
    def __init__(
        self,
        site: LocalSite,
        served: Served,
        servers: list[Server],
        plan: PeerPlan,
        progress: Progress,
        workdir: str,
    ) -> None:
        self.site = site
        self.served = served
        self.servers = servers
        self.plan = plan
        self.progress = progress
        self.workdir = workdir
        self.browser = find_browser()
        self.browser_dir = os.path.dirname(os.path.realpath(self.browser))
        self.steps = {key: Step(key, label, unit, goal, limit) for key, label, unit, goal, limit in STEPS}
        self.processes: dict[str, list[str]] = {}
        self.lab_calls: dict[str, list[tuple[str, int, int]]] = {}
        self.notes: list[str] = []

    def add(self, key: str, server: Server, value: float) -> None:
        self.steps[key].samples.setdefault(server.key, []).append(value)

    def _process(self, server: Server) -> McpProcess:
        workdir = os.path.join(self.workdir, server.key)
        os.makedirs(workdir, exist_ok=True)
        return server.process(self.browser, workdir)

    def order(self, round_: int) -> list[Server]:
        """The servers in the order of one round of a step. Each round starts with the next one, so
        that no server always follows the same other: what a server's call leaves running (its
        browser painting a tab it brought to front, its own collector) falls on each in turn."""
        k = round_ % len(self.servers)
        return self.servers[k:] + self.servers[:k]

    async def timed(
        self, key: str, server: Server, call: Callable[[], Awaitable[Any]], *, record: bool = True
    ) -> Any:
        start = time.perf_counter()
        result = await call()
        if record:
            self.add(key, server, (time.perf_counter() - start) * 1000)
        return result

    # -- start-up, on fresh processes --------------------------------------------------------

    async def startups(self) -> None:
        self.progress.begin("peers: start-up")
        for i in range(self.plan.startups):
            for server in self.order(i):
                self.progress.update(f"spawn {i + 1}/{self.plan.startups}: {server.name}")
                start = time.perf_counter()
                async with self._process(server) as proc:
                    self.add("startup.initialized", server, (time.perf_counter() - start) * 1000)
                    server.proc = proc
                    await server.list_tabs()
                    self.add("startup.first_result", server, (time.perf_counter() - start) * 1000)
                server.proc = None

    # -- the session steps, round-robin over live servers ------------------------------------

    async def session(self) -> None:
        async with self._live() as _:
            for server in self.servers:
                await server.start()
                await self.tool_list(server)
            await self.navigate()
            await self.small_snapshot()
            await self.new_tab_snapshot()
            await self.many_snapshot()
            await self.click_new_tab()
            await self.busy_tabs()
            await self.list_and_switch()
            await self.close_others()

    def _live(self) -> _Live:
        return _Live(self)

    async def tool_list(self, server: Server) -> None:
        assert server.proc is not None and server.proc.client is not None
        tools = (await server.proc.client.list_tools()).tools
        dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        self.add("tools.chars", server, len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False)))
        self.add("tools.count", server, len(tools))

    async def navigate(self) -> None:
        self.progress.begin("peers: navigate")
        urls = [self.site.url("/page/nav-a"), self.site.url("/page/nav-b")]
        for i in range(self.plan.reps + 2):
            for server in self.order(i):
                self.progress.update(f"{i + 1}/{self.plan.reps + 2}: {server.name}")
                await server.prepare(server.home)
                url = urls[i % 2]
                await self.timed(
                    "navigate", server, partial(server.navigate, server.home, url), record=i >= 2
                )

    async def small_snapshot(self) -> None:
        self.progress.begin("peers: small snapshot")
        for server in self.servers:
            await server.prepare(server.home)
            await server.navigate(server.home, self.site.url(SMALL_PAGE))
        for i in range(self.plan.reps + 2):
            for server in self.order(i):
                self.progress.update(f"{i + 1}/{self.plan.reps + 2}: {server.name}")
                await server.prepare(server.home)
                await self.timed(
                    "snapshot.small", server, partial(server.snapshot, server.home), record=i >= 2
                )

    async def new_tab_snapshot(self) -> None:
        self.progress.begin("peers: new tab + first snapshot")
        for i in range(self.plan.new_tabs + 1):
            for server in self.order(i):
                self.progress.update(f"{i + 1}/{self.plan.new_tabs + 1}: {server.name}")
                url = self.site.url(f"/page/fresh-{i}")
                tab, _ = await self.timed("new_tab", server, partial(server.new_tab, url), record=i >= 1)
                await server.prepare(tab)
                await self.timed("snapshot.first", server, partial(server.snapshot, tab), record=i >= 1)
                await server.close(tab)

    async def many_snapshot(self) -> None:
        self.progress.begin("peers: 300-element snapshot")
        tabs: dict[str, int] = {}
        for server in self.servers:
            tabs[server.key], _ = await server.new_tab(self.site.url(f"/many?n={MANY}"))
        for i in range(self.plan.reps + 2):
            for server in self.order(i):
                self.progress.update(f"{i + 1}/{self.plan.reps + 2}: {server.name}")
                tab = tabs[server.key]
                await server.prepare(tab)
                await self.timed("snapshot.many", server, partial(server.snapshot, tab), record=i >= 2)
        for server in self.servers:
            await server.close(tabs[server.key])

    async def click_new_tab(self) -> None:
        self.progress.begin("peers: click that opens a tab")
        refs: dict[str, str] = {}
        for server in self.servers:
            await server.prepare(server.home)
            await server.navigate(server.home, self.site.url("/"))
            text = text_of(await server.snapshot(server.home))
            refs[server.key] = server.ref(text, 'link "Open A in new tab"')
        unnamed: dict[str, int] = {}
        for i in range(self.plan.clicks + 1):
            for server in self.order(i):
                self.progress.update(f"{i + 1}/{self.plan.clicks + 1}: {server.name}")
                await server.prepare(server.home)
                # Timed until the agent knows the new tab: when the click's response does not
                # name it, the list call that finds it counts too.
                start = time.perf_counter()
                _, opened = await server.click(server.home, refs[server.key])
                if opened is None:
                    unnamed[server.name] = unnamed.get(server.name, 0) + 1
                    opened = await self._find_opened(server)
                if i >= 1:
                    self.add("click.new_tab", server, (time.perf_counter() - start) * 1000)
                await server.close(opened)
        if unnamed:
            said = ", ".join(f"{name} {n} of {self.plan.clicks + 1}" for name, n in unnamed.items())
            self.steps[
                "click.new_tab"
            ].note = f"clicks whose response did not name the new tab (the list call that found it is timed too): {said}"

    async def _find_opened(self, server: Server) -> int:
        for attempt in range(5):
            try:
                return await server.opened_tab(server.home)
            except BenchError:
                if attempt == 4:
                    raise
                await asyncio.sleep(0.1)
        raise AssertionError("unreachable")

    async def busy_tabs(self) -> None:
        self.progress.begin(f"peers: {BUSY_TABS} busy tabs")
        expected = self.served.fetches
        for server in self.servers:
            count = len(server.tabs())
            while count < BUSY_TABS:
                self.progress.update(f"{server.name}: tab {count + 1}/{BUSY_TABS}")
                url = self.site.url(BUSY_PAGE.format(fetches=BUSY_FETCHES, tab=count))
                await server.new_tab(url, background=True)
                expected += BUSY_FETCHES
                count += 1
            await server.list_tabs()  # every server has seen every tab before the reading
        # Until every page made all its fetches (the site serves them all, a minute or more on two
        # cores), then the servers get a few seconds to take the last ones in: the readings below
        # are of full buffers and of servers at rest, not of servers still taking traffic in.
        deadline = time.monotonic() + BUSY_WAIT
        while self.served.fetches < expected and time.monotonic() < deadline:
            self.progress.update(f"fetches {self.served.fetches}/{expected}")
            await asyncio.sleep(0.5)
        if self.served.fetches < expected:
            self.notes.append(
                f"peers: the busy tabs made {self.served.fetches} of {expected} fetches in {BUSY_WAIT:.0f} s; "
                "memory, list, switch and close-others at 20 tabs were read with the rest still coming"
            )
        await asyncio.sleep(3)
        for server in self.servers:
            assert server.proc is not None and server.proc.pid is not None
            mb, pids = procmem.server_rss_mb(server.proc.pid, self.browser_dir)
            self.add("memory.busy", server, mb)
            self.processes[server.key] = [os.path.basename(procmem.exe(p)) or str(p) for p in pids]

    async def list_and_switch(self) -> None:
        self.progress.begin(f"peers: list and switch at {BUSY_TABS} tabs")
        for server in self.servers:
            if len(server.tabs()) != BUSY_TABS:
                raise BenchError(f"{server.name}: {len(server.tabs())} tabs, expected {BUSY_TABS}")
        for i in range(self.plan.reps + 2):
            for server in self.order(i):
                self.progress.update(f"list {i + 1}/{self.plan.reps + 2}: {server.name}")
                await self.timed("tabs.list", server, server.list_tabs, record=i >= 2)
        for i in range(self.plan.reps + 2):
            for server in self.order(i):
                self.progress.update(f"switch {i + 1}/{self.plan.reps + 2}: {server.name}")
                pair = [server.home, server.tabs()[-1]]
                target = pair[(i + 1) % 2]
                await self.timed("tabs.switch", server, partial(server.switch, target), record=i >= 2)
        for server in self.servers:
            await server.switch(server.home)

    async def close_others(self) -> None:
        self.progress.begin(f"peers: close all others at {BUSY_TABS} tabs")
        for i in range(self.plan.close_others):
            for server in self.order(i):
                self.progress.update(f"{i + 1}/{self.plan.close_others}: {server.name}")
                count = len(server.tabs())
                while count < BUSY_TABS:  # the first round closes the busy tabs, later ones plain pages
                    await server.new_tab(self.site.url(f"/page/other-{count}"), background=True)
                    count += 1
                await server.prepare(server.home)
                await self.timed("tabs.close_others", server, partial(server.close_others, server.home))
                if server.tabs() != [server.home]:
                    raise BenchError(f"{server.name}: tabs left after closing the others: {server.tabs()}")

    # -- the lab scenario, on fresh processes -------------------------------------------------

    async def lab(self) -> None:
        self.progress.begin("peers: lab scenario")
        for server in self.servers:
            log = await self._lab_run(server)
            self.add("lab.text_chars", server, sum(text for _, _, text in log))
            self.lab_calls[server.key] = log
        # tabpilot's other choice for what a navigation answers, in the same scenario.
        ours = next((s for s in self.servers if isinstance(s, Tabpilot)), None)
        if ours is not None:
            await self._lab_run(Tabpilot(ours.version, ("--navigate-returns", "page")), "lab.page.")

    async def _lab_run(self, server: Server, prefix: str = "lab.") -> list[tuple[str, int, int]]:
        self.progress.update(f"{server.name} {' '.join(getattr(server, 'options', ()))}".strip())
        async with self._process(server) as proc:
            server.proc = proc
            server.log = []
            start = time.perf_counter()
            try:
                await self._lab(server)
            finally:
                log, server.log = server.log, None
            self.add(f"{prefix}ms", server, (time.perf_counter() - start) * 1000)
            self.add(f"{prefix}chars", server, sum(chars for _, chars, _ in log))
            self.add(f"{prefix}calls", server, len(log))
        server.proc = None
        return log

    async def _read(self, server: Server, tab: int, needle: str, seen: list[CallToolResult]) -> str:
        """The text that shows `needle` on `tab`: a response since the action, else a snapshot."""
        for result in reversed(seen):
            if needle in text_of(result):
                return text_of(result)
        for attempt in range(3):
            await server.prepare(tab)
            text = text_of(await server.snapshot(tab, full=False))
            if needle in text:
                return text
            # tabpilot answers in one line when the page did not change since the last snapshot.
            if isinstance(server, Tabpilot):
                text = text_of(await server.snapshot(tab, full=True))
                if needle in text:
                    return text
            await asyncio.sleep(0.2 * (attempt + 1))
        raise BenchError(f"{server.name}: {needle!r} never showed on tab {tab}:\n{text[:1500]}")

    async def _lab(self, server: Server) -> None:
        site = self.site
        await server.start()  # what is open
        home = server.home
        result = await server.navigate(home, site.url("/"))
        home_text = await self._read(server, home, 'link "Open A in new tab"', [result])
        for path, needle in (("/page/p1", 'heading "Page p1"'), ("/many?n=30", 'button "Button 30"')):
            tab, result = await server.new_tab(site.url(path))
            await self._read(server, tab, needle, [result])
        # Back on the first tab: follow the link that opens a tab, and read that tab.
        await server.prepare(home)
        result, opened = await server.click(home, server.ref(home_text, 'link "Open A in new tab"'))
        if opened is None:
            opened = await self._find_opened(server)
        text = await self._read(server, opened, 'button "Say hi"', [])
        await server.prepare(opened)
        result, _ = await server.click(opened, server.ref(text, 'button "Say hi"'))
        await self._read(server, opened, "Hi from page a", [result])
        # Go back to the first tab and go on there.
        await server.switch(home)
        result, _ = await server.click(home, server.ref(home_text, 'link "Go to C"'))
        await self._read(server, home, 'heading "Page c"', [result])
        await server.close_others(home)
        await server.list_tabs()

    # -- the report --------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        peers = [s for s in self.servers if s.key != "tabpilot"]
        steps: list[dict[str, Any]] = []
        for step in self.steps.values():
            values: dict[str, Any] = {}
            for server in self.servers:
                samples = step.samples.get(server.key) or []
                if not samples:
                    continue
                entry: dict[str, Any] = {"median": round(statistics.median(samples), 3), "n": len(samples)}
                if len(samples) > 1:
                    entry |= {
                        "p90": round(p90(samples), 3),
                        "min": round(min(samples), 3),
                        "max": round(max(samples), 3),
                    }
                values[server.key] = entry
            ours = step.median("tabpilot")
            peer_values = {s.key: step.median(s.key) for s in peers if not math.isnan(step.median(s.key))}
            best_key = min(peer_values, key=lambda k: peer_values[k]) if peer_values else None
            best = peer_values[best_key] if best_key is not None else math.nan
            ratio = ours / best if best and not math.isnan(ours) and not math.isnan(best) else math.nan
            if step.goal == "limit":
                assert step.limit is not None
                goal = f"<= {step.limit:,.0f} {step.unit}"
                status = "N/A" if math.isnan(ours) else "PASS" if ours <= step.limit else "MISS"
            elif step.goal == "ratio":
                goal = "<= best peer" if step.key.startswith("lab.") else "ratio <= 1.0"
                status = "N/A" if math.isnan(ratio) else "PASS" if ratio <= 1.0 else "MISS"
            else:
                goal, status = "", ""
            steps.append(
                {
                    "key": step.key,
                    "label": step.label,
                    "unit": step.unit,
                    "values": values,
                    "best_peer": best_key,
                    "ratio": None if math.isnan(ratio) else round(ratio, 3),
                    "goal": goal,
                    "status": status,
                    **({"note": step.note} if step.note else {}),
                }
            )
        return {
            "servers": {
                s.key: {"name": s.name, "version": s.version, "command": s.command} for s in self.servers
            },
            "browser": self.browser,
            "plan": {
                "startups": self.plan.startups,
                "reps": self.plan.reps,
                "new_tabs": self.plan.new_tabs,
                "clicks": self.plan.clicks,
                "close_others": self.plan.close_others,
            },
            "steps": steps,
            "memory_processes": self.processes,
            "lab_calls": {
                k: [{"tool": t, "chars": c, "text_chars": x} for t, c, x in v]
                for k, v in self.lab_calls.items()
            },
            "notes": self.notes,
        }


class _Live:
    """Every server started at once (so the steps can alternate between them), all stopped at the end."""

    def __init__(self, bench: PeerBench) -> None:
        self.bench = bench
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> _Live:
        self.bench.progress.begin("peers: starting the servers")
        try:
            for server in self.bench.servers:
                server.proc = await self._stack.enter_async_context(self.bench._process(server))
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for server in self.bench.servers:
            server.proc = None
        # The stack stops them in the reverse order of their start, as the SDK's task groups need.
        await self._stack.aclose()


# -- rendering ---------------------------------------------------------------------------------


def _fmt(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    if unit == "ms":
        return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"
    if unit == "MB":
        return f"{value:.1f}"
    return f"{value:,.0f}"


def render(report: dict[str, Any]) -> str:
    servers = report["servers"]
    keys = list(servers)
    head = ["step", *(f"{servers[k]['name']}" for k in keys), "tabpilot/best peer", "goal", ""]
    rows: list[list[str]] = []
    for step in report["steps"]:
        unit = step["unit"]
        cells = [f"{step['label']} ({unit})" if unit not in ("count",) else step["label"]]
        for k in keys:
            value = step["values"].get(k)
            cells.append(_fmt(value["median"], unit) if value else "-")
        ratio = step["ratio"]
        cells.append(f"{ratio:.2f}x" if ratio is not None else "-")
        cells += [step["goal"], step["status"]]
        rows.append(cells)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i in (0, len(head) - 2, len(head) - 1) else c.rjust(widths[i])
            for i, c in enumerate(r)
        ).rstrip()

    versions = ", ".join(f"{v['name']} {v['version']}" for v in servers.values())
    out = [f"Peers, one run, medians ({versions}; {report['browser']})", line(head)]
    out.append(line(["-" * w for w in widths]))
    out += [line(r) for r in rows]
    for step in report["steps"]:
        if step.get("note"):
            out.append(f"  note ({step['label']}): {step['note']}")
    procs = report.get("memory_processes") or {}
    if procs:
        out.append(
            "  memory counts: "
            + "; ".join(f"{servers[k]['name']}: {' + '.join(v)}" for k, v in procs.items() if k in servers)
        )
    for note in report.get("notes") or []:
        out.append(f"  note: {note}")
    return "\n".join(out)


def failures(report: dict[str, Any]) -> list[str]:
    """Steps where tabpilot misses its goal, with the figures, for the notes."""
    servers = report["servers"]
    missed = []
    for step in report["steps"]:
        if step["status"] != "MISS":
            continue
        unit = step["unit"]
        ours = step["values"].get("tabpilot", {}).get("median")
        said = f"{step['label']}: tabpilot {_fmt(ours, unit)} {unit}"
        best = step.get("best_peer")
        if best and best in step["values"]:
            said += f" against {_fmt(step['values'][best]['median'], unit)} {unit} ({servers[best]['name']})"
            said += f", {step['ratio']:.2f}x" if step["ratio"] is not None else ""
        missed.append(f"{said}; goal {step['goal']}")
    return missed


# -- entry point -------------------------------------------------------------------------------


async def run(results: Results, progress: Progress, quick: bool, tabpilot_version: str) -> None:
    servers, notes = available_servers(tabpilot_version)
    for note in notes:
        results.note(note)
    if len(servers) < 2:
        results.note("peers: no peer to compare with; the peer table is left out.")
        return
    with LocalSite() as site, tempfile.TemporaryDirectory(prefix="tabpilot-peers-") as workdir:
        served = install_pages(site)
        bench = PeerBench(site, served, servers, QUICK if quick else FULL, progress, workdir)
        try:
            await bench.startups()
            await bench.session()
            await bench.lab()
        except BenchError as exc:
            results.note(f"peers: the run stopped early: {str(exc)[:600]}")
        finally:
            report = bench.report()
            results.extra["peers"] = report
    for miss in failures(report):
        results.note(f"peers: behind the best peer: {miss}")
