"""The manager: every instance the process drives, one tab id space, one event stream."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, Page, Playwright, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ._browser_path import find_browser
from ._errors import ConnectError, InstanceNotFoundError, TabNotFoundError
from ._events import EventBus
from ._instance import Instance, InstanceInfo, InstanceKind
from ._tab import Tab
from ._types import OpenCause, TabInfo, TabLimitPolicy

ContextHook = Callable[[BrowserContext, Callable[[Page], "int | None"]], Callable[[], None]]
PageHook = Callable[[Page, int], Callable[[], None]]

_live_processes: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()


@atexit.register
def _kill_leftover_browsers() -> None:
    # A process that exits without closing its manager must not leave browsers behind.
    for proc in list(_live_processes):
        if proc.poll() is None:
            with contextlib.suppress(Exception):
                os.killpg(proc.pid, signal.SIGKILL)


Protocol = Literal["cdp", "playwright"]

_SCHEMES: dict[Protocol, tuple[str, ...]] = {
    "cdp": ("http", "https", "ws", "wss"),
    "playwright": ("ws", "wss"),
}


def _check_scheme(endpoint: str, protocol: Protocol) -> None:
    scheme = urlsplit(endpoint).scheme.lower()
    if scheme in _SCHEMES[protocol]:
        if protocol == "playwright" and "/devtools/" in urlsplit(endpoint).path:
            raise ConnectError(
                f"{endpoint} is a Chrome DevTools (CDP) URL, not a Playwright browser server: "
                "connect it with cdpEndpoint (connect_cdp) instead."
            )
        return
    if protocol == "playwright":
        hint = (
            " An http:// address is usually a Chrome started with --remote-debugging-port: connect it "
            "with cdpEndpoint (connect_cdp) instead."
            if scheme in ("http", "https")
            else ""
        )
        raise ConnectError(
            f"{endpoint!r} is not a Playwright browser server URL: it must start with ws:// or wss:// "
            f"(`playwright launch-server` and `run-server` print one).{hint}"
        )
    raise ConnectError(
        f"{endpoint!r} is not a CDP endpoint URL: give http://host:port (the browser's "
        "--remote-debugging-port) or its ws://host:port/devtools/browser/<id> URL."
    )


def _first_line(exc: BaseException) -> str:
    # Playwright appends a multi-line call log; its first line says what happened.
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.split(": ", 1)[1] if text.startswith("BrowserType.") and ": " in text else text


async def _connect(connect: Callable[..., Any], endpoint: str, protocol: Protocol, timeout: float) -> Browser:
    """Connect with a bounded wait, and say plainly why it failed: unreachable or wrong protocol."""
    try:
        # Playwright's own timeout covers the handshake; the outer one guarantees nothing hangs.
        browser: Browser = await asyncio.wait_for(connect(endpoint, timeout=timeout * 1000), timeout + 5)
        return browser
    except (TimeoutError, PlaywrightTimeoutError) as exc:
        raise ConnectError(
            f"Could not connect to {endpoint}: no answer within {timeout:g} s. Check that the host and "
            "port are right and reachable from this machine, and that the browser (server) runs there."
        ) from exc
    except Exception as exc:
        detail = _first_line(exc)
        if any(k in detail for k in ("ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ECONNRESET")):
            raise ConnectError(
                f"Could not connect to {endpoint}: it is unreachable ({detail}). Check the host and port, "
                "and that the browser (server) runs there."
            ) from exc
        if protocol == "cdp":
            raise ConnectError(
                f"Could not connect over CDP to {endpoint}: it answered, but not as a Chrome DevTools "
                f"endpoint ({detail}). Give the http://host:port of a Chromium started with "
                "--remote-debugging-port, or its ws://.../devtools/browser/<id> URL; for a Playwright "
                "browser server use wsEndpoint (connect_ws)."
            ) from exc
        raise ConnectError(
            f"Could not connect to {endpoint} as a Playwright browser server: it answered, but not in "
            f"Playwright's protocol ({detail}). Give the ws:// URL that `playwright launch-server` or "
            "`run-server` prints (it ends in its secret path); for a Chrome with "
            "--remote-debugging-port use cdpEndpoint (connect_cdp)."
        ) from exc


@dataclass(frozen=True, slots=True)
class CloseResult:
    closed_tab_id: int
    active_tab_id: int | None


class TabIds:
    """Tab ids for one process: positive integers in discovery order, never reused."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def __next__(self) -> int:
        return next(self._next)

    def __iter__(self) -> Iterator[int]:
        return self


