"""One browser (or one isolated context of one) and the tabs in it.

The tab list is kept current by browser events, never by a round trip per tab: Chromium's
`Target.targetCreated` (on a browser-level CDP session) registers a tab the moment its target
exists, with its opener and the cause that opened it; `targetInfoChanged` keeps url and title,
`targetDestroyed` removes it. Playwright reports the page a little later; the instance then binds
it to its tab (one round trip names the page's target) and announces the tab (`tab_opened`).

The instance gets what it needs from its manager as `InstanceServices` (next tab id, the event
bus, the tab rules, ...) and never reaches back into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ._cdp import TargetSession, TargetSessions
from ._errors import InstanceLostError, LastTabError, TabLike, TabLimitError
from ._navigation import navigate
from ._policy import UrlPolicy
from ._pw import BrowserHandle, CdpSession, ContextHandle, Disposer, Doing, PageHandle, map_playwright_errors
from ._registry import TabRegistry
from ._tab import Tab, Timeouts
from ._types import (
    CloseCause,
    DialogInfo,
    EventType,
    InstanceInfo,
    InstanceKind,
    InstanceState,
    OpenCause,
    TabInfo,
    TabLimitPolicy,
)
from ._watch import ActionWatch

TargetHook = Callable[[TargetSession, Tab], Disposer]
"""Called with the session of each new tab's target and the tab; returns its disposer."""

ANNOUNCE_TIMEOUT = 3.0
"""Seconds after which a tab Playwright has not reported is announced anyway (from its target)."""
SETTLE_TIMEOUT = 5.0


@dataclass(slots=True)
class TabRules:
    """The manager's tab rules, shared by reference with its instances (a change applies at once)."""

    max_tabs: int = 20
    tab_limit_policy: TabLimitPolicy = "reject"
    follow_new_tabs: bool = False


@dataclass(frozen=True, slots=True)
class InstanceServices:
    """What an instance needs of its manager."""

    next_tab_id: Callable[[], int]
    emit: Callable[..., object]
    """`emit(type, tab_id, instance_id, **data)`: the manager's event bus."""
    activated: Callable[[str], None]
    """A tab of this instance (id given) was activated: it becomes the default instance."""
    is_default: Callable[[str], bool]
    all_open_tabs: Callable[[], Sequence[TabLike]]
    rules: TabRules
    timeouts: Timeouts
    policy: UrlPolicy
    target_hooks: Sequence[TargetHook]


def _pid_alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not) without being its parent."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


