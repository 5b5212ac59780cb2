"""Everything measured through `tabpilot serve` over stdio, with a real MCP client.

One server process (with `--max-tabs 200 --max-total-tabs 200`: the defaults stop at 20 and 64
tabs) serves most measurements, in an order that keeps each one clean: overhead and tab
operations at 1 tab first, then clicks and snapshots on their own tabs (closed again), then the
tab count grows to 20 and 100 with pages that fill the telemetry buffers, and memory is read at
each level. Start-up is measured on fresh processes.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import procmem
from baseline import PlaywrightPages
from harness import Progress, Results, repeat, timed
from mcp.types import CallToolResult
from mcp_procs import BenchError, McpProcess, structured_of, tabpilot_server, text_of
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse

from tabpilot.demo.site import LocalSite

TABS = "tabs at 1 / 20 / 100"
NOISE_TABS = 20


@dataclass(frozen=True, slots=True)
class Plan:
    """How many times each thing is measured; `--quick` uses smaller numbers."""

    overhead_pairs: int
    tab_ops: int
    new_close: int
    clicks: int
    snapshot: dict[int, tuple[int, int]]
    """/many?n= size -> (warm-up calls, timed calls)."""
    startups: int
    levels: tuple[int, ...] = (1, 20, 100)


FULL = Plan(
    overhead_pairs=300,
    tab_ops=30,
    new_close=15,
    clicks=20,
    snapshot={300: (5, 15), 3000: (4, 8)},
    startups=5,
)
QUICK = Plan(
    overhead_pairs=100,
    tab_ops=10,
    new_close=5,
    clicks=8,
    snapshot={300: (4, 6), 3000: (3, 3)},
    startups=2,
    levels=(1, 20),  # 100 tabs take over a minute to open: the full run measures them
)

_REF = re.compile(r"\[ref=([0-9A-Za-z]+)\]")


def ref_of(snapshot_text: str, needle: str) -> str:
    """The ref on the first snapshot line that contains `needle` (e.g. 'link "Open A in new tab"')."""
    for line in snapshot_text.splitlines():
        if needle in line:
            match = _REF.search(line)
            if match:
                return match.group(1)
    raise BenchError(f"no element {needle!r} with a ref in the snapshot:\n{snapshot_text[:2000]}")


def response_chars(result: CallToolResult) -> tuple[int, int]:
    """(characters of text content, characters of structured content as JSON)."""
    return len(text_of(result)), len(json.dumps(structured_of(result), separators=(",", ":")))


def _find(data: Any, key: str) -> Any:
    """The first value under `key` anywhere in nested dicts/lists (metadata layouts may vary)."""
    if isinstance(data, dict):
        if key in data:
            return data[key]
        data = list(data.values())
    if isinstance(data, list):
        for item in data:
            found = _find(item, key)
            if found is not None:
                return found
    return None


def _opened_tab(result: CallToolResult, opener: int) -> int | None:
    for event in structured_of(result).get("events") or []:
        if event.get("type") == "tab_opened" and event.get("openerId") == opener:
            tab_id = event.get("tabId")
            return int(tab_id) if tab_id is not None else None
    return None


@dataclass
class Served:
    """What the site answered of the noise pages' fetches."""

    fetches: int = 0