class TabManager:
    """Drives browsers and keeps every tab of every one under a stable integer id.

    Use it as an async context manager::

        async with TabManager() as manager:
            instance = await manager.launch()
            tab = await manager.new_tab("http://127.0.0.1:8000/")
    """

    def __init__(
        self,
        *,
        headless: bool = True,
        browser_path: str | None = None,
        max_tabs: int = 20,
        tab_limit_policy: TabLimitPolicy = "reject",
        follow_new_tabs: bool = False,
        event_history: int = 1000,
        tab_ids: TabIds | None = None,
        playwright: Playwright | None = None,
    ) -> None:
        if max_tabs < 1:
            raise ValueError("max_tabs must be at least 1")
        if tab_limit_policy not in ("reject", "close-oldest"):
            raise ValueError("tab_limit_policy must be 'reject' or 'close-oldest'")
        self.headless = headless
        self.browser_path = browser_path
        self.max_tabs = max_tabs
        self.tab_limit_policy: TabLimitPolicy = tab_limit_policy
        self.follow_new_tabs = follow_new_tabs
        self.events = EventBus(history_size=event_history)
        self._tab_ids = tab_ids or TabIds()
        self._instance_ids = itertools.count(1)
        self._instances: dict[str, Instance] = {}
        self._default_id: str | None = None
        self._playwright = playwright
        self._owns_playwright = playwright is None
        self._context_hooks: list[ContextHook] = []
        self._page_hooks: list[PageHook] = []
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    async def __aenter__(self) -> TabManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._playwright is None:
            self._playwright = await async_playwright().start()

    async def close(self) -> None:
        """Close every instance (launched browsers exit; connected ones are left running)."""
        if self._closed:
            return
        self._closed = True
        # Newest first: a context instance closes before the browser it lives in.
        for instance in reversed(list(self._instances.values())):
            await instance.close()
        for proc in list(self._processes):
            self._kill(proc)
        if self._owns_playwright and self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
        self._playwright = None

    # -- hooks (telemetry attaches here) -----------------------------------------------------------

    def add_hooks(self, *, context: ContextHook | None = None, page: PageHook | None = None) -> None:
        """Run `context(ctx, tab_id_for_page)` for every adopted context and `page(page, tab_id)` for
        every new tab, synchronously, before the tab is announced. Each returns its disposer."""
        if context is not None:
            self._context_hooks.append(context)
        if page is not None:
            self._page_hooks.append(page)

    def tab_id_for_page(self, page: Page) -> int | None:
        """The id of a page's tab, registering the page at once if it is new to a known context."""
        for instance in self._instances.values():
            tab = instance.tab_for_page(page)
            if tab is not None:
                return tab.id
        for instance in self._instances.values():
            if page.context == instance.context:
                tab = instance._register(page, cause=None)
                return tab.id if tab else None
        return None

    def _next_tab_id(self) -> int:
        return next(self._tab_ids)

    # -- instances -------------------------------------------------------------------------------

    @property
    def instances(self) -> list[Instance]:
        return list(self._instances.values())

    @property
    def default_instance(self) -> Instance | None:
        return self._instances.get(self._default_id) if self._default_id else None

    def instance(self, instance_id: str | None = None) -> Instance:
        """An instance by id, or the default instance."""
        if instance_id is None:
            inst = self.default_instance
            if inst is None:
                raise InstanceNotFoundError(
                    "No browser instance is open. Launch one (browser_instance action=launch) or connect one.",
                )
            return inst
        inst = self._instances.get(instance_id)
        if inst is None:
            known = ", ".join(f"{i.id} ({i.kind})" for i in self._instances.values()) or "none"
            raise InstanceNotFoundError(
                f"Instance {instance_id!r} not found. Open instances: {known}. "
                "Use browser_instance(action='list') to see them.",
                instance_id=instance_id,
            )
        return inst

    def _note_activation(self, instance: Instance) -> None:
        # The instance of the most recently activated tab becomes the default.
        self._default_id = instance.id

    async def _adopt(
        self,
        *,
        kind: InstanceKind,
        endpoint: str | None,
        browser: Browser | None,
        context: BrowserContext,
        process: subprocess.Popen[bytes] | None = None,
        profile_dir: str | None = None,
        owns_context: bool = False,
        headless: bool = True,
        initial_cause: OpenCause = "external",
        instance_id: str | None = None,
    ) -> Instance:
        iid = instance_id or f"inst_{next(self._instance_ids)}"
        if iid in self._instances:
            raise ValueError(f"instance id {iid!r} is in use")
        instance = Instance(
            self,
            iid,
            kind=kind,
            endpoint=endpoint,
            browser=browser,
            context=context,
            process=process,
            profile_dir=profile_dir,
            owns_context=owns_context,
            headless=headless,
        )
        self._instances[iid] = instance
        default = self.default_instance
        if default is None or default.state != "open":
            self._default_id = iid
        await instance._start(initial_cause=initial_cause)
        return instance

    def _pw(self) -> Playwright:
        if self._playwright is None:
            raise RuntimeError("TabManager is not started: use `async with TabManager() as manager:`")
        return self._playwright

    async def launch(
        self,
        *,
        headless: bool | None = None,
        browser_path: str | None = None,
        instance_id: str | None = None,
        timeout: float = 30.0,
        user_data_dir: str | os.PathLike[str] | None = None,
    ) -> Instance:
        """Start a local Chromium and drive it over CDP.

        By default it gets an isolated profile: a fresh temporary directory, deleted when the
        instance closes (no cookies or logins shared with anything). `user_data_dir` uses (and
        keeps) that profile instead; one Chromium at a time can use a profile.

        Driving it over CDP (not a Playwright pipe) lets the manager see tabs that other
        clients open in its default context.
        """
        await self.start()
        headless = self.headless if headless is None else headless
        executable = find_browser(browser_path or self.browser_path)
        if user_data_dir is None:
            profile = tempfile.mkdtemp(prefix="tabpilot-profile-")
        else:
            profile = str(Path(user_data_dir).expanduser().resolve())
            Path(profile).mkdir(parents=True, exist_ok=True)
            # A port file left by an earlier run would point at a browser that is gone.
            (Path(profile) / "DevToolsActivePort").unlink(missing_ok=True)
        args = [
            executable,
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--disable-popup-blocking",
            "--password-store=basic",
            "--use-mock-keychain",
            # Without it a screenshot of a tab that is not in front waits for a frame that never
            # comes (seconds, or forever); Playwright's own launches pass it too.
            "--enable-features=CDPScreenshotNewSurface",
            # Tabs the agent is not looking at must keep running at full speed.
            "--disable-renderer-backgrounding",
            "--disable-background-timer-throttling",
            "--disable-backgrounding-occluded-windows",
        ]
        if headless:
            args += ["--headless=new", "--hide-scrollbars", "--mute-audio"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")
        args.append("about:blank")
        proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        self._processes.add(proc)
        _live_processes.add(proc)
        try:
            port = await self._wait_for_port(proc, Path(profile) / "DevToolsActivePort", timeout)
            browser = await self._pw().chromium.connect_over_cdp(f"http://127.0.0.1:{port}", timeout=timeout * 1000)
        except BaseException as exc:
            self._kill(proc)
            if user_data_dir is None:
                shutil.rmtree(profile, ignore_errors=True)
            elif isinstance(exc, ConnectError):
                raise ConnectError(
                    f"{exc} The profile {profile} may be in use by another Chromium; a profile serves "
                    "one browser at a time."
                ) from exc
            raise
        instance = await self._adopt(
            kind="launched",
            endpoint=f"http://127.0.0.1:{port}",
            browser=browser,
            context=browser.contexts[0],
            process=proc,
            profile_dir=profile if user_data_dir is None else None,
            headless=headless,
            initial_cause="tool",
            instance_id=instance_id,
        )
        instance.user_data_dir = None if user_data_dir is None else profile
        return instance

    @staticmethod
    async def _wait_for_port(proc: subprocess.Popen[bytes], port_file: Path, timeout: float) -> int:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if proc.poll() is not None:
                raise ConnectError(
                    f"Chromium exited at start (exit code {proc.returncode}). Check --browser-path, "
                    "or run it by hand to see why."
                )
            with contextlib.suppress(FileNotFoundError, ValueError, IndexError):
                text = port_file.read_text()
                if text.strip():
                    return int(text.split()[0])
            await asyncio.sleep(0.02)
        raise ConnectError(f"Chromium did not open its DevTools port within {timeout:.0f} s.")

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with contextlib.suppress(Exception):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(Exception):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        self._forget_process(proc)

    def _forget_process(self, proc: subprocess.Popen[bytes]) -> None:
        self._processes.discard(proc)
        _live_processes.discard(proc)

    async def connect_cdp(
        self, endpoint: str, *, instance_id: str | None = None, timeout: float = 10.0
    ) -> Instance:
        """Attach to a running Chromium over CDP (`http://host:port` or `ws://...`).

        Its open tabs are registered at once; tabs other clients open or close there are seen.
        """
        await self.start()
        _check_scheme(endpoint, "cdp")
        browser = await _connect(self._pw().chromium.connect_over_cdp, endpoint, "cdp", timeout)
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        return await self._adopt(
            kind="cdp", endpoint=endpoint, browser=browser, context=context, instance_id=instance_id
        )

    async def connect_ws(
        self, ws_endpoint: str, *, instance_id: str | None = None, timeout: float = 10.0
    ) -> Instance:
        """Connect to a Playwright browser server (the `ws://` URL `playwright launch-server` or
        `run-server` prints, or a grid's or hosted service's Playwright endpoint).

        A Playwright client sees only the browser contexts it creates, so the instance is one new
        context of that browser, with one blank tab to start from. Tabs that other clients open
        on that server live in their own contexts and are not seen; to share tabs with other
        clients, connect over CDP instead. Closing the instance closes its context and
        disconnects, leaving the server's browser running.
        """
        await self.start()
        _check_scheme(ws_endpoint, "playwright")
        browser = await _connect(self._pw().chromium.connect, ws_endpoint, "playwright", timeout)
        try:
            context = await asyncio.wait_for(browser.new_context(), timeout)
        except Exception as exc:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), 5)
            raise ConnectError(
                f"Connected to {ws_endpoint}, but it could not open a browser context: {_first_line(exc)}"
            ) from exc
        instance = await self._adopt(
            kind="playwright-server",
            endpoint=ws_endpoint,
            browser=browser,
            context=context,
            owns_context=True,
            initial_cause="tool",
            instance_id=instance_id,
        )
        # Like a launched browser, usable at once; not an activation, so the default stays.
        await instance.new_tab(background=True)
        return instance

    async def attach_context(
        self,
        context: BrowserContext,
        *,
        owns_context: bool = True,
        endpoint: str | None = None,
        instance_id: str | None = None,
    ) -> Instance:
        """Drive one browser context as an instance of its own (an isolated session's browser)."""
        await self.start()
        return await self._adopt(
            kind="context",
            endpoint=endpoint,
            browser=context.browser,
            context=context,
            owns_context=owns_context,
            initial_cause="tool",
            instance_id=instance_id,
        )

    async def close_instance(self, instance_id: str) -> None:
        """Close an instance: a launched browser exits; a connected one is only disconnected."""
        instance = self.instance(instance_id)
        await instance.close()
        del self._instances[instance.id]
        if self._default_id == instance.id:
            usable = [i.id for i in self._instances.values() if i.state == "open"]
            self._default_id = usable[0] if usable else next(iter(self._instances), None)

    def instance_infos(self) -> list[InstanceInfo]:
        """Every instance this manager holds (lost ones too, until closed), as a listing shows it."""
        self.check_health()
        return [instance.info() for instance in self._instances.values()]

    def check_health(self) -> list[Instance]:
        """Notice launched browsers whose process has exited (no round trip); returns the lost instances."""
        for instance in list(self._instances.values()):
            instance.check_alive()
        return [i for i in self._instances.values() if i.state == "lost"]

    async def ensure_default(self) -> Instance | None:
        """Relaunch the default instance if it is a lost local browser; returns the new instance.

        Call it before work that needs the default instance (a tool call without a tab id). The
        replacement gets a new id, becomes the default, and an `instance_relaunched` event says so.
        A lost connected (remote) default is not reconnected: calls that need it fail with
        InstanceLostError until another instance is chosen, launched or connected.
        """
        self.check_health()
        lost = self.default_instance
        if lost is None or lost.state != "lost" or lost.kind != "launched" or self._closed:
            return None
        replacement = await self.launch(headless=lost.headless, user_data_dir=lost.user_data_dir)
        lost.replaced_by = replacement.id
        self._default_id = replacement.id
        active = replacement.active_tab
        self.events.emit(
            "instance_relaunched",
            None,
            replacement.id,
            replaces=lost.id,
            reason=lost.lost_reason,
            activeTabId=active.id if active else None,
        )
        return replacement

    # -- tabs ------------------------------------------------------------------------------------

    def _open_tabs(self) -> list[Tab]:
        return [tab for instance in self._instances.values() for tab in instance.tabs]

    def tabs(self, instance_id: str | None = None) -> list[TabInfo]:
        """Every open tab (of one instance, if given), from kept state: no browser round trip."""
        if instance_id is not None:
            return self.instance(instance_id).tab_infos()
        return [info for instance in self._instances.values() for info in instance.tab_infos()]

    def tab(self, tab_id: int | str) -> Tab:
        """The open tab with this id (an int, its decimal string, or its full CDP target id).

        Never falls back to another tab: an unknown id raises TabNotFoundError listing open tabs.
        """
        key: int | str = tab_id
        if isinstance(tab_id, str):
            text = tab_id.strip()
            if text.isdigit():
                key = int(text)
            else:
                for instance in self._instances.values():
                    found = instance.tab_for_target(text)
                    if found is not None:
                        return found
                raise TabNotFoundError(tab_id, self._open_tabs())
        elif isinstance(tab_id, bool) or not isinstance(tab_id, int):
            raise TabNotFoundError(repr(tab_id), self._open_tabs(), reason="Tab ids are integers.")
        for instance in self._instances.values():
            found = instance._tabs.get(key)  # type: ignore[arg-type]
            if found is not None:
                return found
        lost = [i for i in self._instances.values() if i.state == "lost"]
        reason = ""
        if lost:
            reason = "Instance " + ", ".join(f"{i.id} was lost ({i.lost_reason})" for i in lost) + "."
        raise TabNotFoundError(key, self._open_tabs(), reason=reason)

    def info(self, tab: Tab) -> TabInfo:
        return tab.instance.info_of(tab)

    def active_tab(self, instance_id: str | None = None) -> Tab:
        instance = self.instance(instance_id)
        instance.ensure_usable()
        tab = instance.active_tab
        if tab is None:
            raise TabNotFoundError(
                "(active)",
                self._open_tabs(),
                reason=f"Instance {instance.id} has no open tab; open one with browser_tabs(action='new').",
            )
        return tab

    def resolve(self, tab_id: int | str | None = None, *, instance_id: str | None = None) -> Tab:
        """`tab_id`'s tab, or the active tab of the (default) instance when it is None."""
        if tab_id is None:
            return self.active_tab(instance_id)
        tab = self.tab(tab_id)
        if instance_id is not None and tab.instance.id != instance_id:
            raise TabNotFoundError(
                tab_id, self.instance(instance_id).tabs, reason=f"It belongs to instance {tab.instance.id}."
            )
        return tab

    async def new_tab(
        self, url: str | None = None, *, background: bool = False, instance_id: str | None = None
    ) -> Tab:
        """Open a tab (activated unless `background`), optionally loading `url`."""
        return await self.instance(instance_id).new_tab(url, background=background)

    async def close_tab(self, tab_id: int | str) -> CloseResult:
        """Close a tab; if it was active, the previously active tab becomes active."""
        tab = self.tab(tab_id)
        instance = tab.instance
        await instance.close_tab(tab)
        active = instance.active_tab
        return CloseResult(tab.id, active.id if active else None)

    async def close_others(self, keep_tab_id: int | str) -> list[int]:
        """Close every tab of the kept tab's instance except it and pinned tabs; returns closed ids."""
        keep = self.tab(keep_tab_id)
        instance = keep.instance
        instance.activate(keep)
        closed: list[int] = []
        for tab in instance.tabs:
            if tab is keep or tab.pinned:
                continue
            await instance.close_tab(tab)
            closed.append(tab.id)
        return closed

    def activate(self, tab_id: int | str) -> Tab:
        tab = self.tab(tab_id)
        tab.instance.activate(tab)
        return tab

    def pin(self, tab_id: int | str, pinned: bool = True) -> Tab:
        """Pinned tabs are kept by close_others and by the tab cap."""
        tab = self.tab(tab_id)
        tab.pinned = pinned
        return tab

    async def refresh(self) -> None:
        """Re-read titles and URLs of all tabs: one round trip per instance, whatever the tab count."""
        await asyncio.gather(*(i.refresh() for i in self._instances.values()))

    async def settle(self, timeout: float = 5.0) -> None:
        """Wait until every tab discovered so far is fully registered and announced."""
        await asyncio.gather(*(i.settle(timeout) for i in self._instances.values()))