class Instance:
    """A browser context and its tabs; see the module docstring."""

    def __init__(
        self,
        instance_id: str,
        services: InstanceServices,
        *,
        kind: InstanceKind,
        endpoint: str | None,
        browser: BrowserHandle | None,
        context: ContextHandle,
        headless: bool = True,
        owns_context: bool = False,
        temp_profile: str | None = None,
        user_data_dir: str | None = None,
    ) -> None:
        self.id = instance_id
        self.kind: InstanceKind = kind
        self.endpoint = endpoint
        self.browser = browser
        self.context = context
        self.headless = headless
        self.user_data_dir = user_data_dir
        """The profile directory a launched browser was given (None: a temporary, isolated one)."""
        self.state: InstanceState = "open"
        self.lost_reason: str | None = None
        self.replaced_by: str | None = None
        """The instance launched in place of this one after it was lost."""
        self.pid: int | None = None
        self._services = services
        self._owns_context = owns_context
        self._temp_profile = temp_profile
        self._registry = TabRegistry(instance_id)
        self._context_id: str | None = None
        self._pending_targets: OrderedDict[str, dict[str, Any]] = OrderedDict()
        """Page targets seen before this instance knew its browser context: maybe not its own."""
        self._gone_targets: OrderedDict[str, None] = OrderedDict()
        self._binding: dict[PageHandle, asyncio.Task[Tab | None]] = {}
        self._announced: set[int] = set()
        self._follow: set[int] = set()
        self._watches: list[ActionWatch] = []
        self._hook_sessions: dict[int, TargetSession] = {}
        self._creating = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._changed = asyncio.Event()
        self._cdp: CdpSession | None = None
        self._sessions: TargetSessions | None = None
        self._disposers: list[Disposer] = []

    def __repr__(self) -> str:
        return f"<Instance {self.id} {self.kind} tabs={len(self._registry)}>"

    # -- reading state -------------------------------------------------------------------------

    @property
    def tabs(self) -> list[Tab]:
        """Open tabs in discovery order."""
        return self._registry.tabs

    @property
    def active_tab(self) -> Tab | None:
        return self._registry.active

    def get_tab(self, tab_id: int) -> Tab | None:
        return self._registry.get(tab_id)

    def tab_for_target(self, target_id: str) -> Tab | None:
        return self._registry.by_target(target_id)

    def tab_infos(self) -> list[TabInfo]:
        return self._registry.infos()

    def info_of(self, tab: Tab) -> TabInfo:
        return self._registry.info(tab)

    def info(self) -> InstanceInfo:
        """This instance as a listing shows it (kept state, no browser round trip)."""
        active = self.active_tab
        return InstanceInfo(
            id=self.id,
            kind=self.kind,
            endpoint=self.endpoint,
            state=self.state,
            lost_reason=self.lost_reason,
            default=self._services.is_default(self.id),
            tab_count=len(self._registry),
            active_tab_id=active.id if active else None,
            headless=self.headless,
            pid=self.pid,
            user_data_dir=self.user_data_dir,
            replaced_by=self.replaced_by,
        )

    def ensure_usable(self) -> None:
        if self.state == "lost":
            raise InstanceLostError(
                f"Instance {self.id} was lost ({self.lost_reason}). Its tabs are gone.",
                "Launch or connect another instance, or use a tab of another instance.",
                instance_id=self.id,
                lost_reason=self.lost_reason,
            )
        if self.state != "open":
            raise InstanceLostError(
                f"Instance {self.id} is closed.", "List the instances to see the open ones.", instance_id=self.id
            )

    # -- TabHost: what the tabs use ----------------------------------------------------------------

    @property
    def instance_id(self) -> str:
        return self.id

    @property
    def timeouts(self) -> Timeouts:
        return self._services.timeouts

    @property
    def policy(self) -> UrlPolicy:
        return self._services.policy

    @property
    def renders_in_background(self) -> bool:
        # Headless, nobody sees a tab brought to front; in a browser someone may be looking at
        # (headed, or connected over CDP) the tab is left where it is.
        return self.headless and self.kind != "cdp"

    def emit(self, type: EventType, tab_id: int | None, **data: Any) -> None:
        self._services.emit(type, tab_id, self.id, **data)

    def open_tabs(self) -> Sequence[TabLike]:
        return self._services.all_open_tabs()

    def dialog_opened(self, tab: Tab, dialog: DialogInfo) -> None:
        self.emit(
            "dialog_opened", tab.id, dialogType=dialog.type, message=dialog.message, defaultValue=dialog.default_value
        )
        for watch in self._watches:
            if watch.tab is tab:
                watch.dialog_opened()

    def page_closed(self, tab: Tab) -> None:
        self._tab_gone(tab, None)

    def activate_tab(self, tab_id: int) -> bool:
        tab = self._registry.get(tab_id)
        if tab is None:
            return False
        self.activate(tab)
        return True

    @contextlib.contextmanager
    def watch(self, tab: Tab) -> Iterator[ActionWatch]:
        watch = ActionWatch(tab, settle=self.settle, is_open=lambda tab_id: self._registry.get(tab_id) is not None)
        self._watches.append(watch)
        try:
            yield watch
        finally:
            self._watches.remove(watch)

    def check_alive(self) -> bool:
        """Notice at once that a launched browser's process has gone, without a browser round trip."""
        if self.state == "open" and self.kind == "launched" and self.pid is not None and not _pid_alive(self.pid):
            self._lost(self._gone_reason())
        return self.state == "open"

    # -- start and stop ------------------------------------------------------------------------

    async def start(self, *, initial_cause: OpenCause) -> None:
        context = self.context
        self._disposers.append(context.on_page(self._on_page))
        lost_with_context = "its browser context was closed" if self.kind == "context" else "the browser disconnected"
        self._disposers.append(context.on_close(lambda: self._lost(lost_with_context)))
        if self.browser is not None:
            self._disposers.append(self.browser.on_disconnected(lambda: self._lost(self._gone_reason())))
            cdp = self._cdp = await self.browser.new_cdp_session()
            self._sessions = TargetSessions(cdp)
            for event, handler in (
                ("Target.targetCreated", self._on_target_created),
                ("Target.targetInfoChanged", self._on_target_info),
                ("Target.targetDestroyed", self._on_target_destroyed),
                ("Target.targetCrashed", self._on_target_crashed),
            ):
                self._disposers.append(cdp.on(event, handler))
            await cdp.send("Target.setDiscoverTargets", {"discover": True})
            if self.kind == "launched":
                with contextlib.suppress(Exception):
                    processes = (await cdp.send("SystemInfo.getProcessInfo"))["processInfo"]
                    self.pid = next(p["id"] for p in processes if p["type"] == "browser")
        if self.policy.restricts:
            # Pages start navigations too (links, scripts, popups): hold them to the same policy.
            undo = await context.route_navigations(self.policy.allows)

            def unroute() -> None:
                self._spawn(undo())

            self._disposers.append(unroute)
        pages = context.pages
        found = await asyncio.gather(*(self._identify(page, preexisting=True) for page in pages))
        for page, identified in zip(pages, found, strict=True):
            if identified is None:
                continue
            info, window_id, complete = identified
            self._learn_context(info, adopt=False)
            tab = self._registry.by_target(info["targetId"]) or self._create_tab(
                info, cause=initial_cause, preexisting=True
            )
            if tab is not None and not tab.closed:
                self._bind(tab, page, window_id, complete)
        self._adopt_pending()
        await self.settle()
        self._registry.ensure_active()

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
        for task in list(self._tasks):
            task.cancel()
        if not was_lost:
            with contextlib.suppress(Exception):
                if self._owns_context:
                    await asyncio.wait_for(self.context.close(), 10)
                if self.browser is not None and self.kind != "context":
                    await asyncio.wait_for(self.browser.close(), 10)
        self._remove_profile()
        self.state = "closed"

    def _dispose(self) -> None:
        disposers, self._disposers = self._disposers, []
        for dispose in disposers:
            with contextlib.suppress(Exception):
                dispose()
        if self._sessions is not None:
            self._sessions.close()
        self._cdp = None

    def _remove_profile(self) -> None:
        if self._temp_profile is not None:
            shutil.rmtree(self._temp_profile, ignore_errors=True)
            self._temp_profile = None

    def _gone_reason(self) -> str:
        if self.kind == "launched" and self.pid is not None and not _pid_alive(self.pid):
            return f"the browser process (pid {self.pid}) ended: it was killed or crashed"
        return "the browser disconnected"

    def _lost(self, reason: str) -> None:
        if self.state != "open":
            return
        self.state = "lost"
        self.lost_reason = reason
        for tab in self.tabs:
            self._tab_gone(tab, "crash")
        self._dispose()
        self.emit("instance_lost", None, reason=reason)
        if self.kind == "launched":
            self._remove_profile()  # the browser that used it is gone

    # -- background work -----------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            self._changed.set()
            if not finished.cancelled():
                finished.exception()  # a page that closed meanwhile: nothing to report

        task.add_done_callback(done)
        return task

    def _busy(self) -> bool:
        return bool(self._tasks) or any(t.id not in self._announced for t in self._registry.tabs)

    async def settle(self, timeout: float = SETTLE_TIMEOUT) -> None:
        """Wait until every tab discovered so far is ready and announced, and every close reported."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._busy() and self.state == "open":
            left = deadline - loop.time()
            if left <= 0:
                return
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def refresh(self) -> None:
        """Bring every tab's title and URL up to date in one browser round trip (not one per tab)."""
        if self._cdp is None or self.state != "open":
            return
        with contextlib.suppress(Exception):
            targets = await asyncio.wait_for(self._cdp.send("Target.getTargets"), 5)
            for info in targets["targetInfos"]:
                self._on_target_info({"targetInfo": info})

    # -- targets: the source of truth for which tabs exist ---------------------------------------

    def _learn_context(self, info: dict[str, Any], *, adopt: bool = True) -> None:
        if self._context_id is None and info.get("browserContextId"):
            self._context_id = info["browserContextId"]
            if adopt:
                self._adopt_pending()

    def _adopt_pending(self) -> None:
        pending, self._pending_targets = self._pending_targets, OrderedDict()
        for info in pending.values():
            if info.get("browserContextId") == self._context_id and self._registry.by_target(info["targetId"]) is None:
                self._create_tab(info, cause=None)

    @staticmethod
    def _is_tab_target(info: dict[str, Any]) -> bool:
        # Prerendered pages and other page-like targets carry a subtype; they are no tabs.
        return info.get("type") == "page" and not info.get("subtype")

    def _on_target_created(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        if self.state != "open" or not self._is_tab_target(info):
            return
        target_id = info.get("targetId", "")
        if self._registry.by_target(target_id) is not None or target_id in self._gone_targets:
            return
        if self._context_id is None:
            self._pending_targets[target_id] = info
        elif info.get("browserContextId") == self._context_id:
            self._create_tab(info, cause=None)

    def _on_target_info(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        target_id = info.get("targetId", "")
        if target_id in self._pending_targets:
            self._pending_targets[target_id] = info
        tab = self._registry.by_target(target_id)
        if tab is not None:
            tab.update_from_target(url=info.get("url", ""), title=info.get("title", ""))

    def _on_target_destroyed(self, event: dict[str, Any]) -> None:
        target_id = event.get("targetId", "")
        self._pending_targets.pop(target_id, None)
        tab = self._registry.by_target(target_id)
        if tab is not None:
            self._tab_gone(tab, None)

    def _on_target_crashed(self, event: dict[str, Any]) -> None:
        tab = self._registry.by_target(event.get("targetId", ""))
        if tab is not None:
            tab.mark_crashed()

    def _create_tab(self, info: dict[str, Any], *, cause: OpenCause | None, preexisting: bool = False) -> Tab | None:
        """Register a tab for a page target of this instance at once, and attach to it."""
        opener = self._registry.by_target(info.get("openerId") or "")
        if cause is None:
            if info.get("openerId"):
                # window.open keeps a handle on its opener; target=_blank links are noopener by default.
                cause = "popup" if info.get("canAccessOpener") else "link"
            else:
                cause = "tool" if self._creating else "external"
        watches = [w for w in self._watches if opener is not None and w.tab is opener]
        if opener is None and cause == "external" and len(self._watches) == 1 and not preexisting:
            # A middle or modifier click opens its tab with no opener (noopener); it appeared while
            # the only action under way here ran: it is that action's.
            watches = list(self._watches)
            opener = self._registry.get(watches[0].tab.id)
            cause = "link"
        tab = Tab(
            self._services.next_tab_id(),
            self,
            target_id=info.get("targetId"),
            opener_id=opener.id if opener is not None else None,
            cause=cause,
            url=info.get("url", ""),
            title=info.get("title", ""),
        )
        self._registry.add(tab)
        self._changed.set()
        for watch in watches:
            watch.tab_created(tab.id)
        if preexisting or cause != "tool":
            self._registry.track_in_background(tab)  # tracked, not activated: the agent decides
        self._attach_hooks(tab)
        if cause != "tool" and not preexisting:
            if self._enforce_cap(tab):
                return None
            if self._services.rules.follow_new_tabs:
                self._follow.add(tab.id)
        asyncio.get_running_loop().call_later(ANNOUNCE_TIMEOUT, self._announce, tab)
        return tab

    def _attach_hooks(self, tab: Tab) -> None:
        """Attach the target hooks (telemetry) at once: the attach and their first commands leave
        together, before the page can start loading."""
        sessions, hooks, target_id = self._sessions, self._services.target_hooks, tab.target_id
        if sessions is None or not hooks or target_id is None:
            return
        session = sessions.attach(target_id)
        for hook in list(hooks):
            tab.add_disposer(hook(session, tab))
        self._hook_sessions[tab.id] = session

        def forget() -> None:
            self._hook_sessions.pop(tab.id, None)

        tab.add_disposer(forget)

    def _enforce_cap(self, new_tab: Tab) -> bool:
        """Close a tab at once when a page-opened one goes over the cap; True if it was `new_tab`."""
        rules = self._services.rules
        if len(self._registry) <= rules.max_tabs:
            return False
        victim = self._registry.cap_victim(exclude=new_tab) if rules.tab_limit_policy == "close-oldest" else None
        victim = victim or new_tab
        victim.closing_cause = "cap"
        self._close_target(victim)
        self._tab_gone(victim, "cap")
        return victim is new_tab

    def _close_target(self, tab: Tab) -> None:
        if self._cdp is not None and tab.target_id:
            self._spawn(self._cdp.send("Target.closeTarget", {"targetId": tab.target_id}))

    # -- pages: Playwright's side of a tab ----------------------------------------------------------

    async def _identify(
        self, page: PageHandle, *, preexisting: bool = False
    ) -> tuple[dict[str, Any], int | None, bool] | None:
        """A page's target info, window and (for pages that were already there) whether it has loaded."""
        try:
            session = await self.context.new_cdp_session(page)
        except Exception:
            return None  # closed meanwhile; its target's destruction reports it
        try:
            asks: list[Any] = [session.send("Target.getTargetInfo"), session.send("Browser.getWindowForTarget")]
            if preexisting:
                ready = {"expression": "document.readyState", "returnByValue": True}
                asks.append(asyncio.wait_for(session.send("Runtime.evaluate", ready), 1.0))
            target, window, *state = await asyncio.gather(*asks, return_exceptions=True)
        finally:
            self._spawn(session.detach())
        if isinstance(target, BaseException):
            return None
        window_id = None if isinstance(window, BaseException) else window.get("windowId")
        complete = bool(state) and not isinstance(state[0], BaseException) and state[0]["result"].get("value") == "complete"
        return target["targetInfo"], window_id, complete

    def _on_page(self, page: PageHandle) -> None:
        if self.state == "open":
            self._bind_task(page)

    def _bind_task(self, page: PageHandle) -> asyncio.Task[Tab | None]:
        task = self._binding.get(page)
        if task is None:
            task = self._binding[page] = self._spawn(self._bind_page(page))
            task.add_done_callback(lambda _t: self._binding.pop(page, None))
        return task

    async def _bind_page(self, page: PageHandle) -> Tab | None:
        identified = await self._identify(page)
        if identified is None or self.state != "open":
            return None
        info, window_id, complete = identified
        self._learn_context(info)
        target_id = info.get("targetId", "")
        tab = self._registry.by_target(target_id)
        if tab is None:
            if target_id in self._gone_targets or info.get("browserContextId") != self._context_id:
                return None
            tab = self._create_tab(info, cause=None)
        if tab is None or tab.closed:
            return None
        self._bind(tab, page, window_id, complete)
        return tab

    def _bind(self, tab: Tab, page: PageHandle, window_id: int | None, complete: bool) -> None:
        tab.bind(page, window_id=window_id, complete=complete)
        self._announce(tab)

    def _announce(self, tab: Tab) -> None:
        if tab.id in self._announced or tab.closed:
            return
        self._announced.add(tab.id)
        self._changed.set()
        self.emit("tab_opened", tab.id, openerId=tab.opener_id, url=tab.url, cause=tab.cause)
        if tab.id in self._follow:
            self._follow.discard(tab.id)
            if not tab.closed:
                self.activate(tab)

    # -- tabs going away -----------------------------------------------------------------------------

    def _tab_gone(self, tab: Tab, cause: CloseCause | None) -> None:
        """Forget a tab at once; promote the previously active tab if it was active."""
        if tab.closed:
            return
        self._announce(tab)  # a tab is announced before it is reported closed
        tab.mark_closed()
        was_active = self._registry.remove(tab)
        if tab.target_id:
            self._gone_targets[tab.target_id] = None
            while len(self._gone_targets) > 1000:
                self._gone_targets.popitem(last=False)
        cause = cause or tab.closing_cause
        if cause is None and self._cdp is not None and self.state == "open":
            # A dying browser reports its pages closed ~40 ms before itself: ask the browser whether
            # it is still there before calling this close the page's or another client's doing.
            self._spawn(self._report_unexplained_close(tab, was_active))
            return
        self._report_close(tab, cause or self._unexplained_close_cause(tab), was_active)

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
            self._lost(self._gone_reason())  # the connection is gone
        finally:
            # Reported exactly once, also when cancelled because the instance is being closed.
            self._report_close(tab, "crash" if self.state == "lost" else cause, was_active)

    def _report_close(self, tab: Tab, cause: CloseCause, was_active: bool) -> None:
        self._announced.discard(tab.id)
        active = self._registry.active if self.state == "open" else None
        new_active = active.id if active is not None else None
        self.emit("tab_closed", tab.id, by=cause, activeTabId=new_active, activeChanged=was_active, url=tab.url)
        if was_active and new_active is not None:
            self.emit("tab_activated", new_active, previousTabId=tab.id, reason="promoted")

    # -- actions -------------------------------------------------------------------------------

    def activate(self, tab: Tab) -> bool:
        """Make `tab` the active tab; returns whether it changed."""
        tab.ensure_open()
        previous = self._registry.touch(tab)
        self._services.activated(self.id)
        if previous == tab.id:
            return False
        self.emit("tab_activated", tab.id, previousTabId=previous, reason="activated")
        if not self.headless and tab.is_ready:
            # Headless Chromium has no focus to move; in a headed browser this raises the tab.
            self._spawn(tab.handle.bring_to_front())
        return True

    async def new_tab(self, url: str | None = None, *, background: bool = False) -> Tab:
        """Open a tab (activated unless `background`), optionally loading `url`."""
        self.ensure_usable()
        rules = self._services.rules
        if len(self._registry) >= rules.max_tabs:
            victim = self._registry.cap_victim(exclude=None)
            if rules.tab_limit_policy != "close-oldest" or victim is None:
                raise TabLimitError(self.id, len(self._registry), rules.max_tabs, rules.tab_limit_policy)
            await self.close_tab(victim, cause="cap")
        self._creating += 1  # opener-less targets that appear meanwhile are this tool's
        try:
            with map_playwright_errors(Doing(f"Opening a tab in instance {self.id}")):
                page = await self.context.new_page()
            tab = await self._bind_task(page)
        finally:
            self._creating -= 1
        if tab is None:
            self.ensure_usable()
            raise InstanceLostError(f"The new tab of instance {self.id} closed at once.", "Retry.", instance_id=self.id)
        # new_page returns once its about:blank is ready, and no load event follows for it.
        tab.status = "complete"
        hooked = self._hook_sessions.get(tab.id)
        if hooked is not None:
            # What the hooks asked of the tab (telemetry: enable Network) is in place before it
            # loads anything: an enable still on its way when the first document replaces
            # about:blank (in another renderer) would be lost with it.
            await hooked.settled()
        if background:
            self._registry.track_in_background(tab)
        else:
            self.activate(tab)
        if url:
            await navigate(tab, "goto", url)
        return tab

    async def close_tab(self, tab: Tab, *, cause: CloseCause = "tool", force: bool = False) -> None:
        tab.ensure_open()
        if not force and len(self._registry) <= 1:
            raise LastTabError(tab.id, self.id)
        tab.closing_cause = cause
        try:
            if not tab.is_ready:
                raise LookupError("no page yet")
            await asyncio.wait_for(tab.handle.close(), 10)
        except Exception:
            if self._cdp is not None and tab.target_id:
                with contextlib.suppress(Exception):
                    await self._cdp.send("Target.closeTarget", {"targetId": tab.target_id})
        self._tab_gone(tab, cause)