def install_pages(site: LocalSite) -> Served:
    """Pages only the benchmark needs, served by the same local site; their fetches are counted."""
    served = Served()

    async def noise(request: Request) -> HTMLResponse:
        # Console lines and same-origin fetches with text bodies: fills the log, network and body buffers.
        logs = min(int(request.query_params.get("logs", "200")), 5000)
        fetches = min(int(request.query_params.get("fetches", "20")), 500)
        script = f"""for (let i = 0; i < {logs}; i++) console.log('bench noise ' + i + ' ' + 'x'.repeat(80));
Promise.all(Array.from({{length: {fetches}}}, (_, i) => fetch('/bench/text?i=' + i).then((r) => r.text())))
  .then(() => {{ document.getElementById('done').textContent = 'done'; }});"""
        body = "<h1>Noise</h1><p id='done' role='status'></p>"
        return HTMLResponse(
            f"<!doctype html><html><head><link rel='icon' href='data:,'><title>Noise</title></head>"
            f"<body>{body}<script>{script}</script></body></html>"
        )

    async def counter(request: Request) -> HTMLResponse:
        # /many's layout plus one status line that a click changes: a full snapshot against the
        # changed-lines response of an action on the same page.
        n = min(int(request.query_params.get("n", "300")), 5000)
        buttons = "\n".join(
            f'<button type="button" onclick="bump({i})">Button {i}</button>' for i in range(1, n + 1)
        )
        links = "\n".join(f'<a href="#{i}">Link {i}</a>' for i in range(1, n + 1))
        script = "let count = 0; function bump(i) { count++; document.getElementById('count').textContent = 'Count ' + count + ' (button ' + i + ')'; }"
        return HTMLResponse(
            "<!doctype html><html><head><link rel='icon' href='data:,'><title>Counter</title></head><body>"
            f"<h1>Counter</h1><p id='count' role='status'>Count 0</p><div>{buttons}</div><nav>{links}</nav>"
            f"<script>{script}</script></body></html>"
        )

    async def text(request: Request) -> PlainTextResponse:
        served.fetches += 1  # the site's thread only
        return PlainTextResponse(NOISE_TEXT)

    site.set_route("/bench/noise", noise)
    site.set_route("/bench/counter", counter)
    site.set_route("/bench/text", text)
    return served


NOISE_TEXT = ("abcdefghijklmnopqrstuvwxyz" * 79)[:2048]
"""The body of each noise fetch: 2 KB of text."""


