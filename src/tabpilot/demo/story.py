"""`tabpilot demo`: a scripted multi-tab session over MCP, with a readable transcript.

It does what an agent would: starts `python -m tabpilot serve` as a subprocess and talks MCP to it
over stdio with the official SDK client, against the built-in local site (`tabpilot.demo.site`) on
127.0.0.1. The session opens a page, clicks a target=_blank link and reads the new tab's id from
the click's response, reads that background tab without switching to it, signs in through an
OAuth-style popup that closes itself, reads the closed popup's network log, closes a tab and lists
what is left. Every step checks what the responses say; the exit code is 0 only if all passed.

Nothing can hang: each call has a timeout, the whole run has one, and the server (with its
Chromium) and the site are stopped however the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO, cast

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from .. import extension_id
from ..server.response import parse_response
from .site import LocalSite
from .user_browser import UserBrowser, user_browser

CALL_TIMEOUT = 30.0
"""Seconds one tool call may take (the first one also launches the browser)."""
RUN_TIMEOUT = 300.0
"""Seconds the whole demo may take, server start and shutdown included."""
USER = "ada"
USER_PAGE = "/page/mine"
"""With --extension: the page the user has open in their own browser (never shared)."""


class StepFailed(Exception):
    """A step did not do what it should; the message says what happened instead."""


def check(condition: object, failure: str) -> None:
    """Fail the current step with `failure` unless `condition` holds."""
    if not condition:
        raise StepFailed(failure)


def find_ref(snapshot: str, role: str, name: str) -> str | None:
    """The ref of the element `role "name"` in a snapshot's text, e.g. `1e6` or `1f1e3`."""
    match = re.search(rf'- {re.escape(role)} "{re.escape(name)}"[^\n]*?\[ref=([0-9a-z]+)\]', snapshot)
    return match.group(1) if match else None


@dataclass(frozen=True)
class Reply:
    """One tool call and its answer: the text the model reads and the structured content."""

    tool: str
    arguments: dict[str, Any]
    text: str
    data: dict[str, Any]
    is_error: bool
    elapsed_ms: float

    @classmethod
    def of(cls, tool: str, arguments: dict[str, Any], result: CallToolResult, elapsed_ms: float) -> Reply:
        text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
        data = result.structured_content if isinstance(result.structured_content, dict) else {}
        return cls(tool, arguments, text, data, result.is_error, elapsed_ms)

    def section(self, name: str) -> list[str]:
        """The non-empty lines of `### name` (none if the section is absent)."""
        return [line for line in parse_response(self.text).get(name, "").splitlines() if line.strip()]

    @property
    def result(self) -> dict[str, Any]:
        value = self.data.get("result")
        return value if isinstance(value, dict) else {}

    @property
    def events(self) -> list[dict[str, Any]]:
        value = self.data.get("events")
        return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []

    @property
    def snapshot(self) -> str:
        value = self.data.get("snapshot")
        return value if isinstance(value, str) else ""


def find_event(replies: Sequence[Reply], type: str, tab_id: int) -> dict[str, Any]:
    """The `type` event of `tab_id` in these responses; fails the step if none reports it."""
    for reply in replies:
        for event in reply.events:
            if event.get("type") == type and event.get("tabId") == tab_id:
                return event
    raise StepFailed(f"no {type} event for tab {tab_id} in ### Events")


def opened_tab(reply: Reply, *, opener: int, cause: str) -> int:
    """The id of the one tab an action opened, as its response reports it; fails unless the
    result and the `tab_opened` event (with its opener and cause) agree."""
    opened = reply.result.get("openedTabIds")
    if not isinstance(opened, list) or len(opened) != 1:
        raise StepFailed(f"expected the response to name one opened tab, result.openedTabIds = {opened!r}")
    tab_id = int(opened[0])
    event = find_event([reply], "tab_opened", tab_id)
    check(
        event.get("openerId") == opener,
        f"tab {tab_id} should have opener {opener}, got {event.get('openerId')}",
    )
    check(
        event.get("cause") == cause, f"tab {tab_id} should be opened by a {cause}, got {event.get('cause')!r}"
    )
    return tab_id


# -- the transcript --------------------------------------------------------------------------------


