"""One browser (or one isolated context of one) and the tabs in it.

The tab list is kept current by browser events, never by a round trip per tab (`_tracker`); the
instance owns the connection: it starts, closes, notices the browser is gone, and opens, closes
and activates tabs.

The instance gets what it needs from its manager as `InstanceServices` (next tab id, the event
bus, the tab rules, ...) and never reaches back into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ._cdp import TargetSessions
from ._errors import (
    ActionError,
    InstanceError,
    InstanceLostError,
    InstanceUnreachableError,
    LastTabError,
    NavigationBlockedError,
    Replacement,
    TabError,
    TabLike,
    TabLimitError,
    TabNotFoundError,
    check_tab_id,
    tabs_said,
)
from ._navigation import navigate, normalize_url
from ._policy import UrlPolicy
from ._process import ProcessWatch, pid_alive, pid_ends, profile_processes, runs_profile
from ._profile import remove_profile
from ._pw import (
    BrowserHandle,
    ContextHandle,
    Disposer,
    Doing,
    DownloadHandle,
    PageHandle,
    is_closed_error,
    map_playwright_errors,
)
from ._services import InstanceServices
from ._tab import Tab, Timeouts
from ._tracker import TabTracker
from ._types import (
    CloseCause,
    DialogInfo,
    EventType,
    InstanceInfo,
    InstanceKind,
    InstanceState,
    OpenCause,
    TabInfo,
    closed_reason,
)
from ._watch import ActionWatch, retrieve_outcome

logger = logging.getLogger("tabpilot")

SETTLE_TIMEOUT = 5.0
HEARTBEAT_INTERVAL = 2.0
"""Seconds between liveness checks of a remote browser (a local one is watched through its process)."""
HEARTBEAT_TIMEOUT = 2.5
HEARTBEAT_MISSES = 2
"""Checks in a row without an answer after which a remote browser is declared lost (within 10 s)."""
REMOTE_KINDS: tuple[InstanceKind, ...] = ("cdp", "playwright-server", "grid", "extension")
BROWSER_EXIT_WAIT = 1.5
"""Seconds a closing instance waits for its launched browser's process to end before killing it
(a closed browser has ended already; one whose driver died stops by itself, writing its profile)."""
CLOSE_AGAIN_AFTER = 0.5
"""Seconds a tab's close may take before it is asked again (a close usually takes tens of ms)."""
BLOCK_TOLD_ONCE = 1.0
"""Seconds within which the URL policy's two checks refusing the same URL in a tab refused one
navigation, told once."""
UNPLACED_BLOCK_WAIT = 2.0
"""Seconds a refused first request of a new tab, whose page did not exist yet, waits for its tab
to be known (its target comes a few milliseconds later), to be told of that tab."""
UNPLACED_BLOCK_STEP = 0.02
DRIVER_STOPPED = "Playwright's driver stopped: it was killed or ran out of memory"
"""The loss reason of an instance whose browser outlived the driver that connected to it."""
_OUTLIVE_DRIVER = ("extension", "cdp", "playwright-server", "grid")
"""Kinds whose browser the driver only connected to, and which `TabManager.ensure_default`
connects again after the driver died."""

Cleanup = Callable[[], Awaitable[str | None]]
"""A step of closing an instance; returns what it could not end (left running), else None."""
T = TypeVar("T")


