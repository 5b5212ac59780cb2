"""One browser the manager drives, and the registry of its tabs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from playwright.async_api import Browser, BrowserContext, CDPSession, Page

from ._errors import InstanceLostError, LastTabError, TabLimitError
from ._tab import Tab
from ._types import CloseCause, EventType, OpenCause, TabInfo

if TYPE_CHECKING:
    from ._manager import TabManager

InstanceKind = Literal["launched", "cdp", "playwright-server", "context"]
InstanceState = Literal["open", "closing", "closed", "lost"]


def _exit_reason(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            return f"the browser process was killed ({signal.Signals(-returncode).name})"
    return f"the browser process exited (exit code {returncode})"


@dataclass(frozen=True, slots=True)
class InstanceInfo:
    """What a listing shows about an instance."""

    id: str
    kind: InstanceKind
    endpoint: str | None
    state: InstanceState
    lost_reason: str | None
    default: bool
    tab_count: int
    active_tab_id: int | None
    headless: bool
    pid: int | None
    user_data_dir: str | None
    replaced_by: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "endpoint": self.endpoint,
            "health": self.state,
            "lostReason": self.lost_reason,
            "default": self.default,
            "tabCount": self.tab_count,
            "activeTabId": self.active_tab_id,
            "headless": self.headless,
            "pid": self.pid,
            "userDataDir": self.user_data_dir,
            "replacedBy": self.replaced_by,
        }

    def describe(self) -> str:
        """One line for the model."""
        where = f" {self.endpoint}" if self.endpoint else ""
        health = f"LOST ({self.lost_reason})" if self.state == "lost" else self.state
        default = ", default" if self.default else ""
        pid = f", pid {self.pid}" if self.pid else ""
        replaced = f", replaced by {self.replaced_by}" if self.replaced_by else ""
        return f"{self.id}: {self.kind}{where}, {self.tab_count} tabs, {health}{default}{pid}{replaced}"


class Instance:
    """A browser (or one isolated context of one) and the tabs in it.

    The tab list is kept current by events (Playwright's `page`/`close` events and CDP
    Target events), so reading it never costs a round trip per tab.
    """

    def __init__(
        self,
        manager: TabManager,
        instance_id: str,
        *,
        kind: InstanceKind,
        endpoint: str | None,
        browser: Browser | None,
        context: BrowserContext,
        process: subprocess.Popen[bytes] | None = None,
        profile_dir: str | None = None,
        owns_context: bool = False,
        headless: bool = True,
    ) -> None:
        self.manager = manager
        self.id = instance_id
        self.kind: InstanceKind = kind
        self.endpoint = endpoint
        self.browser = browser
        self.context = context
        self.headless = headless
        self.state: InstanceState = "open"
        self.lost_reason: str | None = None
        self.user_data_dir: str | None = None
        """The profile directory a launched browser was given (None: a temporary, isolated one)."""
        self.replaced_by: str | None = None
        """The instance launched in place of this one after it was lost."""
        self._process = process
        self._profile_dir = profile_dir
        self._owns_context = owns_context
        self._tabs: dict[int, Tab] = {}
        self._by_page: dict[Page, Tab] = {}
        self._by_target: dict[str, Tab] = {}
        self._target_titles: dict[str, str] = {}
        self._mru: list[int] = []
        self._pending: set[asyncio.Task[None]] = set()
        self._detaching: set[asyncio.Task[None]] = set()
        self._creating: int = 0
        self._cdp: CDPSession | None = None
        self._disposers: list[Callable[[], None]] = []

    def __repr__(self) -> str:
        return f"<Instance {self.id} {self.kind} tabs={len(self._tabs)}>"

    # -- reading state -------------------------------------------------------------------------

    @property
    def tabs(self) -> list[Tab]:
        """Open tabs in discovery order."""
        return list(self._tabs.values())

    @property
    def active_tab(self) -> Tab | None:
        return self._tabs[self._mru[-1]] if self._mru else None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def info(self) -> InstanceInfo:
        """This instance as a listing shows it (kept state, no browser round trip)."""
        default = self.manager.default_instance
        active = self.active_tab
        return InstanceInfo(
            id=self.id,
            kind=self.kind,
            endpoint=self.endpoint,
            state=self.state,
            lost_reason=self.lost_reason,
            default=default is self,
            tab_count=len(self._tabs),
            active_tab_id=active.id if active else None,
            headless=self.headless,
            pid=self.pid,
            user_data_dir=self.user_data_dir,
            replaced_by=self.replaced_by,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.info().to_dict()

    def tab_infos(self) -> list[TabInfo]:
        active = self._mru[-1] if self._mru else None
        return [self._info(tab, index, active) for index, tab in enumerate(self._tabs.values())]

    def info_of(self, tab: Tab) -> TabInfo:
        active = self._mru[-1] if self._mru else None
        index = list(self._tabs).index(tab.id) if tab.id in self._tabs else -1
        return self._info(tab, index, active)

    def _info(self, tab: Tab, index: int, active: int | None) -> TabInfo:
        return TabInfo(
            id=tab.id,
            instance_id=self.id,
            url=tab.url,
            title=tab.title,
            active=tab.id == active,
            index=index,
            window_id=tab.window_id,
            pinned=tab.pinned,
            opener_id=tab.opener_id,
            status=tab.status,
            dialog=tab.dialog,
            target_id=tab.target_id,
        )

    def tab_for_page(self, page: Page) -> Tab | None:
        return self._by_page.get(page)

    def tab_for_target(self, target_id: str) -> Tab | None:
        return self._by_target.get(target_id) or self._by_target.get(target_id.upper())

    def ensure_usable(self) -> None:
        if self.state == "lost":
            raise InstanceLostError(
                f"Instance {self.id} was lost ({self.lost_reason}). Its tabs are gone. Launch or connect "
                "another instance with browser_instance, or use a tab of another instance.",
                instance_id=self.id,
            )
        if self.state != "open":
            raise InstanceLostError(
                f"Instance {self.id} is closed. Use browser_instance(action='list') to see open instances.",
                instance_id=self.id,
            )

    # -- start and stop ------------------------------------------------------------------------

    def _on(self, emitter: Any, event: str, handler: Callable[..., Any]) -> None:
        emitter.on(event, handler)

        def dispose() -> None:
            with contextlib.suppress(Exception):
                emitter.remove_listener(event, handler)

        self._disposers.append(dispose)

    async def _start(self, *, initial_cause: OpenCause) -> None:
        self._on(self.context, "page", self._on_page)
        # Only an isolated context can be closed on its own; for the others the browser went away.
        lost_with_context = (
            "its browser context was closed" if self.kind == "context" else "the browser disconnected"
        )
        self._on(self.context, "close", lambda _ctx: self._lost(lost_with_context))
        if self.browser is not None:
            self._on(self.browser, "disconnected", lambda _b: self._lost("the browser disconnected"))
            with contextlib.suppress(Exception):
                self._cdp = await self.browser.new_browser_cdp_session()
                self._cdp.on("Target.targetInfoChanged", self._on_target_info)
                self._cdp.on("Target.targetCreated", self._on_target_info)
                await self._cdp.send("Target.setDiscoverTargets", {"discover": True})
        for hook in self.manager._context_hooks:
            self._disposers.append(hook(self.context, self.manager.tab_id_for_page))
        for page in list(self.context.pages):
            self._register(page, cause=initial_cause, preexisting=True)
        await self.settle()
        if self._tabs and not self._mru:
            self._mru.append(next(iter(self._tabs)))

    async def close(self) -> None:
        """Close what this instance owns: the browser it launched or the context it created.

        A browser it only connected to keeps running; the connection is dropped.
        """
        if self.state in ("closing", "closed"):
            return
        was_lost = self.state == "lost"
        self.state = "closing"
        for tab in self.tabs:
            self._tab_gone(tab, "tool")
        self._dispose()
        for task in self._pending:
            task.cancel()
        if not was_lost:
            with contextlib.suppress(Exception):
                if self._owns_context:
                    await asyncio.wait_for(self.context.close(), 10)
                if self.browser is not None and self.kind != "context":
                    await asyncio.wait_for(self.browser.close(), 10)
        self._stop_process()
        self.state = "closed"

    def _dispose(self) -> None:
        disposers, self._disposers = self._disposers, []
        for dispose in disposers:
            with contextlib.suppress(Exception):
                dispose()
        if self._cdp is not None:
            with contextlib.suppress(Exception):
                self._cdp.remove_listener("Target.targetInfoChanged", self._on_target_info)
                self._cdp.remove_listener("Target.targetCreated", self._on_target_info)
            self._cdp = None

    def _stop_process(self) -> None:
        proc, self._process = self._process, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(5)
        if proc is not None:
            # A browser killed from outside can leave its helper processes (same group) behind.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            self.manager._forget_process(proc)
        if self._profile_dir:
            shutil.rmtree(self._profile_dir, ignore_errors=True)
            self._profile_dir = None

    def check_alive(self) -> bool:
        """Notice at once that a launched browser's process has exited, without a browser round trip.

        Playwright reports a dead browser within ~100 ms, but a call may come in between.
        """
        if self.state == "open" and self._process is not None and self._process.poll() is not None:
            self._lost(_exit_reason(self._process.returncode))
        return self.state == "open"

    def _lost(self, reason: str) -> None:
        if self.state != "open":
            return
        if self._process is not None:
            # The connection drops a few ms before the killed process is reaped; a short wait
            # lets the reason say what happened to it.
            with contextlib.suppress(subprocess.TimeoutExpired):
                reason = _exit_reason(self._process.wait(0.2))
        self.state = "lost"
        self.lost_reason = reason
        for tab in self.tabs:
            self._tab_gone(tab, "crash")
        self._dispose()
        self._emit("instance_lost", None, reason=reason)
        self._stop_process()

    async def refresh(self) -> None:
        """Bring every tab's title and URL up to date in one browser round trip (not one per tab)."""
        if self._cdp is None or self.state != "open":
            return
        with contextlib.suppress(Exception):
            targets = await asyncio.wait_for(self._cdp.send("Target.getTargets"), 5)
            for info in targets["targetInfos"]:
                self._on_target_info({"targetInfo": info})

    async def settle(self, timeout: float = 5.0) -> None:
        """Wait until every tab discovered so far is fully registered (target id, opener, cause)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._pending:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            await asyncio.wait(set(self._pending), timeout=left)

    # -- events --------------------------------------------------------------------------------

    def _emit(self, type: EventType, tab_id: int | None, **data: Any) -> None:
        self.manager.events.emit(type, tab_id, self.id, **data)

    def _on_target_info(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        if info.get("type") != "page":
            return
        target_id = info.get("targetId", "")
        title = info.get("title", "")
        self._target_titles[target_id] = title
        tab = self._by_target.get(target_id)
        if tab is not None and title:
            tab._title = title

    def _on_page(self, page: Page) -> None:
        self._register(page, cause="tool" if self._creating else None)

    def _register(self, page: Page, *, cause: OpenCause | None, preexisting: bool = False) -> Tab | None:
        """Give a page its tab id at once (synchronously), then learn the rest in the background."""
        if self.state != "open":
            return None
        tab = self._by_page.get(page)
        if tab is not None:
            return tab
        if page.is_closed():
            return None
        # Playwright knows the opener locally (no round trip); match it by its implementation object.
        opener_impl = getattr(page._impl_obj, "_opener", None)
        opener_tab = None
        if opener_impl is not None:
            opener_tab = next((t for t in self._tabs.values() if t.page._impl_obj is opener_impl), None)
        tab = Tab(
            self.manager._next_tab_id(),
            self,
            page,
            opener_id=opener_tab.id if opener_tab else None,
            cause=cause or "external",
        )
        tab._cause_known = cause is not None  # type: ignore[attr-defined]
        self._tabs[tab.id] = tab
        self._by_page[page] = tab
        tab._attach()
        for hook in self.manager._page_hooks:
            tab._disposers.append(hook(page, tab.id))
        task = asyncio.get_running_loop().create_task(self._enrich(tab, preexisting=preexisting))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return tab

    async def _enrich(self, tab: Tab, *, preexisting: bool) -> None:
        info: dict[str, Any] = {}
        try:
            session = await self.context.new_cdp_session(tab.page)
            try:
                # One round trip for all questions (they are independent), not one after another.
                asks = [session.send("Target.getTargetInfo"), session.send("Browser.getWindowForTarget")]
                if preexisting:
                    ready = {"expression": "document.readyState", "returnByValue": True}
                    asks.append(asyncio.wait_for(session.send("Runtime.evaluate", ready), 1.0))
                target, window, *state = await asyncio.gather(*asks, return_exceptions=True)
                if isinstance(target, BaseException):
                    raise target
                info = target["targetInfo"]
                if not isinstance(window, BaseException):
                    tab.window_id = window["windowId"]
                if (
                    state
                    and not isinstance(state[0], BaseException)
                    and state[0]["result"].get("value") == "complete"
                ):
                    tab.status = "complete"
            finally:
                # Nothing waits for the detach: the tab is known once the answers are in.
                detach = asyncio.get_running_loop().create_task(session.detach())
                self._detaching.add(detach)
                detach.add_done_callback(self._detached)
        except Exception:
            pass  # the page closed while we asked; _tab_gone has it (or will)
        if info:
            tab.target_id = info["targetId"]
            self._by_target[tab.target_id] = tab
            if not tab._title:  # a title fetched on load is newer than the target's cached one
                tab._title = self._target_titles.get(tab.target_id, info.get("title", ""))
            if tab.opener_id is None and info.get("openerId"):
                opener = self._by_target.get(info["openerId"])
                tab.opener_id = opener.id if opener else None
            if not tab._cause_known:  # type: ignore[attr-defined]
                if info.get("openerId"):
                    # window.open keeps a handle on its opener; target=_blank links are noopener by default.
                    tab.cause = "popup" if info.get("canAccessOpener") else "link"
                else:
                    tab.cause = "external"
        self._announce(tab)
        if tab.closed or self.state != "open":
            return
        if tab.cause != "tool" and not preexisting:
            await self._enforce_cap(tab)
            if not tab.closed and self.manager.follow_new_tabs:
                self.activate(tab)
        if (preexisting or tab.cause != "tool") and tab.id not in self._mru and not tab.closed:
            # Opened by a page or another client: tracked, not activated. Least recent in MRU order.
            self._mru.insert(0, tab.id)

    def _detached(self, task: asyncio.Task[None]) -> None:
        self._detaching.discard(task)
        if not task.cancelled():
            task.exception()  # a page that closed meanwhile: its session is gone anyway

    def _announce(self, tab: Tab) -> None:
        if getattr(tab, "_announced", False):
            return
        tab._announced = True  # type: ignore[attr-defined]
        self._emit("tab_opened", tab.id, openerId=tab.opener_id, url=tab.url, cause=tab.cause)

    def _tab_gone(self, tab: Tab, cause: CloseCause | None) -> None:
        """Forget a tab at once; promote the previously active tab if it was active."""
        if tab.closed or tab.id not in self._tabs:
            tab.closed = True
            return
        self._announce(tab)
        tab._dispose()
        del self._tabs[tab.id]
        self._by_page.pop(tab.page, None)
        if tab.target_id:
            self._by_target.pop(tab.target_id, None)
        was_active = bool(self._mru) and self._mru[-1] == tab.id
        if tab.id in self._mru:
            self._mru.remove(tab.id)
        if self.state == "open" and was_active and not self._mru and self._tabs:
            self._mru.append(next(reversed(self._tabs)))
        if cause is None:
            cause = getattr(tab, "_close_cause", None)
        if cause is None and self._cdp is not None and self.state == "open":
            # A dying browser reports its pages closed ~40 ms before itself: ask the browser whether
            # it is still there before calling this close the page's or another client's doing.
            # The tab is out of the registry already; settle() waits for the report.
            task = asyncio.get_running_loop().create_task(self._report_unexplained_close(tab, was_active))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            return
        if cause is None:
            cause = self._unexplained_close_cause(tab)
        self._report_close(tab, cause, was_active)

    @staticmethod
    def _unexplained_close_cause(tab: Tab) -> CloseCause:
        # Only script-opened windows may close themselves, so a tab with an opener closed itself.
        return "page" if tab.opener_id is not None or tab.cause in ("link", "popup") else "external"

    async def _report_unexplained_close(self, tab: Tab, was_active: bool) -> None:
        cdp = self._cdp
        cause = self._unexplained_close_cause(tab)
        try:
            if cdp is not None:
                await asyncio.wait_for(cdp.send("Browser.getVersion"), 2.0)
        except TimeoutError:
            pass  # a browser too busy to answer in 2 s is not declared lost on that alone
        except Exception:
            self._lost("the browser disconnected")  # the connection is gone
        finally:
            # Reported exactly once, also when cancelled because the instance is being closed.
            self._report_close(tab, "crash" if self.state == "lost" else cause, was_active)

    def _report_close(self, tab: Tab, cause: CloseCause, was_active: bool) -> None:
        tab.closed = True
        new_active = self._mru[-1] if self._mru and self.state == "open" else None
        self._emit(
            "tab_closed",
            tab.id,
            by=cause,
            activeTabId=new_active,
            activeChanged=was_active,
            url=tab.url,
        )
        if was_active and new_active is not None and self.state == "open":
            self._emit("tab_activated", new_active, previousTabId=tab.id, reason="promoted")

    # -- actions -------------------------------------------------------------------------------

    def activate(self, tab: Tab) -> bool:
        """Make `tab` the active tab; returns whether it changed."""
        tab.ensure_open()
        previous = self._mru[-1] if self._mru else None
        if tab.id in self._mru:
            self._mru.remove(tab.id)
        self._mru.append(tab.id)
        self.manager._note_activation(self)
        if previous == tab.id:
            return False
        self._emit("tab_activated", tab.id, previousTabId=previous, reason="activated")
        # Headless Chromium has no focus to move; in a headed browser this raises the tab.
        if not self.headless:
            task = asyncio.get_running_loop().create_task(tab.page.bring_to_front())
            task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        return True

    async def new_tab(self, url: str | None = None, *, background: bool = False) -> Tab:
        self.ensure_usable()
        if len(self._tabs) >= self.manager.max_tabs:
            victim = self._cap_victim(exclude=None)
            if self.manager.tab_limit_policy == "close-oldest" and victim is not None:
                await self.close_tab(victim, cause="cap")
            else:
                raise TabLimitError(
                    f"Cannot open a new tab: instance {self.id} has {len(self._tabs)} tabs, the limit "
                    f"(--max-tabs {self.manager.max_tabs}, policy {self.manager.tab_limit_policy}). "
                    "Close tabs you no longer need (browser_tabs action=close or close_others), then retry.",
                )
        self._creating += 1
        try:
            page = await self.context.new_page()
        finally:
            self._creating -= 1
        tab = self._register(page, cause="tool")
        assert tab is not None
        # new_page returns once its about:blank is ready, and no load event follows for it.
        tab.status = "complete"
        await self.settle()
        if not background:
            self.activate(tab)
        elif tab.id not in self._mru:
            self._mru.insert(0, tab.id)
        if url:
            await tab.page.goto(url)
        return tab

    async def close_tab(self, tab: Tab, *, cause: CloseCause = "tool", force: bool = False) -> None:
        tab.ensure_open()
        if not force and len(self._tabs) <= 1:
            raise LastTabError(
                f"Cannot close last tab: tab {tab.id} is the only tab of instance {self.id}. Open another "
                "tab first (browser_tabs action=new), or close the instance.",
                tab_id=tab.id,
            )
        tab._close_cause = cause  # type: ignore[attr-defined]
        try:
            await asyncio.wait_for(tab.page.close(), 10)
        except Exception:
            if self._cdp is not None and tab.target_id:
                with contextlib.suppress(Exception):
                    await self._cdp.send("Target.closeTarget", {"targetId": tab.target_id})
        self._tab_gone(tab, cause)

    def _cap_victim(self, *, exclude: Tab | None) -> Tab | None:
        active = self._mru[-1] if self._mru else None
        order = [self._tabs[i] for i in self._mru if i in self._tabs]
        order += [t for t in self._tabs.values() if t.id not in self._mru]
        order.sort(key=lambda t: self._mru.index(t.id) if t.id in self._mru else -1)
        for tab in order:
            if tab.pinned or tab.id == active or tab is exclude:
                continue
            return tab
        return None

    async def _enforce_cap(self, new_tab: Tab) -> None:
        if len(self._tabs) <= self.manager.max_tabs:
            return
        victim = None
        if self.manager.tab_limit_policy == "close-oldest":
            victim = self._cap_victim(exclude=new_tab)
        await self.close_tab(victim or new_tab, cause="cap", force=True)