def _format_call(tool: str, arguments: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())
    return f"{tool}({args})"


class Transcript:
    """Prints the session for a human: steps, calls with their timing, key response lines, checks."""

    RESULT_LINES = 4
    SNAPSHOT_LINES = 3

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.color = out.isatty() and "NO_COLOR" not in os.environ
        unicode = (getattr(out, "encoding", None) or "").lower().replace("-", "") == "utf8"
        self.ok_mark, self.fail_mark, self.arrow = ("✓", "✗", "→") if unicode else ("+", "x", "->")

    def _paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def line(self, text: str = "") -> None:
        try:
            print(text, file=self.out, flush=True)
        except BrokenPipeError:
            self._reader_gone()
            raise  # the demo stops: nobody reads its transcript (`tabpilot demo | head`)

    def _reader_gone(self) -> None:
        """Whatever is still written goes nowhere: the failure's own lines, and the interpreter's
        flush of stdout at exit, which would say the pipe broke again."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            with contextlib.suppress(OSError, ValueError):  # a stream that is no file has no flush at exit
                os.dup2(devnull, self.out.fileno())
        finally:
            os.close(devnull)

    def step(self, number: int, total: int, title: str) -> None:
        self.line()
        self.line(self._paint(f"[{number}/{total}] {title}", "1"))

    def call(self, reply: Reply) -> None:
        head = f"  {self.arrow} {_format_call(reply.tool, reply.arguments)}"
        self.line(f"{self._paint(head, '36')}  {self._paint(f'{reply.elapsed_ms:.0f} ms', '2')}")
        for line in self.key_lines(reply):
            self.line("      " + line)

    def key_lines(self, reply: Reply) -> list[str]:
        """What is worth reading in a response, each section under its label: not the whole snapshot."""
        lines: list[str] = []

        def add(label: str, body: list[str], limit: int | None = None) -> None:
            shown = body[:limit] if limit else body
            if len(body) > len(shown):
                more = len(body) - len(shown)
                shown = [*shown, f"… {more} more line{'s' if more != 1 else ''}"]
            lines.extend(f"{label if i == 0 else '':<9} {line}" for i, line in enumerate(shown))

        if reply.is_error:
            add("Error", reply.section("Error"))
        else:
            add("Result", reply.section("Result"), self.RESULT_LINES)
        add("Events", [line.removeprefix("- ") for line in reply.section("Events")])
        add("Tabs", [line.removeprefix("- ") for line in reply.section("Tabs")])
        add(
            "Snapshot",
            [line for line in reply.section("Snapshot") if not line.startswith("```")],
            self.SNAPSHOT_LINES,
        )
        return [self._paint(line, "2") for line in lines]

    def ok(self, text: str) -> None:
        self.line(f"  {self._paint(self.ok_mark, '32')} {text}")

    def fail(self, text: str) -> None:
        self.line(f"  {self._paint(self.fail_mark + ' ' + text, '31')}")


# -- the session -----------------------------------------------------------------------------------


@dataclass
class Session:
    """The scripted session: each step calls tools, checks the answers and remembers the tab ids."""

    client: Client
    site: LocalSite
    transcript: Transcript
    server_log: Callable[[], str]
    start_tab: int = 0
    link_tab: int = 0
    popup_tab: int = 0
    link_ref: str | None = None
    sign_in_link_ref: str | None = None
    replies: list[Reply] = field(default_factory=list)
    user: UserBrowser | None = None
    """With --extension: the user's own browser, where the agent works through the extension."""

    @property
    def steps(self) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
        first = (
            "List the tabs (the first call waits for the extension; the user's own tab is not listed)"
            if self.user
            else "List the tabs (the first call launches Chromium)"
        )
        steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            (first, self.list_start_tabs),
            ("Open the start page and find its links", self.open_start_page),
            ("Click the link: the response names the new tab", self.click_new_tab_link),
            ("Read the new background tab without switching to it", self.read_background_tab),
            ("Go to the app and click 'Sign in': an OAuth-style popup opens", self.open_oauth_popup),
            ("Sign in inside the popup: it closes itself and the app is signed in", self.complete_oauth),
            ("Read the closed popup's network log (per-tab telemetry)", self.observe_popup),
            ("Close the tab the link opened", self.close_link_tab),
            ("List the tabs that are left", self.list_final_tabs),
        ]
        if self.user:
            steps.append(("The user's own tab is still open, untouched", self.check_user_tab))
        return steps

    async def call(self, tool: str, **arguments: Any) -> Reply:
        """Call a tool, print it, and fail the step if it errs, times out or the server is gone."""
        started = time.perf_counter()
        try:
            with anyio.fail_after(CALL_TIMEOUT + 5):  # the client's own read timeout should come first
                result = await self.client.call_tool(tool, arguments)
        except Exception as exc:
            elapsed = (time.perf_counter() - started) * 1000
            self.transcript.line(
                f"  {self.transcript.arrow} {_format_call(tool, arguments)}  {elapsed:.0f} ms"
            )
            reason = "it timed out" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
            tail = self.server_log()
            raise StepFailed(
                f"{tool} did not answer ({reason})" + (f"\nserver log:\n{tail}" if tail else "")
            ) from exc
        reply = Reply.of(tool, arguments, result, (time.perf_counter() - started) * 1000)
        self.replies.append(reply)
        self.transcript.call(reply)
        check(not reply.is_error, f"{tool} returned an error: {' '.join(reply.section('Error'))}")
        return reply

    def active_tab(self, reply: Reply) -> Any:
        """The active tab id a response reports (in `result` or alongside `### Tabs`)."""
        return reply.result.get("activeTabId", reply.data.get("activeTabId"))

    async def list_start_tabs(self) -> None:
        reply = await self.call("browser_tabs", action="list")
        tabs = reply.result.get("tabs") or []
        check(len(tabs) == 1, f"expected one blank tab at start, got {len(tabs)}")
        self.start_tab = int(tabs[0]["id"])
        check(self.active_tab(reply) == self.start_tab, f"tab {self.start_tab} should be the active tab")
        self.transcript.ok(f"one tab, id {self.start_tab}, active")

    async def open_start_page(self) -> None:
        # The navigation answers with the page's snapshot: no second call needed to read it.
        reply = await self.call("browser_navigate", url=self.site.url("/"))
        check(reply.result.get("tabId") == self.start_tab, f"the snapshot should be of tab {self.start_tab}")
        self.link_ref = find_ref(reply.snapshot, "link", "Open A in new tab")
        self.sign_in_link_ref = find_ref(reply.snapshot, "link", "Sign-in demo")
        check(self.link_ref, "no link 'Open A in new tab' in the snapshot")
        check(self.sign_in_link_ref, "no link 'Sign-in demo' in the snapshot")
        self.transcript.ok(
            f"link 'Open A in new tab' is ref {self.link_ref}, 'Sign-in demo' is {self.sign_in_link_ref} "
            f"(refs name their tab: {self.start_tab})"
        )

    async def click_new_tab_link(self) -> None:
        reply = await self.call("browser_click", ref=self.link_ref)
        self.link_tab = opened_tab(reply, opener=self.start_tab, cause="link")
        check(self.active_tab(reply) == self.start_tab, "the click should not switch tabs")
        self.transcript.ok(
            f"new tab {self.link_tab}, opened by tab {self.start_tab}; tab {self.start_tab} still active"
        )

    async def read_background_tab(self) -> None:
        reply = await self.call("browser_snapshot", tabId=self.link_tab)
        page = reply.data.get("page") or {}
        check(
            page.get("tabId") == self.link_tab, f"the snapshot should be of tab {self.link_tab}, got {page}"
        )
        check('heading "Page a"' in reply.snapshot, f"tab {self.link_tab} should show 'Page a'")
        active = self.active_tab(reply)
        check(active == self.start_tab, f"the active tab should still be {self.start_tab}, got {active}")
        self.transcript.ok(f"tab {self.link_tab} shows 'Page a'; the active tab is still {self.start_tab}")

    async def open_oauth_popup(self) -> None:
        # A ref stays valid while its page does: the one from step 2 still works.
        app = await self.call("browser_click", ref=self.sign_in_link_ref)
        check(app.data.get("page", {}).get("title") == "App", "the link should lead to the 'App' page")
        button = find_ref(app.snapshot, "button", "Sign in")
        check(button, "no 'Sign in' button in the click's snapshot of the App page")
        reply = await self.call("browser_click", ref=button)
        self.popup_tab = opened_tab(reply, opener=self.start_tab, cause="popup")
        check(self.active_tab(reply) == self.start_tab, "the popup should not become the active tab")
        self.transcript.ok(f"popup is tab {self.popup_tab}, opened by tab {self.start_tab}, not activated")

    async def complete_oauth(self) -> None:
        first = len(self.replies)
        popup = await self.call("browser_snapshot", tabId=self.popup_tab)
        field_ref = find_ref(popup.snapshot, "textbox", "Username")
        check(field_ref, f"no 'Username' field on the popup (tab {self.popup_tab})")
        await self.call("browser_type", ref=field_ref, text=USER, submit=True)
        signed_in = f"Signed in as {USER}"
        await self.call("browser_wait_for", tabId=self.start_tab, text=signed_in)
        # The popup may close while the type call settles or a moment later: either response tells.
        closed = find_event(self.replies[first:], "tab_closed", self.popup_tab)
        check(
            closed.get("by") == "page",
            f"the popup should close itself, it was closed by {closed.get('by')!r}",
        )
        self.transcript.ok(f"popup tab {self.popup_tab} closed itself (tab_closed by page)")
        self.transcript.ok(f"tab {self.start_tab} says '{signed_in}'")

    async def observe_popup(self) -> None:
        reply = await self.call("browser_observe", what="network_waterfall", tabId=self.popup_tab)
        entries = reply.result.get("entries") or []
        urls = [str(e.get("url", "")) for e in entries]
        check(all(e.get("tabId") == self.popup_tab for e in entries), "an entry belongs to another tab")
        # Through the extension Chrome reports a tab a page opens once it is loading: its first
        # request (/oauth/authorize) may come before the log does; what the popup did next is there.
        paths = ("/oauth/callback",) if self.user else ("/oauth/authorize", "/oauth/callback")
        for path in paths:
            check(any(path in url for url in urls), f"no {path} request in tab {self.popup_tab}'s log")
        self.transcript.ok(
            f"tab {self.popup_tab}'s requests outlive it, each entry tagged tabId {self.popup_tab}"
        )

    async def close_link_tab(self) -> None:
        reply = await self.call("browser_tabs", action="close", tabId=self.link_tab)
        check(reply.result.get("closedTabId") == self.link_tab, f"tab {self.link_tab} should be closed")
        closed = find_event([reply], "tab_closed", self.link_tab)
        check(
            closed.get("by") == "tool",
            f"tab {self.link_tab} should be closed by the tool, got {closed.get('by')!r}",
        )
        check(self.active_tab(reply) == self.start_tab, f"tab {self.start_tab} should stay active")
        self.transcript.ok(f"tab {self.link_tab} closed; tab {self.start_tab} still active")

    async def list_final_tabs(self) -> None:
        reply = await self.call("browser_tabs", action="list")
        tabs = reply.result.get("tabs") or []
        ids = [t.get("id") for t in tabs]
        check(ids == [self.start_tab], f"only tab {self.start_tab} should be left, got {ids}")
        title = tabs[0].get("title")
        check(
            title == "App - signed in",
            f"tab {self.start_tab} should be titled 'App - signed in', got {title!r}",
        )
        self.transcript.ok(f"one tab left: {self.start_tab} '{title}'")

    async def check_user_tab(self) -> None:
        assert self.user is not None
        urls = await asyncio.to_thread(self.user.page_urls)
        mine = self.site.url(USER_PAGE)
        check(mine in urls, f"the user's tab {mine} should still be open, the browser has {urls}")
        self.transcript.ok(f"{mine} still open; the agent never saw it")

    async def run(self) -> int:
        """Run the steps in order, stopping at the first that fails; the number that passed."""
        steps = self.steps
        for number, (title, step) in enumerate(steps, 1):
            self.transcript.step(number, len(steps), title)
            try:
                await step()
            except StepFailed as exc:
                self.transcript.fail(f"step {number} failed ({title}): {exc}")
                return number - 1
        return len(steps)