class BrowserLink(Protocol):
    """What stands between an instance and its browser when it is not a plain connection (the
    extension's bridge): whether the browser can be reached now, and why it is gone."""

    def unreachable(self) -> str | None:
        """Why the browser cannot be reached right now (it may come back), or None."""
        ...

    def loss(self) -> str | None:
        """Why the browser is gone, if known."""
        ...

    def dropped(self) -> asyncio.Future[None]:
        """Done when the browser becomes unreachable (at once if it is now)."""
        ...

    def left_for_good(self) -> bool:
        """Whether the link was given up on purpose at the browser's end: it comes back only once
        the user connects it again (else by itself, when the browser is back)."""
        ...

    def on_connect(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever the link (re)connects; returns the disposer."""
        ...


EXIT_NOTICE = 0.2
"""How long a launched browser that disconnected may take to be seen ending: a killed process
closes its pipe to the driver a moment before it stops counting as running."""
DISCONNECTED = "the browser disconnected"
CONTEXT_CLOSED = "its browser context was closed"
QUIT = "the browser quit, closing its tabs first (its last window was closed, or it was told to quit)"


def _killed(pid: int) -> str:
    return f"the browser process (pid {pid}) ended: it was killed or crashed"


async def _ended(pid: int, profile: str | None, timeout: float) -> None:
    """Wait until a launched browser's process has ended; after `timeout`, kill it if it is still
    the browser of `profile` (its pid not reused), and wait a little more. Then its helper
    processes: they end a moment after it and can still write into the profile until then (a
    cache index, after the profile was removed); those left after `timeout` are killed."""
    if not await pid_ends(pid, within=timeout):
        if profile is not None and runs_profile(pid, profile):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        await pid_ends(pid, within=BROWSER_EXIT_WAIT)
    if profile is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while helpers := profile_processes(profile):
        if loop.time() >= deadline:
            for helper in helpers:  # a browser on a profile holds it alone: these are its own
                with contextlib.suppress(OSError):
                    os.kill(helper, signal.SIGKILL)
            await asyncio.gather(*(pid_ends(helper, within=BROWSER_EXIT_WAIT) for helper in helpers))
            return
        await asyncio.sleep(0.02)


async def _unless(job: Awaitable[T], *signals: asyncio.Future[Any]) -> asyncio.Future[T] | None:
    """Await `job` unless one of `signals` comes first: the job's future if it ended first (its
    result or error to read), else None. A job left behind is left to finish or fail by itself, its
    outcome consumed: cancelling it midway would leave Playwright's own bookkeeping half done."""
    task = asyncio.ensure_future(job)
    try:
        await asyncio.wait((task, *signals), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task.done():
        return task
    task.add_done_callback(retrieve_outcome)
    return None


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
        cleanup: Sequence[Cleanup] = (),
        link: BrowserLink | None = None,
        loss_found: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        """`loss_found()`: asked once the instance is lost (and the driver still answers), a better
        reason for the loss than the connection tells (a grid whose hub is down), or None."""
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
        self.left_running: str | None = None
        """Once closed: what closing it could not end (a grid session whose grid did not answer)."""
        self.tabs_at_loss: dict[str, int] = {}
        """The tabs it had when it was lost, by target id: an instance that connects to the same
        browser again gives the ones still there their ids back."""
        self.users_at_loss: set[int] = set()
        """Which of those were the user's own (`Tab.users_own`): given back, they still are."""
        self.active_at_loss: str | None = None
        """The target id of the tab that was active when it was lost."""
        self.pid: int | None = None
        """The browser's process, when it runs on this machine: a launched one, or the launched
        browser a context instance lives in."""
        self._process: ProcessWatch | None = None
        """Watches `pid` while the instance is open (`check_alive`)."""
        self._services = services
        self._owns_context = owns_context
        self._temp_profile = temp_profile
        self._tracker = TabTracker(
            self,
            services,
            context,
            state=lambda: self.state,
            alive=self.answers,
            activate=self.activate,
            refuses=self._refuses_in_tab if services.policy.restricts else None,
            # The user's tabs outlive tabpilot's link to their browser, whatever broke it.
            lost_cause="unreachable" if kind == "extension" else "crash",
            users_browser=kind in ("extension", "cdp") and not owns_context,
            popups_blocked=kind in ("extension", "cdp"),
            # Through the extension, only the user closes tabs besides tabpilot and their pages.
            closed_outside="user" if kind == "extension" else "external",
        )
        self._registry = self._tracker.registry
        self._disposers: list[Disposer] = []
        self._cleanup = list(cleanup)
        """Run once when the instance closes, after its browser: e.g. end the grid session it ran in."""
        self._heartbeat: asyncio.Task[None] | None = None
        self._disconnecting: asyncio.Task[None] | None = None
        self._judging: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()
        """Held by a tool opening a tab here (unless a budget's is), from the cap's check until
        the tab is counted: calls at the same time each saw room for one before."""
        self._link = link
        self._loss_found = loss_found
        self._closing = asyncio.Event()
        """Set as the instance starts to close."""
        self._lost_signal: asyncio.Future[None] | None = None
        """Done once the instance is lost (made when page work first waits on it)."""

    def __repr__(self) -> str:
        state = "" if self.state == "open" else f" {self.state}"
        return f"<Instance {self.id} {self.kind}{state} tabs={len(self._registry)}>"

    # -- reading state -------------------------------------------------------------------------

    @property
    def tabs(self) -> list[Tab]:
        """Open tabs in discovery order."""
        return self._registry.tabs

    @property
    def active_tab(self) -> Tab | None:
        return self._registry.active

    def get_tab(self, tab_id: int) -> Tab | None:
        check_tab_id(tab_id)
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
            unreachable=self._link.unreachable() if self._link is not None and self.state == "open" else None,
        )

    def ensure_usable(self) -> None:
        if self.state == "lost":
            raise self._lost_error()
        if self.state != "open":
            raise InstanceLostError(
                f"Instance {self.id} is closed.",
                "List the instances to see the open ones.",
                instance_id=self.id,
            )
        why = self._link.unreachable() if self._link is not None else None
        if why is not None:
            raise InstanceUnreachableError(self.id, why)

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

    def download_began(self, tab: Tab, download: DownloadHandle) -> None:
        # The user's Chrome saves downloads where the user set it to (the relay leaves that be).
        self._services.downloads.began(
            download, tab.id, self.emit, in_browser=self.kind == "extension", stopped=self._why_downloads_stop
        )

    async def load_blank(self, tab: Tab) -> None:
        # Through tabpilot's own session to the target: Playwright has no page for it yet.
        session = self._tracker.target_session(tab)
        if session is not None:
            with contextlib.suppress(Exception):  # gone meanwhile: the wait for the page says so
                await asyncio.wait_for(session.send("Page.navigate", {"url": "about:blank"}), 2)

    def _why_downloads_stop(self) -> str | None:
        """Why the downloads of this instance stop unfinished when tabpilot is the reason: it is
        closing the instance (or letting a browser it did not start go)."""
        if self.state not in ("closing", "closed"):
            return None  # the download's own reason (canceled, cut off, the browser went)
        if self.kind in ("extension", "cdp") and not self._owns_context:
            return (
                f"tabpilot let go of the browser (instance {self.id} was closed) before the file was whole; "
                "the browser itself may still finish it"
            )
        return f"instance {self.id} was closed before the file was whole"

    def dialog_opened(self, tab: Tab, dialog: DialogInfo) -> None:
        self.emit(
            "dialog_opened",
            tab.id,
            dialogType=dialog.type,
            message=dialog.message,
            defaultValue=dialog.default_value,
        )
        self._tracker.dialog_opened(tab)

    def page_closed(self, tab: Tab) -> None:
        self._tracker.tab_gone(tab, None)

    def activate_tab(self, tab_id: int) -> bool:
        tab = self._registry.get(tab_id)
        if tab is None:
            return False
        self.activate(tab)
        return True

    async def guard(self, job: Awaitable[T]) -> T:
        """Await page work; with a link that drops (the extension), fail it with
        InstanceUnreachableError the moment the link drops instead of waiting for its timeout (the
        commands it sent may never be answered). Work that finds its page closed checks that
        Playwright's driver still answers: a browser the driver connected to (the extension, CDP, a
        grid) outlives a killed driver and tells nothing, so the instance is declared lost then
        (the next connect goes through a new driver). Work that fails on an instance lost
        meanwhile fails with the instance's loss, and its reason."""
        try:
            return await self._linked(job)
        except Exception as exc:
            if not is_closed_error(exc):
                raise
            await self._lost_if_driver_stopped()
            if self.state == "lost":
                # Lost meanwhile (here, or by the liveness check that found the connection gone
                # first): the error says why, once that is known, not only that the page went.
                await self.loss_judged()
                self.ensure_usable()
            raise

    async def _lost_if_driver_stopped(self) -> bool:
        """Declare the instance lost with Playwright's driver if the driver no longer answers (a
        browser it only connected to tells nothing when it dies); returns whether it was."""
        if self.state == "open" and self.browser is not None and not await self.browser.driver_answers():
            self._lost(DRIVER_STOPPED)
            return True
        return False

    async def _linked(self, job: Awaitable[T]) -> T:
        """Await `job` unless the instance is lost first (a remote browser that stopped answering
        keeps its socket open: work sent to it would wait out its own timeout), or its link drops.
        A launched browser's loss closes its pipe, which fails the work by itself: no race (40 us)."""
        if self._link is None and self.kind not in REMOTE_KINDS:
            return await job
        if self._lost_signal is None:
            self._lost_signal = asyncio.get_running_loop().create_future()
            if self.state == "lost":
                self._lost_signal.set_result(None)
        lost = self._lost_signal
        if lost.done():
            return await job
        dropped = self._link.dropped() if self._link is not None else None
        ended = await _unless(job, lost) if dropped is None else await _unless(job, lost, dropped)
        if ended is not None:
            return ended.result()
        if lost.done():
            await self.loss_judged()
            self.ensure_usable()  # raises why it was lost
        assert self._link is not None
        raise InstanceUnreachableError(self.id, self._link.unreachable() or "its link to the browser dropped")

    async def _unless_closed(self, job: Awaitable[T]) -> T:
        """Await `job` unless the instance starts to close first; then fail with its closed error.
        Playwright's new_page can wait for ever on a browser closed under it."""
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            ended = await _unless(job, closing)
        finally:
            closing.cancel()
        if ended is not None:
            return ended.result()
        raise InstanceLostError(
            f"Instance {self.id} was closed during the call.",
            "List the instances to see the open ones.",
            instance_id=self.id,
        )

    def watch(self, tab: Tab) -> AbstractContextManager[ActionWatch]:
        return self._tracker.watch(tab)

    def check_alive(self) -> bool:
        """Notice at once that a launched browser's process has gone (that of a context of one,
        too), without a browser round trip: a browser whose driver died tells nothing else."""
        if self.state == "open" and self.pid is not None and not self._watch_process(self.pid).alive():
            self._lost(self._gone_reason())
        return self.state == "open"

    def _watch_process(self, pid: int) -> ProcessWatch:
        # `pid` is set once (at start, or by the manager for a context instance), so is the watch.
        if self._process is None:
            self._process = ProcessWatch(pid)
            self._disposers.append(self._process.close)  # open now: disposed when it no longer is
        return self._process

    def _browser_kept_tabs(self) -> bool:
        """Whether the instance was lost with its driver while its browser keeps its tabs (a browser
        the driver only connected to; a Playwright server closes the tabs it opened for tabpilot)."""
        return (
            self.lost_reason == DRIVER_STOPPED
            and self.kind in _OUTLIVE_DRIVER
            and self.kind != "playwright-server"
        )

    def kept_tab_loss(self, tab_id: int) -> InstanceLostError | None:
        """This instance's loss, if it was lost with its driver while its browser keeps tab `tab_id`
        (what it says and how to reach the tab again): None for any other tab, or once another
        instance took this one's place (the tabs still there are that one's now)."""
        if self.state != "lost" or self.replaced_by is not None or not self._browser_kept_tabs():
            return None
        return self._lost_error() if tab_id in self.tabs_at_loss.values() else None

    def _lost_error(self) -> InstanceLostError:
        """Why naming this lost instance fails, and what takes its place: an instance that already
        did, else what the next call that needs the default does (`TabManager.ensure_default`)."""
        replacement: Replacement | None = None
        successor = self._services.successor(self.id) if self.replaced_by is not None else None
        advice = ""
        if successor is not None:
            said = f"; instance {successor} took its place."
            advice = f"Use instance {successor} instead."
        elif self.replaced_by is not None:
            said = f"; instance {self.replaced_by} took its place, and is gone as well."
        elif self.lost_reason == DRIVER_STOPPED and self.kind == "playwright-server":
            said = ". The Playwright server closed the tabs it had opened for tabpilot."
            if self._services.is_default(self.id):
                advice = "TabManager.ensure_default() connects to the server again as the default instance, with a blank tab."
                replacement = "reconnect-blank"
        elif self._browser_kept_tabs():
            said = ". Its browser keeps its tabs, but tabpilot lost track of them."
            if self._services.is_default(self.id):
                advice = "TabManager.ensure_default() connects it again as the default instance; its tabs keep their ids."
                replacement = "reconnect"
        elif self.kind == "extension":
            # The user's own browser: losing the link to it closes none of their tabs.
            said = ". The user's tabs are not closed by this, only out of this server's reach."
            if self._link is not None and self._link.left_for_good():
                advice = (
                    "Ask the user to pair the tabpilot extension with this server again (its connect page, "
                    "with this server's port and token); once it connects, its tabs can be reached again."
                )
                replacement = "pair"
            else:
                advice = (
                    "The tabpilot extension connects again by itself once the user's browser runs with it "
                    "(or once the user pairs it with this server again); its tabs can be reached again then."
                )
                replacement = "extension"
        elif self.kind == "launched" and self._services.is_default(self.id):
            said = ". Its tabs are gone."
            advice = (
                "TabManager.ensure_default() launches a new default browser in its place, with a blank tab."
            )
            replacement = "launch"
        elif self.kind == "cdp":
            # Lost as it stopped answering or dropped its connection: tabpilot cannot tell whether
            # the browser still runs with its tabs (a frozen or restarted one may).
            said = (
                ". Its tabs are out of reach; if its browser still runs, connecting to it again gives the tabs "
                "it has their ids back."
            )
        elif self.kind == "context" and self._services.is_default(self.id):
            said = ". Its tabs are gone."
            advice = (
                "Where the browser it lived in runs again, TabManager.ensure_default(isolate_in=...) opens a "
                "new isolated context there in its place, with a blank tab."
            )
            replacement = "isolate"
        else:
            said = ". Its tabs are gone."
        elsewhere: tuple[int, ...] = ()
        if replacement is None and successor is None:  # nothing takes its place: where work can go on
            elsewhere = tuple(t.id for t in self._services.all_open_tabs())
            advice = (
                f"Use a tab of another instance ({tabs_said(elsewhere)}), or launch or connect another instance."
                if elsewhere
                else "Launch or connect another instance."
            )
        return InstanceLostError(
            f"Instance {self.id} was lost ({self.lost_reason}){said}",
            advice,
            instance_id=self.id,
            lost_reason=self.lost_reason,
            replacement=replacement,
            replaced_by=successor,
            elsewhere=elsewhere,
        )

    # -- start and stop ------------------------------------------------------------------------

    async def start(self, *, initial_cause: OpenCause) -> None:
        context = self.context
        if self._link is not None:
            self._disposers.append(self._link.on_connect(self._watch_link))
            self._watch_link()
        self._disposers.append(context.on_page(self._tracker.on_page))
        self._disposers.append(context.on_dialog(self._tracker.on_dialog))

        def context_closed() -> None:
            self._lost(CONTEXT_CLOSED if self.kind == "context" else self._gone_reason())

        self._disposers.append(context.on_close(context_closed))
        if self.browser is not None:
            self._disposers.append(self.browser.on_disconnected(lambda: self._lost(self._gone_reason())))
            cdp = self._tracker.cdp = await self.browser.new_cdp_session()
            self._tracker.sessions = TargetSessions(cdp)
            for event, handler in self._tracker.target_handlers():
                self._disposers.append(cdp.on(event, handler))
            await cdp.send("Target.setDiscoverTargets", {"discover": True})
            if self.kind == "launched":
                with contextlib.suppress(Exception):
                    processes = (await cdp.send("SystemInfo.getProcessInfo"))["processInfo"]
                    self.pid = next(p["id"] for p in processes if p["type"] == "browser")
        if self.policy.restricts:
            # Pages start navigations too (links, scripts, popups): hold them to the same policy.
            undo = await context.route_navigations(
                self._refuses, self.policy.page_routes, self.policy.refuses_request
            )

            def unroute() -> None:
                self._tracker.spawn(undo(), settle=False)

            self._disposers.append(unroute)
        foreign: list[str] = []
        if self.kind in ("cdp", "grid") and self._tracker.cdp is not None:
            # A browser connected to: Playwright lists the pages of contexts other clients made
            # with its own context's (which page came first decided whose tabs were followed).
            with contextlib.suppress(Exception):
                made = await self._tracker.cdp.send("Target.getBrowserContexts")
                foreign = list(made.get("browserContextIds") or [])
        await self._tracker.adopt_existing(context.pages, initial_cause, foreign=foreign)
        await self.settle()
        self._registry.ensure_active()
        if self.kind in REMOTE_KINDS and self._tracker.cdp is not None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    def _watch_link(self) -> None:
        """When the link to the browser drops (the extension's service worker restarts), the
        debugger leaves the tabs, and Playwright's script that knew their refs goes with it: the
        refs from before stop working, though the pages do not change."""
        assert self._link is not None

        def dropped(_: object) -> None:
            for tab in self.tabs:
                tab.refs_reset("the link to the user's browser dropped and was set up again")

        self._link.dropped().add_done_callback(dropped)

    def _refuses(self, page: PageHandle | None, url: str, in_frame: bool) -> bool:
        """Whether the policy refuses a navigation of a page or of a frame in it (a link, a form, a
        script; a reload or a step in history to such a URL). The browser shows its error page and
        says only ERR_BLOCKED_BY_CLIENT, so an event says why, for the page's tab (none yet for a
        new tab's first page)."""
        blocked = self._refusal(url)
        if blocked is None:
            return False
        if page is None:
            self._place_blocked(blocked, url, in_frame)
        else:
            self._tracker.with_tab(
                page, lambda tab: self._tab_blocked(tab, blocked, url, in_frame, "route"), lambda: None
            )
        return True

    def _place_blocked(self, blocked: NavigationBlockedError, url: str, in_frame: bool) -> None:
        """A new tab's first request, refused before its page existed (a popup's, a link's to a new
        tab): told of the tab asked to load `url` once that tab is known (its target may come a
        moment later), and of "a new tab" only if none is within UNPLACED_BLOCK_WAIT seconds. The
        tab is the earliest such one not told of a refusal yet, else the one whose own session
        refused the same URL last, just now (the same request, seen by both checks)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + UNPLACED_BLOCK_WAIT

        def place() -> None:
            asked = [tab for tab in self.tabs if url in (tab.asked_url, tab.url)]
            tab = next((tab for tab in asked if tab.block_told is None), None)
            if tab is None:
                now = time.monotonic()
                just_told = [
                    (told[3], tab)
                    for tab in asked
                    if (told := tab.block_told) is not None
                    and told[:3] == (url, in_frame, "session")
                    and now - told[3] < BLOCK_TOLD_ONCE
                ]
                tab = max(just_told, key=lambda pair: pair[0])[1] if just_told else None
            if tab is not None:
                self._tab_blocked(tab, blocked, url, in_frame, "route")  # told once, if told just now
            elif self.state == "open" and loop.time() < deadline:
                loop.call_later(UNPLACED_BLOCK_STEP, place)
            else:
                self._emit_blocked(None, blocked, url, in_frame)

        place()

    def _refuses_in_tab(self, tab: Tab, url: str, in_frame: bool) -> bool:
        """`_refuses` for a document request of `tab` its own session saw (`guard_documents`), a
        step of a server's redirect included, which Playwright's routes never see."""
        blocked = self._refusal(url)
        if blocked is None:
            return False
        self._tab_blocked(tab, blocked, url, in_frame, "session")
        return True

    def _refusal(self, url: str) -> NavigationBlockedError | None:
        try:
            self.policy.check(url)
        except NavigationBlockedError as refused:
            return refused
        return None

    def _tab_blocked(
        self, tab: Tab, blocked: NavigationBlockedError, url: str, in_frame: bool, check: str
    ) -> None:
        # Each check sees a request once, but both may see one (Playwright's route and the tab's
        # own session, as in the user's browser through the extension): it is told once.
        now = time.monotonic()
        told, tab.block_told = tab.block_told, (url, in_frame, check, now)
        if (
            told is not None
            and told[:2] == (url, in_frame)
            and told[2] != check
            and now - told[3] < BLOCK_TOLD_ONCE
        ):
            return
        if not in_frame:
            tab.navigation_blocked(blocked)
        # A new tab's first page may be refused before the tab is announced: said after that.
        self._tracker.once_announced(tab, lambda: self._emit_blocked(tab, blocked, url, in_frame))

    def _emit_blocked(
        self, tab: Tab | None, blocked: NavigationBlockedError, url: str, in_frame: bool
    ) -> None:
        self.emit(
            "navigation_blocked",
            tab.id if tab is not None else None,
            url=url,
            inFrame=in_frame,
            reason=blocked.reason,
            origin=blocked.origin,
            fact=blocked.fact,
            advice=blocked.advice,
        )

    async def _beat(self) -> None:
        """Notice a remote browser that stopped answering (a dead host, a grid that ended the
        session without closing the socket): a check every HEARTBEAT_INTERVAL seconds, lost within
        HEARTBEAT_INTERVAL + HEARTBEAT_MISSES * HEARTBEAT_TIMEOUT seconds (7 s) of the last answer."""
        while self.state == "open":
            await asyncio.sleep(HEARTBEAT_INTERVAL)
            await self.answers()

    async def answers(self) -> bool:
        """Whether the browser still answers a check (`Browser.getVersion`), asked up to
        HEARTBEAT_MISSES times. A broken connection declares the instance lost; so does silence, for
        a remote browser (a local one is judged by its process: a busy browser is not a dead one)."""
        for _ in range(HEARTBEAT_MISSES):
            cdp = self._tracker.cdp
            if cdp is None or self.state != "open":
                return self.state == "open"
            try:
                await asyncio.wait_for(cdp.send("Browser.getVersion"), HEARTBEAT_TIMEOUT)
                return True
            except TimeoutError:
                continue
            except Exception:
                # The connection runs through Playwright's driver: a killed driver breaks it while
                # the browser keeps its tabs. Ask the driver before calling the browser lost, as a
                # call that finds its page gone does (`guard`), so that both read the same.
                if self.kind in _OUTLIVE_DRIVER and await self._lost_if_driver_stopped():
                    return False
                broke = f"the connection to the browser at {self.endpoint} broke"
                self._lost(broke if self.kind in REMOTE_KINDS else self._gone_reason())
                return False
        if self.kind in REMOTE_KINDS:
            self._lost(self._silent_reason())
        return self.check_alive()

    async def ensure_answering(self) -> None:
        """Raise the instance's loss, with its judged reason, if its browser does not answer
        (`answers`: a remote browser's silence is its loss); return if it does."""
        if await self.answers() or self.state == "open":
            return
        await self.loss_judged()
        self.ensure_usable()

    def _silent_reason(self) -> str:
        if self.kind == "grid":
            return self._grid_session("stopped answering")
        return f"the browser at {self.endpoint} stopped answering"

    def _grid_session(self, what: str) -> str:
        """Why a grid instance was lost: its session `what` (stopped answering, closed its connection)."""
        return f"the grid session {self.endpoint} {what} (the grid ended it, or its node went away)"

    async def save_storage_state(self, path: str | os.PathLike[str]) -> dict[str, int]:
        """Write this instance's cookies and localStorage to `path` (JSON, what
        `BrowserOptions(storage_state=...)` starts with); returns how many cookies and origins."""
        self.ensure_usable()
        if self.kind == "extension":  # the extension's relay refuses the cookie commands
            raise InstanceError(
                f"Instance {self.id} is the user's own browser, reached through the tabpilot extension: "
                "tabpilot does not copy its cookies and logins.",
                "Save the storage state of a browser tabpilot launched or connected to instead.",
                instance_id=self.id,
            )
        for tab in self.tabs:
            # Playwright reads localStorage in the open pages. It skips one that shows a dialog, but
            # not one the dialog holds up too (a popup of it): that read would hang.
            if tab.dialog is None:
                tab.ensure_no_dialog()
        with map_playwright_errors(Doing(f"Saving the storage state of instance {self.id}", timeout=30)):
            state = await asyncio.wait_for(self.context.save_storage_state(os.fspath(path)), 30)
        return {"cookies": len(state.get("cookies", [])), "origins": len(state.get("origins", []))}

    async def close(self, *, cause: CloseCause = "tool") -> None:
        """Close what this instance owns: the browser it launched or the context it created.

        A browser it only connected to keeps running; the connection is dropped. `cause`: why its
        tabs are reported closed ("shutdown": its manager is being closed). The tabs of a browser
        it only connected to, in a context it did not create (the user's browser through the
        extension, a CDP endpoint's own tabs), stay open there: closed by a call, they are reported
        let go of ("released"), not closed.
        """
        if self.state in ("closing", "closed"):
            return
        was_lost = self.state == "lost"
        self.state = "closing"
        self._closing.set()
        if cause == "tool" and self.kind in ("extension", "cdp") and not self._owns_context:
            cause = "released"
        for tab in self.tabs:
            self._tracker.tab_gone(tab, cause)
        self._dispose()
        self._tracker.cancel()
        if not was_lost:
            with contextlib.suppress(Exception):
                if self._owns_context:
                    await asyncio.wait_for(self.context.close(), 10)
                if self.browser is not None and self.kind != "context":
                    await asyncio.wait_for(self.browser.close(), 10)
        else:
            await asyncio.gather(
                *(t for t in (self._disconnecting, self._judging) if t is not None), return_exceptions=True
            )
        if self.kind == "launched" and self.pid is not None:
            # A browser whose driver died is left to stop by itself: it writes into its profile
            # until it has.
            await _ended(self.pid, self._temp_profile or self.user_data_dir, BROWSER_EXIT_WAIT)
        self._remove_profile()
        cleanup, self._cleanup = self._cleanup, []
        for step in cleanup:
            with contextlib.suppress(Exception):
                self.left_running = await asyncio.wait_for(step(), 10) or self.left_running
        if self.left_running:
            logger.warning("instance %s closed, but %s", self.id, self.left_running)
        self.state = "closed"

    def _dispose(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        disposers, self._disposers = self._disposers, []
        for dispose in disposers:
            with contextlib.suppress(Exception):
                dispose()
        if self._tracker.sessions is not None:
            self._tracker.sessions.close()
        self._tracker.cdp = None

    def _remove_profile(self, *, forget: bool = True) -> None:
        """Remove the temporary profile (`forget=False`: and remove it again at close)."""
        if self._temp_profile is not None:
            remove_profile(self._temp_profile, for_good=forget)
            if forget:
                self._temp_profile = None

    def _gone_reason(self) -> str:
        loss = self._link.loss() if self._link is not None else None
        if loss is not None:
            return loss
        if self._tracker.closed_every_tab_first():
            return QUIT
        if self.pid is not None and not pid_alive(self.pid):
            return _killed(self.pid)
        if self.kind == "grid":  # the grid may close the session's connection as it ends the session
            return self._grid_session("closed its connection")
        return DISCONNECTED  # until `_process_ended` finds the process ended after all

    async def _judge(self, finding: Awaitable[str | None]) -> None:
        """Find out why the instance was really lost (`finding`: the better reason, or None to keep
        the first one), for whatever replaces it and for the `instance_lost` event, which waits."""
        try:
            found = await finding
            if found is not None:
                logger.info("instance %s: it was lost because %s", self.id, found)
                self.lost_reason = found
        finally:
            self.emit("instance_lost", None, reason=self.lost_reason)

    @staticmethod
    async def _driver_stopped(
        browser: BrowserHandle, then: Callable[[], Awaitable[str | None]] | None = None
    ) -> str | None:
        """A browser the driver only connected to can seem to go away when the driver itself died
        (a Playwright server's connection runs through it, a heartbeat goes unanswered); if the
        driver answers, what `then()` finds."""
        if not await browser.driver_answers():
            return DRIVER_STOPPED
        return await then() if then is not None else None

    @staticmethod
    async def _process_ended(pid: int) -> str | None:
        """A launched browser that disconnected while its process still ran: a killed process
        closes its pipe a moment before it stops counting as running, so wait a little
        (EXIT_NOTICE) before putting the loss down to a plain disconnect."""
        return _killed(pid) if await pid_ends(pid, within=EXIT_NOTICE) else None

    async def loss_judged(self) -> None:
        """Wait until it is known why the instance was lost (`_judge`)."""
        if self._judging is not None:
            await asyncio.gather(self._judging, return_exceptions=True)

    def _lost(self, reason: str) -> None:
        if self.state != "open":
            return
        self.state = "lost"
        self.lost_reason = reason
        if self._services.stopping():  # a stop signal the browser (or the driver) got too
            logger.info("instance %s (%s) went as tabpilot stops: %s", self.id, self.kind, reason)
        else:
            logger.warning("instance %s (%s) was lost: %s", self.id, self.kind, reason)
        if self._lost_signal is not None and not self._lost_signal.done():
            self._lost_signal.set_result(None)
        went_first = self._tracker.report_checked_closes()
        self.tabs_at_loss = {t.target_id: t.id for t in [*went_first, *self.tabs] if t.target_id}
        self.users_at_loss = {t.id for t in [*went_first, *self.tabs] if t.users_own}
        self.active_at_loss = self.active_tab.target_id if self.active_tab is not None else None
        for tab in self.tabs:
            self._tracker.tab_gone(tab, self._tracker.lost_cause)
        self._dispose()
        finding: Awaitable[str | None] | None = None
        if self.kind in _OUTLIVE_DRIVER and self.browser is not None and reason != DRIVER_STOPPED:
            finding = self._driver_stopped(self.browser, self._loss_found)
        elif reason in (DISCONNECTED, CONTEXT_CLOSED) and self.pid is not None:
            # A context's close comes first also when its whole browser went (killed, crashed).
            finding = self._process_ended(self.pid)
        if finding is not None:
            self._judging = asyncio.get_running_loop().create_task(self._judge(finding))
        else:
            self.emit("instance_lost", None, reason=reason)
        if self.kind == "launched":
            # The browser that used it is gone. Its helper processes can still write into it for a
            # moment after a kill, so close() removes it once more (and forgets it then).
            self._remove_profile(forget=False)
        elif self.kind in REMOTE_KINDS and self.browser is not None:
            # Drop the connection to an endpoint that stopped answering: calls still waiting on it
            # (a navigation under way) fail at once instead of at their timeout, and its socket goes.
            self._disconnecting = asyncio.get_running_loop().create_task(self._disconnect(self.browser))

    @staticmethod
    async def _disconnect(browser: BrowserHandle) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(browser.close(), 5)

    # -- settling ----------------------------------------------------------------------------------

    async def settle(self, timeout: float = SETTLE_TIMEOUT, *, grace: float = 0.0) -> None:
        """Wait until every tab discovered so far is ready and announced, every tab a page asked
        for has arrived, and every close is reported; and at least `grace` seconds."""
        await self._tracker.settle(timeout, grace=grace)

    def quiet(self) -> bool:
        """Whether `settle()` has nothing to wait for now."""
        return self._tracker.quiet()

    async def refresh(self) -> None:
        """Bring every tab's title and URL up to date in one browser round trip (not one per tab),
        unless every page has reported its title for its current URL (`_titles`), or shows the
        error page (no title; its URL is the target's): then none."""
        cdp = self._tracker.cdp
        if cdp is None or self.state != "open" or all(tab.title_live or tab.error_page for tab in self.tabs):
            return
        with contextlib.suppress(Exception):
            targets = await asyncio.wait_for(cdp.send("Target.getTargets"), 5)
            for info in targets["targetInfos"]:
                self._tracker.target_changed({"targetInfo": info})

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
            self._tracker.spawn(tab.handle.bring_to_front(), settle=False)
        return True

    def cap_victim(self, exclude: Tab | None) -> tuple[int, Tab] | None:
        """The tab a cap closes first here (see `TabRegistry.cap_victim`), with when it was last
        used (comparable across instances); None if none may be closed."""
        victim = self._registry.cap_victim(exclude=exclude)
        return (self._registry.last_used(victim), victim) if victim is not None else None

    async def close_for_room(self, tab: Tab) -> None:
        """Close `tab` for a tab another instance of the manager opens under the total cap."""
        tab.over_total = True
        await self.close_tab(tab, cause="cap")

    def drop_for_room(self, tab: Tab) -> None:
        """Close `tab` at once for a tab a page opened in another instance, over the total cap."""
        self._tracker.drop_for_cap(tab, over_total=True)

    async def new_tab(self, url: str | None = None, *, background: bool = False) -> Tab:
        """Open a tab (activated unless `background`), optionally loading `url`. A malformed URL
        (ValueError) or one the policy refuses (NavigationBlockedError) is refused before any tab
        opens; a load that fails once the tab is open raises with the tab left open."""
        self.ensure_usable()
        target = normalize_url(url) if url else None
        if target:
            self.policy.check(target)
        budget = self._services.rules.budget
        # One tool-opened tab at a time (under a total: one across the managers sharing it), from
        # the check of the cap until the tab is counted.
        try:
            async with budget.opening if budget is not None else self._opening:
                tab = await self._open_tab(target or "")
        except ActionError as exc:  # Playwright's new page closed before it was set up
            if exc.reason != "tab_closed":
                raise
            tab = None
        if tab is None:
            self.ensure_usable()
            # The instance is fine: another call closed the tab as it opened (close_others), or
            # the browser or its user did.
            raise TabError(f"The new tab of instance {self.id} was closed as it opened.", "Open another.")
        # new_page returns once its about:blank is ready, and no load event follows for it.
        tab.status = "complete"
        session = self._tracker.target_session(tab)
        if session is not None:
            # What the tracker and the hooks asked of the tab (Page for the windows it asks for;
            # telemetry: Network) is in place before it loads anything: an enable still on its way
            # when the first document replaces about:blank (in another renderer) would be lost.
            await session.settled()
        if background:
            self._registry.track_in_background(tab)
        else:
            self.activate(tab)
        if target:
            await navigate(tab, "goto", target)
        return tab

    async def _open_tab(self, url: str) -> Tab | None:
        """Make room under the caps (or refuse), then open a blank tab (to load `url` next, '' for
        none): its Tab, None if it closed at once."""
        self.ensure_usable()
        rules = self._services.rules
        budget = rules.budget
        total_full = budget is not None and budget.full
        victim = None
        own_full = self._registry.staying() >= rules.max_tabs
        if total_full or own_full:
            # Room is made among this instance's own tabs for its own cap; for the total alone,
            # among the manager's (the oldest of all its instances), never another manager's.
            victim = (
                self._registry.cap_victim(exclude=None)
                if own_full or rules.tab_limit_policy != "close-oldest"
                else self._services.oldest_tab(None)
            )
            if rules.tab_limit_policy != "close-oldest" or victim is None:
                if budget is not None and total_full:
                    raise TabLimitError(
                        self.id,
                        budget.used,
                        budget.limit,
                        rules.tab_limit_policy,
                        total=True,
                        own=len(self._services.all_open_tabs()),
                    )
                # The tabs that count (the user's own in their browser do not).
                raise TabLimitError(self.id, self._registry.staying(), rules.max_tabs, rules.tab_limit_policy)
        # From here the new tab has its place: a tab a page opens meanwhile goes over the cap.
        with self._tracker.holding_place():
            if victim is not None and self._registry.get(victim.id) is not victim:  # another instance's
                await self._services.close_for_room(victim)
            elif victim is not None:
                victim.over_total = self._registry.staying() < rules.max_tabs  # room but for the total
                await self.close_tab(victim, cause="cap")
            with self._tracker.creating(url):
                with map_playwright_errors(Doing(f"Opening a tab in instance {self.id}")):
                    try:
                        page = await self.guard(self._unless_closed(self.context.new_page()))
                    except InstanceUnreachableError as exc:
                        # The browser may have made the tab already: its answer went with the link.
                        raise InstanceUnreachableError(self.id, exc.reason, opening=True) from None
                return await self._tracker.bind_task(page)

    async def close_tab(self, tab: Tab, *, cause: CloseCause = "tool", force: bool = False) -> None:
        tab.ensure_open()
        if tab.closing_cause is not None:
            # Another call (or the tab cap) closes it already: this one finds it gone, as a call
            # a moment later would, not a second success for one close.
            staying = [t for t in self.open_tabs() if t.id != tab.id]
            raise TabNotFoundError(tab.id, staying, reason=closed_reason(tab.closing_cause))
        # The last tab that stays: a tab whose close is under way (another call's) is gone already.
        # Through the extension the agent's tabs are a few of the user's browser: the last of them
        # closing ends neither the browser nor the instance (a tab opens there as before).
        if (
            not force
            and self.kind != "extension"
            and not any(t is not tab and t.closing_cause is None for t in self._registry.tabs)
        ):
            rules = self._services.rules
            # Room counts the tabs that stay, as the cap does: not those whose close is under way.
            full = self._registry.staying() >= rules.max_tabs or (
                rules.budget is not None and rules.budget.full
            )
            raise LastTabError(tab.id, self.id, room=not full)
        tab.closing_cause = cause
        try:
            if not tab.is_ready:
                raise LookupError("no page yet")
            closing = asyncio.ensure_future(tab.handle.close())
            closing.add_done_callback(retrieve_outcome)
            done, _ = await asyncio.wait({closing}, timeout=CLOSE_AGAIN_AFTER)
            if not done:
                # Chromium answers a close that meets the commit of the page's next document with
                # success and loads on (measured: a new tab closed as it loads, 1 time in 4): ask again.
                logger.debug("tab %s: not closed after %g s; asking again", tab.id, CLOSE_AGAIN_AFTER)
                with contextlib.suppress(Exception):  # gone meanwhile: the close below says so
                    await self._tracker.close_target(tab)
            await asyncio.wait_for(closing, 10)
        except Exception:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._tracker.close_target(tab), 10)  # never waits for ever
        self._tracker.tab_gone(tab, cause)