class ServerBench:
    def __init__(
        self, site: LocalSite, results: Results, progress: Progress, plan: Plan, pw: PlaywrightPages
    ) -> None:
        self.site = site
        self.pw = pw
        self.results = results
        self.progress = progress
        self.plan = plan
        install_pages(site)

    # -- start-up ------------------------------------------------------------------------------

    async def startup(self) -> None:
        section = "start-up"
        self.progress.begin(section)
        spawn = self.results.figure("startup.first_result", section, "spawn to first tool result", "ms")
        init = self.results.figure("startup.initialized", section, "spawn to MCP session ready", "ms")
        for i in range(self.plan.startups):
            self.progress.update(f"spawn {i + 1}/{self.plan.startups}")
            start = time.perf_counter()
            async with tabpilot_server() as srv:
                init.samples.append((time.perf_counter() - start) * 1000)
                await srv.call("browser_tabs", action="list")
                spawn.samples.append((time.perf_counter() - start) * 1000)

    # -- the main session ----------------------------------------------------------------------

    async def session(self, bare: McpProcess) -> None:
        self.bare = bare
        async with tabpilot_server("--max-tabs", "200", "--max-total-tabs", "200") as srv:
            self.srv = srv
            first = await srv.call("browser_tabs", action="list")
            self.home = int(structured_of(first)["result"]["activeTabId"])
            self.keep = {self.home}
            self.memory("idle (1 tab, empty buffers)", "idle")
            await self.step("overhead", lambda: self.overhead(bare))
            await self.step("tab operations at 1 tab", lambda: self.tab_ops(1))
            await self.step("clicks that open tabs", self.clicks)
            await self.step("snapshots", self.snapshots)
            await self.step("action response size", self.action_response)
            for level in self.plan.levels[1:]:
                await self.grow_to(level)
                await self.step(f"tab operations at {level} tabs", lambda: self.tab_ops(level))  # noqa: B023
                await self.step(f"filling buffers at {level} tabs", lambda: self.fill_buffers(level))  # noqa: B023
                self.memory(f"{level} tabs, full telemetry buffers", str(level))
                self.browser_memory(level)

    async def step(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        """Run one part; if it fails, say so, close the tabs it left behind and go on with the rest."""
        try:
            await run()
        except BenchError as exc:
            # The lines that say something (a tool's error text starts with its section header).
            said = " ".join(
                line for line in str(exc).splitlines() if line.strip() and not line.startswith("###")
            )
            self.results.note(f"{name}: not measured ({said[:400]})")
            listing = structured_of(await self.tabs(action="list"))["result"]["tabs"]
            for tab in listing:
                if int(tab["id"]) not in self.keep:
                    await self.tabs(action="close", tabId=int(tab["id"]))
            await self.tabs(action="activate", tabId=self.home)

    async def tabs(self, **args: Any) -> CallToolResult:
        return await self.srv.call("browser_tabs", **args)

    async def overhead(self, bare: McpProcess) -> None:
        section = "overhead per call"
        self.progress.begin(section)
        bare_fig = self.results.figure(
            "mcp.bare_round_trip", section, "bare MCP round trip (trivial server)", "ms"
        )
        list_fig = self.results.figure("tabs.list.1", section, "browser_tabs list, 1 tab", "ms")
        for _ in range(20):  # warm both processes (imports, caches) before timing
            await bare.call("noop", action="list")
            await self.tabs(action="list")
        # Interleaved, so both see the same machine load from moment to moment.
        for i in range(self.plan.overhead_pairs):
            if i % 20 == 0:
                self.progress.update(f"pair {i + 1}/{self.plan.overhead_pairs}")
            elapsed, _ = await timed(lambda: bare.call("noop", action="list"))
            bare_fig.samples.append(elapsed)
            elapsed, _ = await timed(lambda: self.tabs(action="list"))
            list_fig.samples.append(elapsed)
        self.results.ratio(
            "ratio.overhead",
            section,
            "server overhead: list (1 tab) / bare round trip",
            "tabs.list.1",
            "mcp.bare_round_trip",
        )
        if bare.pid is not None:
            rss = procmem.rss_mb(bare.pid)
            if rss is not None:
                self.results.value(
                    "mcp.bare_rss", section, "bare MCP server RSS (SDK + Python alone)", "MB", rss
                )

    async def tab_ops(self, level: int) -> None:
        section = TABS
        self.progress.begin(f"tab operations at {level} tab{'s' if level != 1 else ''}")
        listing = await self.tabs(action="list")
        count = int(structured_of(listing)["result"]["count"])
        if count != level:
            raise BenchError(f"expected {level} open tabs, the server lists {count}")
        # The same response from a trivial server, interleaved: what its size costs by itself.
        sample = await self.tabs(action="list")
        await self.bare.call("store", text=text_of(sample), structured=structured_of(sample))
        list_fig = self.results.figure(
            f"tabs.list.{level}", section, f"browser_tabs list, {level} tabs", "ms"
        )
        replay_fig = self.results.figure(
            f"bare.replay_list.{level}", section, f"same response from the trivial server, {level} tabs", "ms"
        )
        for _ in range(3):
            await self.tabs(action="list")
            await self.bare.call("replay")
        for i in range(self.plan.tab_ops):
            self.progress.update(f"list {i + 1}/{self.plan.tab_ops}")
            elapsed, _ = await timed(lambda: self.tabs(action="list"))
            list_fig.samples.append(elapsed)
            elapsed, _ = await timed(lambda: self.bare.call("replay"))
            replay_fig.samples.append(elapsed)
        self.results.ratio(
            f"ratio.list_own.{level}",
            section,
            f"list / same response from trivial server, {level} tabs",
            f"tabs.list.{level}",
            f"bare.replay_list.{level}",
        )
        text_chars, json_chars = response_chars(sample)
        self.results.value(
            f"tabs.list.{level}.chars", section, f"list response, {level} tabs: text", "chars", text_chars
        )
        self.results.value(
            f"tabs.list.{level}.json_chars",
            section,
            f"list response, {level} tabs: structured JSON",
            "chars",
            json_chars,
        )

        ids = [int(t["id"]) for t in structured_of(listing)["result"]["tabs"]]
        # Alternate between two tabs, so every call really changes the active tab (at 1 tab: re-activate it).
        pair = [self.home, ids[-1] if ids[-1] != self.home else ids[0]]
        state = {"i": 0}

        async def activate() -> CallToolResult:
            state["i"] += 1
            return await self.tabs(action="activate", tabId=pair[state["i"] % 2])

        fig = self.results.figure(
            f"tabs.activate.{level}", section, f"browser_tabs activate, {level} tabs", "ms"
        )
        await repeat(fig, activate, self.plan.tab_ops, progress=self.progress, warmup=2)
        await self.tabs(action="activate", tabId=self.home)

        new_fig = self.results.figure(
            f"tabs.new.{level}", section, f"browser_tabs new (local page), {level} tabs", "ms"
        )
        close_fig = self.results.figure(
            f"tabs.close.{level}", section, f"browser_tabs close (active), {level} tabs", "ms"
        )
        url = self.site.url("/page/new")
        for i in range(self.plan.new_close + 1):
            self.progress.update(f"new/close {i + 1}/{self.plan.new_close + 1}")
            elapsed_new, opened = await timed(lambda: self.tabs(action="new", url=url))
            new_id = int(structured_of(opened)["result"]["tabId"])
            elapsed_close, _ = await timed(lambda: self.tabs(action="close", tabId=new_id))  # noqa: B023
            if i:  # the first pair is a warm-up
                new_fig.samples.append(elapsed_new)
                close_fig.samples.append(elapsed_close)

    async def clicks(self) -> None:
        section = "clicks that open tabs"
        self.progress.begin(section)
        opened = await self.tabs(action="new", url=self.site.url("/"))
        home = int(structured_of(opened)["result"]["tabId"])
        snap = text_of(await self.srv.call("browser_snapshot", tabId=home, full=True))
        cases = [
            (
                "link",
                'link "Open A in new tab"',
                "click target=_blank link until the response names the new tab",
            ),
            ("popup", 'button "Open popup"', "click window.open button until the response names the popup"),
        ]
        for key, needle, label in cases:
            ref = ref_of(snap, needle)
            fig = self.results.figure(f"click.new_tab.{key}", section, label, "ms")
            unnamed = 0
            for i in range(self.plan.clicks + 1):
                self.progress.update(f"{key} click {i + 1}/{self.plan.clicks + 1}")
                elapsed, result = await timed(lambda: self.srv.call("browser_click", ref=ref))  # noqa: B023
                new_id = _opened_tab(result, home)
                if new_id is None or f"tab {new_id}" not in text_of(result):
                    unnamed += 1
                    # Find the stray tab some other way, so the next click starts from the same state.
                    listing = structured_of(await self.tabs(action="list"))["result"]["tabs"]
                    strays = [int(t["id"]) for t in listing if t.get("openerId") == home]
                    new_id = strays[-1] if strays else None
                elif i:
                    fig.samples.append(elapsed)
                if new_id is not None:
                    await self.tabs(action="close", tabId=new_id)
            if unnamed:
                fig.note = f"{unnamed} of {self.plan.clicks + 1} responses did not name the new tab"
                self.results.note(f"{label}: {fig.note}.")
        await self.tabs(action="close", tabId=home)

    async def snapshots(self) -> None:
        section = "snapshot"
        self.progress.begin(section)
        for n, (warmup, times) in self.plan.snapshot.items():
            opened = await self.tabs(action="new", url=self.site.url(f"/many?n={n}"), background=True)
            tab = int(structured_of(opened)["result"]["tabId"])
            await self.pw.open(n)
            pw_fig = self.results.figure(
                f"playwright.aria_snapshot.{n}",
                section,
                f"Playwright's own aria_snapshot(mode='ai'), /many?n={n}",
                "ms",
            )
            fig = self.results.figure(
                f"snapshot.{n}", section, f"browser_snapshot, /many?n={n} ({2 * n} elements)", "ms"
            )

            async def server_snapshot() -> CallToolResult:
                return await self.srv.call("browser_snapshot", tabId=tab, full=True)  # noqa: B023

            # The first calls on a page are slow in both (renderer and injected script warm up).
            for _ in range(warmup):
                await self.pw.aria(n)
                result = await server_snapshot()
            # Alternating, call for call, so both see the same machine load.
            for i in range(times):
                self.progress.update(f"n={n} {i + 1}/{times}")
                elapsed, aria = await timed(lambda: self.pw.aria(n))  # noqa: B023
                pw_fig.samples.append(elapsed)
                elapsed, result = await timed(server_snapshot)
                fig.samples.append(elapsed)
            await self.pw.close(n)
            self.results.value(
                f"playwright.aria_snapshot.{n}.chars",
                section,
                f"Playwright's aria snapshot, n={n}",
                "chars",
                len(aria),
            )
            text_chars, json_chars = response_chars(result)
            self.results.value(
                f"snapshot.{n}.chars", section, f"snapshot response, n={n}: text", "chars", text_chars
            )
            self.results.value(
                f"snapshot.{n}.json_chars",
                section,
                f"snapshot response, n={n}: structured JSON",
                "chars",
                json_chars,
            )
            self.results.ratio(
                f"ratio.snapshot.{n}",
                section,
                f"browser_snapshot / Playwright aria_snapshot, n={n}",
                f"snapshot.{n}",
                f"playwright.aria_snapshot.{n}",
            )
            await self.tabs(action="close", tabId=tab)

    async def action_response(self) -> None:
        section = "action response size"
        self.progress.begin(section)
        opened = await self.tabs(action="new", url=self.site.url("/bench/counter?n=300"), background=True)
        tab = int(structured_of(opened)["result"]["tabId"])
        snap = await self.srv.call("browser_snapshot", tabId=tab, full=True)
        full_chars, _ = response_chars(snap)
        ref = ref_of(text_of(snap), 'button "Button 150"')
        fig = self.results.figure(
            "click.changed_lines", section, "click on /bench/counter?n=300 (changed-lines response)", "ms"
        )
        result = await repeat(
            fig,
            lambda: self.srv.call("browser_click", ref=ref),
            self.plan.tab_ops,
            progress=self.progress,
            warmup=1,
        )
        action_chars, _ = response_chars(result)
        if "Count" not in text_of(result):
            self.results.note("The click's response on /bench/counter did not show the changed status line.")
        self.results.value(
            "action.full_snapshot.chars",
            section,
            "full snapshot response (600 elements)",
            "chars",
            full_chars,
        )
        self.results.value(
            "action.changed.chars", section, "click response with changed lines", "chars", action_chars
        )
        self.results.ratio(
            "ratio.action_vs_snapshot",
            section,
            "click response / full snapshot (size)",
            "action.changed.chars",
            "action.full_snapshot.chars",
        )
        await self.tabs(action="close", tabId=tab)

    # -- growing, telemetry, memory ------------------------------------------------------------

    def _page_url(self, i: int) -> str:
        # The first 20 tabs fill the telemetry buffers (default 5000 entries per kind, 8 MB of
        # bodies) in one load; the rings stay full after that, so later tabs are plain pages.
        if i < NOISE_TABS:
            return self.site.url(f"/bench/noise?logs=300&fetches=260&tab={i}")
        return self.site.url(f"/page/{i}")

    async def grow_to(self, level: int) -> None:
        self.progress.begin(f"opening tabs up to {level}")
        count = int(structured_of(await self.tabs(action="list"))["result"]["count"])
        noisy = self.results.figure(
            "tabs.new.background.noise",
            TABS,
            "browser_tabs new, background, page with 300 logs + 260 fetches",
            "ms",
        )
        plain = self.results.figure(
            "tabs.new.background.plain", TABS, "browser_tabs new, background, plain page", "ms"
        )
        while count < level:
            self.progress.update(f"tab {count + 1}/{level}")
            url = self._page_url(count)
            elapsed, opened = await timed(lambda: self.tabs(action="new", url=url, background=True))  # noqa: B023
            (noisy if count < NOISE_TABS else plain).samples.append(elapsed)
            self.keep.add(int(structured_of(opened)["result"]["tabId"]))
            count += 1

    async def observe(self, what: str) -> dict[str, Any] | None:
        result = await self.srv.raw("browser_observe", {"what": what, "limit": 1})
        if result.is_error:
            return None
        return structured_of(result)

    async def fill_buffers(self, level: int) -> None:
        """Reload noise pages until every telemetry buffer that fills from pages has dropped entries."""
        self.progress.begin(f"filling telemetry buffers at {level} tabs")
        kinds = ("logs", "network_waterfall", "network_bodies")
        listing = structured_of(await self.tabs(action="list"))["result"]["tabs"]
        noise_tabs = [int(t["id"]) for t in listing if "/bench/noise" in str(t.get("url"))]
        full: dict[str, bool] = {}
        totals: dict[str, Any] = {}
        for round_ in range(30):
            full = {}
            for kind in kinds:
                data = await self.observe(kind)
                if data is None:
                    self.results.note(f"browser_observe(what={kind!r}) is not available: buffers not filled.")
                    return
                dropped = _find(data, "dropped")
                totals[kind] = _find(data, "total_entries_all_tabs")
                full[kind] = isinstance(dropped, int | float) and dropped > 0
            if all(full.values()):
                break
            for i, tab in enumerate(noise_tabs):
                self.progress.update(f"round {round_ + 1}: reloading noise tab {i + 1}/{len(noise_tabs)}")
                await self.srv.call("browser_navigate", action="reload", tabId=tab)
        self.results.extra.setdefault("telemetry_fill", {})[str(level)] = {"full": full, "entries": totals}
        not_full = [k for k, v in full.items() if not v]
        if not_full:
            self.results.note(
                f"At {level} tabs these telemetry buffers never dropped entries (not full): {not_full}."
            )
        await self.observe_queries(level, noise_tabs[0])

    async def observe_queries(self, level: int, tab: int) -> None:
        """browser_observe over full buffers, through MCP: one tab's latest 100 logs, and all tabs'."""
        section = "telemetry (browser_observe)"
        for key, label, args in (
            ("tab", f"browser_observe logs, one tab, limit 100, {level} tabs", {"tabId": tab}),
            ("all", f"browser_observe logs, all tabs, limit 100, {level} tabs", {}),
        ):
            fig = self.results.figure(f"observe.logs.{key}.{level}", section, label, "ms")
            result = await repeat(
                fig,
                lambda: self.srv.call("browser_observe", what="logs", limit=100, **args),  # noqa: B023
                self.plan.tab_ops,
                progress=self.progress,
                warmup=2,
            )
            if level == self.plan.levels[-1]:
                text_chars, json_chars = response_chars(result)
                self.results.value(
                    f"observe.logs.{key}.chars",
                    section,
                    f"that response ({key}): text + JSON",
                    "chars",
                    text_chars + json_chars,
                )

    def memory(self, label: str, key: str) -> None:
        pid = self.srv.pid
        rss = procmem.rss_mb(pid) if pid is not None else None
        if rss is None:
            self.results.note(f"Server RSS ({label}) not measured: server process not found in /proc.")
            return
        self.results.value(f"server.rss.{key}", "memory", f"server RSS, {label}", "MB", rss)

    def browser_memory(self, level: int) -> None:
        pid = self.srv.pid
        root = procmem.browser_root(pid) if pid is not None else None
        if root is None:
            self.results.note("Browser PSS not measured: the server's Chromium was not found under it.")
            return
        total, processes = procmem.tree_pss_mb(root)
        self.results.value(
            f"browser.pss.{level}",
            "memory",
            f"browser PSS, {level} tabs ({processes} processes)",
            "MB",
            total,
        )
        self.results.value(
            f"browser.pss_per_tab.{level}", "memory", f"browser PSS / tab, {level} tabs", "MB", total / level
        )
        previous = getattr(self, "_pss", None)
        if previous is not None:
            before_level, before_total = previous
            self.results.value(
                f"browser.pss_per_added_tab.{level}",
                "memory",
                f"browser PSS per added tab ({before_level}->{level})",
                "MB",
                (total - before_total) / (level - before_level),
            )
        self._pss = (level, total)


def analyse(results: Results) -> None:
    """Ratios that need figures from several parts, and the targets with the reason for a miss."""
    levels = [k.rsplit(".", 1)[1] for k in results.figures if re.fullmatch(r"tabs\.list\.\d+", k)]
    top = max((int(level) for level in levels), default=1)
    for op in ("list", "activate"):
        results.ratio(
            f"ratio.{op}.{top}_vs_1", TABS, f"{op}: {top} tabs / 1 tab", f"tabs.{op}.{top}", f"tabs.{op}.1"
        )

    def why_overhead() -> str:
        bare, srv = results.median("mcp.bare_round_trip"), results.median("tabs.list.1")
        return (
            f"list costs {srv:.2f} ms against {bare:.2f} ms for a trivial tool: the extra is tabpilot's "
            "work per call (tool wrapper, settle(), telemetry record, building the text and JSON twice)"
        )

    def why_list() -> str:
        ctop, jtop = results.median(f"tabs.list.{top}.chars"), results.median(f"tabs.list.{top}.json_chars")
        l1, ltop = results.median("tabs.list.1"), results.median(f"tabs.list.{top}")
        r1, rtop = results.median("bare.replay_list.1"), results.median(f"bare.replay_list.{top}")
        return (
            f"the response lists every tab ({ctop:.0f} chars of text and {jtop:.0f} of JSON at {top} tabs); "
            f"a trivial MCP server returning that same response takes {rtop:.2f} ms (vs {r1:.2f} ms at 1 tab), "
            f"so moving the response accounts for {rtop - r1:.2f} ms of the {ltop - l1:.2f} ms growth and "
            f"tabpilot's own work for {(ltop - rtop) - (l1 - r1):.2f} ms (no browser round trip)"
        )

    def why_snapshot(n: int) -> str:
        pw = results.median(f"playwright.aria_snapshot.{n}")
        srv = results.median(f"snapshot.{n}")
        chars, json_chars = results.median(f"snapshot.{n}.chars"), results.median(f"snapshot.{n}.json_chars")
        return (
            f"{srv - pw:.1f} ms over Playwright's {pw:.1f} ms: the server sends the snapshot twice "
            f"({chars:.0f} chars as text and {json_chars:.0f} as structured JSON), and its own work on "
            "the tree (refs scoped to the tab, the copy kept for the next diff)"
        )

    results.target(
        "server overhead per call <= 1.5x bare MCP round trip", "ratio.overhead", 1.5, "x", why_overhead()
    )
    results.target(
        f"list at {top} tabs within 2x of list at 1 tab", f"ratio.list.{top}_vs_1", 2.0, "x", why_list()
    )
    for n in (300, 3000):
        if f"ratio.snapshot.{n}" in results.figures:
            results.target(
                f"snapshot (n={n}, {2 * n} elements) <= 1.2x Playwright's own aria snapshot",
                f"ratio.snapshot.{n}",
                1.2,
                "x",
                why_snapshot(n),
            )
    click_why = (
        "the click waits for the new tab to be discovered and announced (settle()) and then re-reads the "
        "clicking tab's snapshot for the changed lines"
    )
    results.target(
        "target=_blank click names the new tab < 150 ms", "click.new_tab.link", 150, "ms", click_why
    )
    results.target("window.open click names the popup < 150 ms", "click.new_tab.popup", 150, "ms", click_why)
    bare_rss = results.median("mcp.bare_rss")
    results.target(
        "server RSS with 20 tabs and full buffers < 120 MB",
        "server.rss.20",
        120,
        "MB",
        f"a bare MCP server already takes {bare_rss:.0f} MB; the rest is Playwright's client, tab state and the telemetry buffers"
        if not math.isnan(bare_rss)
        else "",
    )