# -- running it ------------------------------------------------------------------------------------


def server_command(
    *, browser_path: str | None, headed: bool, extension: tuple[int, str] | None = None
) -> list[str]:
    # The story checks each step against the facts in structured content (the model reads the text).
    args = ["-m", "tabpilot", "serve", "--structured-content"]
    if extension is not None:
        port, token = extension
        # `=`: a random token may start with "-", which argparse would read as an option.
        return [*args, "--extension", "--extension-port", str(port), f"--extension-token={token}"]
    if browser_path:
        args += ["--browser-path", browser_path]
    if headed:
        args.append("--headed")
    return args


async def run_demo(
    transcript: Transcript, *, browser_path: str | None = None, headed: bool = False, extension: bool = False
) -> int:
    pairing = (_free_port(), secrets.token_urlsafe(16)) if extension else None
    args = server_command(browser_path=browser_path, headed=headed, extension=pairing)
    started = time.perf_counter()
    passed, total = 0, 0
    tools: set[str] = set()
    # The server's stderr goes to a file: its logs would tear the transcript; the tail is shown on failure.
    with contextlib.ExitStack() as stack:
        site = stack.enter_context(LocalSite())
        errlog = stack.enter_context(tempfile.NamedTemporaryFile("w", prefix="tabpilot-demo-", suffix=".log"))
        user: UserBrowser | None = None
        if pairing is not None:
            user = stack.enter_context(
                user_browser(site.url(USER_PAGE), browser_path=browser_path, headed=headed)
            )

        def server_log(lines: int = 15) -> str:
            errlog.flush()
            return "\n".join(Path(errlog.name).read_text(errors="replace").splitlines()[-lines:])

        transcript.line(f"tabpilot demo: local site at {site.origin}")
        transcript.line(f"server: {' '.join(['python', *args])} (MCP over stdio)")
        if user is not None:
            transcript.line(
                f"the user's browser: Chromium with the tabpilot extension and {site.url(USER_PAGE)} open"
            )
        # With this environment: the SDK passes a few variables only (no DISPLAY for --headed, no
        # TABPILOT_BROWSER, no temp folder of the user's choosing).
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        try:
            with anyio.fail_after(RUN_TIMEOUT):
                transport = stdio_client(
                    params, errlog=cast(TextIO, errlog)
                )  # a file wrapper, typed as IO[str]
                client = Client(transport, read_timeout_seconds=CALL_TIMEOUT)
                async with client:
                    tools = {t.name for t in (await client.list_tools()).tools}
                    transcript.line(f"connected: {len(tools)} tools")
                    if user is not None and pairing is not None:
                        url = f"chrome-extension://{extension_id()}/connect.html?port={pairing[0]}&token={pairing[1]}"
                        await asyncio.to_thread(user.open, url)
                        transcript.line(
                            "the user opened the extension's connect page: it pairs with the server"
                        )
                    session = Session(client, site, transcript, server_log, user=user)
                    total = len(session.steps)
                    passed = await session.run()
        except Exception as exc:
            cause: BaseException = exc
            while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # the client's task group
                cause = cause.exceptions[0]
            reason = (
                "it ran out of time"
                if isinstance(cause, TimeoutError)
                else f"{type(cause).__name__}: {cause}"
            )
            # Before the tool list the server had not started (its log says why).
            broke = "the server did not start" if not tools else "the session with the server broke off"
            transcript.fail(f"{broke} ({reason})")
            tail = server_log()
            if tail:
                transcript.line("server log:\n" + tail)
    elapsed = time.perf_counter() - started
    transcript.line()
    if total and passed == total:
        transcript.line(f"{passed}/{total} steps passed in {elapsed:.1f} s")
        return 0
    transcript.line(f"FAILED: {passed}/{total or '?'} steps passed in {elapsed:.1f} s")
    return 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def main(*, browser_path: str | None = None, headed: bool = False, extension: bool = False) -> int:
    transcript = Transcript(sys.stdout)
    try:
        return asyncio.run(
            run_demo(transcript, browser_path=browser_path, headed=headed, extension=extension)
        )
    except KeyboardInterrupt:
        transcript.line("interrupted")
        return 130
    except BrokenPipeError:  # the reader left before the session began (its steps end in a failure)
        return 1
