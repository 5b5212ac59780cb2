"""Keeping an instance's tab list current from browser events.

Chromium's `Target.targetCreated` (on a browser-level CDP session) registers a tab the moment its
target exists, with its opener and the cause that opened it; the tab cap applies at once, the
target hooks (telemetry) attach at once, and an action under way hears of the tab it opened.
`targetInfoChanged` keeps url and title, `targetDestroyed` removes the tab. Playwright reports the
page a little later: the tracker binds it to its tab (one round trip names the page's target)
and announces the tab (`tab_opened`). A close is reported with its cause; a close nobody asked
for is checked against the browser first (a dying browser closes its pages just before itself).

Every tab gets a session of the tracker's own (`_attach`), where the target hooks (telemetry) also
listen: its `Page.windowOpen` events say that the tab's page asked for a window, which the browser
turns into a target a moment later. Settling waits for those windows too (`WindowAsks`), so
a tab a raw Playwright click opened is registered and announced once `settle()` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from ._cdp import TargetSession, TargetSessions
from ._document_guard import guard_documents
from ._pw import CdpSession, ContextHandle, DialogHandle, PageHandle
from ._registry import TabRegistry
from ._services import InstanceServices
from ._tab import Tab, TabHost
from ._targets import TargetInfo, TargetScope, identify, open_cause
from ._titles import watch_titles
from ._types import CloseCause, InstanceState, OpenCause
from ._watch import BLOCKABLE_WAIT, NEW_TAB_TIMEOUT, ActionWatch, WindowAsks

ANNOUNCE_TIMEOUT = 3.0
"""Seconds after which a tab Playwright has not reported is announced anyway (from its target)."""
DUE_ANNOUNCE = 0.3
"""Seconds after which a new tab whose first page its server has not sent yet is announced, before
Playwright reports it (Playwright waits for that page): the action that opened it answers then, not
after ANNOUNCE_TIMEOUT; so is one whose loading ended without a first page (HTTP 204). (A page
that opened a tab and sent it somewhere before tabpilot's session was attached to it is
announced after ANNOUNCE_TIMEOUT still: about 1 in 6 popups whose first answer is a 204, here.)"""
SHARED_WORKERS_WAITING = 100
"""Shared workers remembered until the tab that started one is known (its script's request)."""
CLOSE_GRACE = 0.4
"""Seconds a close nobody asked for waits for its browser's goodbye: a browser shut down in order
(a Playwright server stopping, a user quitting) closes its pages and still answers for ~0.1 s."""


class TabTracker:
    """An instance's tabs, kept current from its browser's events; see the module docstring."""

    def __init__(
        self,
        host: TabHost,
        services: InstanceServices,
        context: ContextHandle,
        *,
        state: Callable[[], InstanceState],
        alive: Callable[[], Awaitable[bool]],
        activate: Callable[[Tab], object],
        refuses: Callable[[Tab, str, bool], bool] | None = None,
        lost_cause: CloseCause = "crash",
        users_browser: bool = False,
        popups_blocked: bool = False,
        closed_outside: CloseCause = "external",
    ) -> None:
        """`refuses(tab, url, in_frame)`: the URL policy, for every document request of a tab's
        page (`guard_documents`); None when the policy restricts nothing. `lost_cause`: how its
        tabs leave when the instance is lost. `users_browser`: the instance is the user's own
        browser (the extension, a CDP endpoint's own context), whose tabs that neither tabpilot nor
        its tabs' pages opened are the user's (`Tab.users_own`). `popups_blocked`: the browser's
        popup blocker is on (a browser Playwright did not start). `closed_outside`: the cause of a
        close tabpilot did not make, of a tab its page could not close (`Tab.may_close_itself`):
        `user` where only the user closes tabs (their browser, through the extension)."""
        self._popups_blocked = popups_blocked
        self._closed_outside = closed_outside
        self.lost_cause: CloseCause = lost_cause
        self._users_browser = users_browser
        self.registry = TabRegistry(host.instance_id)
        self.cdp: CdpSession | None = None
        """The instance's browser-level CDP session (set when it starts)."""
        self.sessions: TargetSessions | None = None
        self._host = host
        self._services = services
        self._context = context
        self._state = state
        self._alive = alive
        self._activate = activate
        self._refuses = refuses
        self._scope = TargetScope()
        self._binding: dict[PageHandle, asyncio.Task[Tab | None]] = {}
        self._announced: set[int] = set()
        self._back: set[int] = set()
        """Tabs given back the id they had in a lost instance, not announced yet."""
        self._after_announce: dict[int, list[Callable[[], object]]] = {}
        self._follow: set[int] = set()
        self._watches: list[ActionWatch] = []
        self._target_sessions: dict[int, TargetSession] = {}
        self._frame_sessions: dict[int, set[TargetSession]] = {}
        """The sessions of each tab's cross-site iframes (targets of their own)."""
        self._intercepting: dict[int, set[TargetSession]] = {}
        """The sessions of a tab that hold back file pickers for the actions under way on it."""
        self._shared_workers: OrderedDict[str, None] = OrderedDict()
        """Shared workers of this context whose tab is not known yet (`_shared_worker_of`)."""
        self._asks = WindowAsks(time.monotonic)
        self._checking: dict[int, tuple[Tab, bool, bool]] = {}
        """Closes nobody asked for, being checked against the browser: tab id -> (tab, was active,
        whether the browser itself reported the close: Playwright also reports the pages of a
        browser that went away as closed)."""
        self._creating = 0
        self._creating_for = ""
        """The URL the tool opening a tab here will load in it ('' for none): its `tab_opened` says it."""
        self._opening_urls: dict[int, str] = {}
        self._reserved = 0
        """Places held by tools opening a tab here whose tab is not registered yet (`holding_place`)."""
        self._registered_by_tools = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._settling: set[asyncio.Task[Any]] = set()
        self._changed = asyncio.Event()

    def _is_open(self) -> bool:
        return self._state() == "open"

    # -- background work and settling ----------------------------------------------------------------

    def spawn(self, coro: Any, *, settle: bool = True) -> asyncio.Task[Any]:
        """Run `coro` in the background; `settle()` waits for it unless `settle=False` (housekeeping
        such as detaching a session, which no answer depends on)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        if settle:
            self._settling.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            self._settling.discard(finished)
            self._changed.set()
            if not finished.cancelled():
                finished.exception()  # a page that closed meanwhile: nothing to report

        task.add_done_callback(done)
        return task

    def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def busy(self) -> bool:
        return bool(self._settling) or any(t.id not in self._announced for t in self.registry.tabs)

    def quiet(self) -> bool:
        """Whether `settle()` has nothing to wait for now (no grace asked)."""
        if not self._is_open():  # nothing more to discover, but close reports under way finish
            return not self._settling
        return self._asks.due() is None and not self.busy()

    async def settle(self, timeout: float, *, grace: float = 0.0) -> None:
        """Wait until every tab discovered so far is ready and announced, every window a page asked
        for has arrived as a tab (or was given up on), and every close is reported; and at least
        `grace` seconds, for a window a page is about to ask for (a click that just returned)."""
        now = time.monotonic()
        deadline, quiet_until = now + timeout, now + grace
        while now < deadline:
            if now >= quiet_until and self.quiet():
                return
            wake = [quiet_until] if now < quiet_until else []
            coming = self._asks.due() if self._is_open() else None
            if coming is not None:
                wake.append(coming)  # a window that never comes is given up on then
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min([deadline, *wake]) - now)
            now = time.monotonic()

    # -- actions under way ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def watch(self, tab: Tab) -> Iterator[ActionWatch]:
        watch = ActionWatch(
            tab,
            settle=self.settle,
            guard=self._host.guard,
            window_opens=lambda: self._asks.count(tab.target_id) if tab.target_id else None,
            window_wait=lambda: self._asks.left(tab.target_id) if tab.target_id else 0.0,
        )
        # File pickers the action opens are held back (no native dialog nobody could answer) and
        # counted, on the tab's own session and its cross-site iframes' (an embedded upload
        # widget): Page.fileChooserOpened arrives before the action's click returns, where
        # Playwright's `filechooser` event can come many ms after it.
        main = self._target_sessions.get(tab.id)
        sessions = [
            s for s in (main, *self._frame_sessions.get(tab.id, ())) if s is not None and not s.closed
        ]
        stops = [
            s.on_events(("Page.fileChooserOpened",), lambda _m, _raw: watch.file_picker_opened())
            for s in sessions
        ]
        intercepting = self._intercepting.setdefault(tab.id, set())
        for session in sessions:
            if session not in intercepting:
                intercepting.add(session)
                if session is not main:
                    session.enable("Page")  # an iframe's session tells of its pickers once enabled
                session.send("Page.setInterceptFileChooserDialog", {"enabled": True})
        self._watches.append(watch)
        try:
            yield watch
        finally:
            self._watches.remove(watch)
            for stop in stops:
                stop()
            if not any(w.tab is tab for w in self._watches):
                for session in self._intercepting.pop(tab.id, ()):
                    if not session.closed:
                        session.send("Page.setInterceptFileChooserDialog", {"enabled": False})

    def dialog_opened(self, tab: Tab) -> None:
        """`tab` shows a dialog: it ends the wait of actions on that tab, and on the tabs it holds
        up (popups of one site share a thread: `Tab.blocked_by`)."""
        stopped = [w for w in self._watches if w.tab is tab or w.tab.blocked_by() is tab]
        for watch in stopped:
            watch.dialog_opened(tab, others=len(stopped) - 1)
        session = self._target_sessions.get(tab.id)
        if session is not None:
            self.spawn(self._title_behind_dialog(tab, session))

    @staticmethod
    async def _title_behind_dialog(tab: Tab, session: TargetSession) -> None:
        """The page's title as the browser has it: a dialog holds the page's script thread, and
        with it the page's own report of a title it set just before (`_titles`)."""
        with contextlib.suppress(Exception):  # closed, or its browser went: nothing to tell
            info = await asyncio.wait_for(session.send("Target.getTargetInfo"), DIALOG_TITLE_WAIT)
            tab.title_behind_dialog(str(info.get("targetInfo", {}).get("title", "")))

    @contextlib.contextmanager
    def creating(self, url: str = "") -> Iterator[None]:
        """A tool is opening a tab (to load `url` in it): opener-less targets that appear meanwhile
        are its own."""
        self._creating += 1
        self._creating_for = url
        try:
            yield
        finally:
            self._creating -= 1
            self._creating_for = ""

    @contextlib.contextmanager
    def holding_place(self) -> Iterator[None]:
        """A tool has room under the caps for a tab it opens (or is making it): until that tab is
        registered, a tab a page opens meanwhile cannot take its place (`_enforce_cap`)."""
        self._reserve(1)
        held = self._registered_by_tools
        try:
            yield
        finally:
            if self._registered_by_tools == held:  # its tab never came: free its place
                self._reserve(-1)

    def _reserve(self, places: int) -> None:
        """Hold (positive) or free (negative) places for tabs being opened by a tool, in this
        instance and in the total budget, if any."""
        places = max(places, -self._reserved)
        if not places:
            return
        self._reserved += places
        budget = self._services.rules.budget
        if budget is not None:
            budget.reserved += places

    def target_session(self, tab: Tab) -> TargetSession | None:
        return self._target_sessions.get(tab.id)

    # -- targets: the source of truth for which tabs exist -------------------------------------------

    def target_handlers(self) -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
        return [
            ("Target.targetCreated", self._on_target_created),
            ("Target.targetInfoChanged", self.target_changed),
            ("Target.targetDestroyed", self._on_target_destroyed),
            ("Target.targetCrashed", self._on_target_crashed),
        ]

    def _learn_context(self, info: TargetInfo, *, adopt: bool = True) -> list[TargetInfo]:
        pending = self._scope.learn(info)
        if adopt:
            self._adopt(pending)
        return pending

    def _adopt(self, pending: list[TargetInfo]) -> None:
        for info in pending:
            if self.registry.by_target(info["targetId"]) is None:
                self._create_tab(info, cause=None)

    def _on_target_created(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        if info.get("type") == "shared_worker":
            if self._services.target_hooks and self._scope.ours(info):
                self._shared_workers[info["targetId"]] = None
                while len(self._shared_workers) > SHARED_WORKERS_WAITING:
                    self._shared_workers.popitem(last=False)
            return
        known = self.registry.by_target(info.get("targetId", "")) is not None
        if self._is_open() and not known and self._scope.created(info):
            self._create_tab(info, cause=None)

    def target_changed(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        self._scope.changed(info)
        tab = self.registry.by_target(info.get("targetId", ""))
        if tab is not None:
            tab.update_from_target(url=info.get("url", ""), title=info.get("title", ""))
            tab.update_from_tab_strip(info)

    def _on_target_destroyed(self, event: dict[str, Any]) -> None:
        target_id = event.get("targetId", "")
        self._scope.gone(target_id)
        self._shared_workers.pop(target_id, None)
        tab = self.registry.by_target(target_id)
        # The extension's relay: the user took the tab back, or it went where the extension may not.
        left = _LEFT_SCOPE.get(event.get("leftScope", ""))
        by_user = bool(event.get("closedByUser"))  # the relay's too: not its page's close
        if tab is not None:
            tab.closed_by_user = by_user
            self.tab_gone(tab, left)
        for tab_id, (checked, was_active, _said) in self._checking.items():
            if checked.target_id == target_id:
                checked.closed_by_user = checked.closed_by_user or by_user
                self._checking[tab_id] = (checked, was_active, True)
                if left is not None:  # its page's close came first and is being checked: this is why
                    checked.closing_cause = left
                break

    def _on_target_crashed(self, event: dict[str, Any]) -> None:
        tab = self.registry.by_target(event.get("targetId", ""))
        if tab is not None:
            tab.mark_crashed()

    def _create_tab(
        self, info: TargetInfo, *, cause: OpenCause | None, preexisting: bool = False
    ) -> Tab | None:
        """Register a tab for a page target of this instance at once, and attach to it."""
        # A new tab's target names no URL yet: the window its opener asked for does.
        asked_url = self._asks.arrived(info["openerId"]) if info.get("openerId") and not preexisting else ""
        opener = self.registry.by_target(info.get("openerId") or "")
        cause = cause or open_cause(info, creating=bool(self._creating))
        # The action on the opener's tab opened it; so did the action whose tab opened the opener
        # (a popup whose page opens another as it loads: one click, two tabs).
        watches = [
            w for w in self._watches if opener is not None and (w.tab is opener or opener.id in w.opened)
        ]
        if opener is None and cause == "external" and not preexisting:
            # A middle or modifier click opens its tab with no opener (noopener); it appeared while
            # the only action under way here ran, or the only input among reads: that action's.
            inputs = [w for w in self._watches if w.gives_input]
            doers = list(self._watches) if len(self._watches) == 1 else inputs if len(inputs) == 1 else []
            if doers:
                watches = doers
                opener = self.registry.get(watches[0].tab.id)
                cause = "link"
        tab_id, users_before = self._services.next_tab_id(info.get("targetId"))
        if users_before is not None:  # back under its id
            self._back.add(tab_id)
        tab = Tab(
            tab_id,
            self._host,
            target_id=info.get("targetId"),
            opener_id=opener.id if opener is not None else None,
            cause=cause,
            url=info.get("url", ""),
            asked_url=asked_url,
            title=info.get("title", ""),
            # The extension says which of its tabs the user shared (or are shared as every tab
            # is): after a restart of the server, the agent's own tabs are there already too. A
            # tab back under its id (its browser connected again) is whose it was.
            users_own=users_before
            if users_before is not None
            else self._users_browser
            and (
                (cause == "external" and bool(info.get("usersOwn", True)))
                # A tab the user's own tab opened while the agent did nothing there: the user's
                # click (or their page's script), not the agent's doing.
                or (opener is not None and opener.users_own and not watches)
            ),
        )
        tab.update_from_tab_strip(info)
        self.registry.add(tab)
        if cause == "tool" and not preexisting:
            if self._creating_for:
                self._opening_urls[tab.id] = self._creating_for
            self._registered_by_tools += 1
            self._reserve(-1)  # counted now: its place is free
        self._changed.set()
        for watch in watches:
            watch.tab_created(tab.id, shared=len(watches) > 1)
        if preexisting or cause != "tool":
            self.registry.track_in_background(tab)  # tracked, not activated: the agent decides
        self._attach(tab)
        if cause != "tool" and not preexisting:
            if self._enforce_cap(tab):
                return None
            if self._services.rules.follow_new_tabs and all(w.follow is not False for w in watches):
                self._follow.add(tab.id)
        asyncio.get_running_loop().call_later(ANNOUNCE_TIMEOUT, self._announce_late, tab)
        return tab

    def _attach(self, tab: Tab) -> None:
        """Attach a session to the tab's target at once, for the windows its page asks for and for
        the target hooks (telemetry): the attach and the first commands leave together, before the
        page can start loading."""
        sessions, target_id = self.sessions, tab.target_id
        if sessions is None or target_id is None:
            return
        session = sessions.attach(target_id)

        def on_window_open(_method: str, raw: str) -> None:
            # The user's browser blocks popups no gesture asked for (a browser Playwright launches
            # does not): such a window most likely never comes.
            params = json.loads(raw).get("params", {})
            blockable = self._popups_blocked and not params.get("userGesture")
            wait = BLOCKABLE_WAIT if blockable else NEW_TAB_TIMEOUT
            self._asks.asked(target_id, url=str(params.get("url", "")), wait=wait)
            self._changed.set()

        for hook in list(self._services.target_hooks):
            tab.add_disposer(hook(session, tab))

        def on_child(child: TargetSession) -> None:
            # A cross-site iframe runs in a target of its own: the hooks see it as part of the tab,
            # and an action's file pickers are held back in it too.
            disposers = [hook(child, tab) for hook in list(self._services.target_hooks)]
            if child.kind == "iframe":
                frames = self._frame_sessions.setdefault(tab.id, set())
                frames.add(child)
                disposers.append(lambda: frames.discard(child))

            def release() -> None:
                for dispose in disposers:
                    dispose()

            child.on_close(release)
            if child.kind == "iframe":  # its own iframes of other sites (and workers), in turn
                if self._services.target_hooks:
                    child.on_events(("Network.requestWillBeSent",), self._shared_worker_of(tab))
                child.attach_children(on_child)

        session.attach_children(on_child)
        if self._services.target_hooks:
            tab.add_disposer(session.on_events(("Network.requestWillBeSent",), self._shared_worker_of(tab)))
        tab.add_disposer(watch_titles(session, tab.title_reported))
        # After the hooks' commands: telemetry's Network.enable must be in place before the page's
        # first request; the windows a page asks for come later.
        tab.add_disposer(session.on_events(("Page.windowOpen",), on_window_open))
        tab.add_disposer(session.on_events(DOCUMENT_EVENTS, lambda m, raw: self._on_document(tab, m, raw)))
        if self._refuses is not None:
            refuses = self._refuses
            tab.add_disposer(guard_documents(session, lambda url, in_frame: refuses(tab, url, in_frame)))
        session.send("Page.enable")
        self._target_sessions[tab.id] = session

        def forget() -> None:
            self._target_sessions.pop(tab.id, None)
            self._frame_sessions.pop(tab.id, None)
            self._intercepting.pop(tab.id, None)
            self._asks.forget(target_id)

        tab.add_disposer(forget)

    def _shared_worker_of(self, tab: Tab) -> Callable[[str, str], None]:
        """A listener of a tab's requests (heard only while the target hooks have Network on) that
        hands the target hooks a shared worker the tab's page or iframe started: Chromium requests
        the worker's script in that target, under the worker's target id. A shared worker may serve
        several tabs; it is recorded as the tab's that started it, while that tab is open."""

        def on_request(_method: str, raw: str) -> None:
            if not self._shared_workers:
                return  # nearly always: parsed only while a new shared worker's tab is not known
            worker_id = json.loads(raw).get("params", {}).get("requestId")
            if worker_id in self._shared_workers and self.sessions is not None and not tab.closed:
                del self._shared_workers[worker_id]
                worker = self.sessions.attach(worker_id, kind="shared_worker")
                disposers = [hook(worker, tab) for hook in list(self._services.target_hooks)]

                def release() -> None:
                    for dispose in disposers:
                        dispose()

                def detach() -> None:  # the worker may serve other tabs on: the tab's recording ends
                    if not worker.closed:
                        self.spawn(worker.detach(), settle=False)

                worker.on_close(release)
                tab.add_disposer(detach)

        return on_request

    def _on_document(self, tab: Tab, method: str, raw: str) -> None:
        was_due = tab.document_due
        url = _document_event(tab, method, raw)
        if not tab.is_ready and tab.id not in self._announced:
            if url is not None:
                # Playwright reports a new tab once its first page has come: one whose server is
                # slow is announced without waiting for that (`DUE_ANNOUNCE`).
                asyncio.get_running_loop().call_later(DUE_ANNOUNCE, self._announce_if_due, tab)
            elif method == "Page.frameStoppedLoading" and was_due and not tab.document_due:
                # Loading ended without a first page (HTTP 204): Playwright does not report such
                # a tab by itself (`Tab.ready` makes it), so it is announced now.
                asyncio.get_running_loop().call_later(DUE_ANNOUNCE, self._announce_if_unready, tab)
        if url is None or not self._watches:
            return
        # A page can send only the tabs of its own opener family elsewhere (it needs a handle on
        # their window: its opener, a popup it opened, one named in the family): the actions
        # under way on those are told, so their answers say that tab's old refs are gone.
        family = self._family(tab.id)
        for watch in self._watches:
            if watch.tab is not tab and self._family(watch.tab.id) == family:
                watch.tab_loading(tab.id, url)

    def _family(self, tab_id: int) -> int:
        """The first tab of a tab's opener chain (the earliest known: an opener that closed still
        names the family of the tabs it opened)."""
        root, seen = tab_id, {tab_id}
        while (tab := self.registry.get(root)) is not None and tab.opener_id is not None:
            if tab.opener_id in seen:
                break
            root = tab.opener_id
            seen.add(root)
        return root

    def _enforce_cap(self, new_tab: Tab) -> bool:
        """Close a tab at once when a page-opened one goes over the cap; True if it was `new_tab`."""
        rules = self._services.rules
        over_total = rules.budget is not None and rules.budget.over
        over_own = self.registry.staying() + self._reserved > rules.max_tabs
        if not over_own and not over_total:
            return False
        victim = None
        if rules.tab_limit_policy == "close-oldest":
            # Over the total alone, the oldest tab of all the manager's instances makes room.
            victim = (
                self._services.oldest_tab(new_tab)
                if not over_own
                else self.registry.cap_victim(exclude=new_tab)
            )
        victim = victim or new_tab
        if victim is not new_tab and self.registry.get(victim.id) is not victim:  # another instance's
            self._services.drop_for_room(victim)
            return False
        self.drop_for_cap(victim, over_total=not over_own)
        return victim is new_tab

    def drop_for_cap(self, victim: Tab, *, over_total: bool) -> None:
        """Close `victim` for a tab cap at once: it leaves the list now, its target closes in the
        background. `over_total`: for the cap shared with other managers, not this instance's."""
        victim.closing_cause = "cap"
        victim.over_total = over_total
        self.spawn(self.close_target(victim))
        self.tab_gone(victim, "cap")

    def close_target(self, tab: Tab) -> Awaitable[Any]:
        """Close the tab's target through CDP (a tab Playwright has no page for, or a page that
        would not close), whatever state it is in; await the result to know it was done."""
        session = self._target_sessions.get(tab.id)
        if session is not None:
            # A new popup may still be held at its start for Playwright (it attaches to new
            # targets waiting for the debugger); held in its opener's renderer, it holds the opener
            # too, and a close of it would wait on it. Let it run first (now, before the session
            # goes with the tab): the close follows in order.
            session.send("Runtime.runIfWaitingForDebugger")
        if self.cdp is None or not tab.target_id:
            return asyncio.sleep(0)
        return self.cdp.send("Target.closeTarget", {"targetId": tab.target_id})

    # -- pages: Playwright's side of a tab ----------------------------------------------------------

    async def adopt_existing(
        self, pages: list[PageHandle], cause: OpenCause, *, foreign: Iterable[str] = ()
    ) -> None:
        """Register the pages the context had when the instance started, in their order.
        `foreign`: contexts other clients made, whose pages are not this instance's."""
        self._scope.foreign = frozenset(foreign)
        found = await asyncio.gather(
            *(identify(self._context, p, loaded=True, spawn=self.spawn) for p in pages)
        )
        pending: list[TargetInfo] = []
        for page, identified in zip(pages, found, strict=True):
            if identified is None:
                continue
            pending += self._learn_context(identified.info, adopt=False)
            tab = self.registry.by_target(identified.info["targetId"])
            if tab is None and not self._scope.ours(identified.info):
                continue  # a page of a context another client made
            tab = tab or self._create_tab(identified.info, cause=cause, preexisting=True)
            if tab is not None and not tab.closed:
                self._bind(tab, page, identified.window_id, identified.complete)
        self._adopt(pending)

    def on_page(self, page: PageHandle) -> None:
        if self._is_open():
            self.bind_task(page)

    def on_dialog(self, page: PageHandle | None, dialog: DialogHandle) -> None:
        """A dialog of a page of the context: to the page's tab. A page that is no tab of ours
        gets Playwright's own answer (`answer_unseen`)."""
        self.with_tab(
            page, lambda tab: tab.on_dialog(dialog), lambda: self.spawn(dialog.answer_unseen(), settle=False)
        )

    def with_tab(
        self, page: PageHandle | None, use: Callable[[Tab], object], otherwise: Callable[[], object]
    ) -> None:
        """`use(tab)` with the tab of `page`, at once if the page is bound to one, else once it is
        (a popup may ask before that: it waits for the binding); `otherwise()` if the page is no
        tab of ours (not while the instance closes)."""
        tab = next((t for t in self.registry.tabs if t.is_ready and t.handle is page), None)
        if tab is not None:
            use(tab)
            return
        binding = self._binding.get(page) if page is not None else None
        if binding is None:
            otherwise()
            return

        def bound(task: asyncio.Task[Tab | None]) -> None:
            found = None if task.cancelled() or task.exception() is not None else task.result()
            if found is not None and not found.closed:
                use(found)
            elif self._is_open():
                otherwise()

        binding.add_done_callback(bound)

    def bind_task(self, page: PageHandle) -> asyncio.Task[Tab | None]:
        task = self._binding.get(page)
        if task is None:
            task = self._binding[page] = self.spawn(self._bind_page(page))
            task.add_done_callback(lambda _t: self._binding.pop(page, None))
        return task

    async def _bind_page(self, page: PageHandle) -> Tab | None:
        found = await identify(self._context, page, loaded=False, spawn=self.spawn)
        if found is None or not self._is_open():
            return None
        self._learn_context(found.info)
        tab = self.registry.by_target(found.info.get("targetId", ""))
        if tab is None:
            if not self._scope.ours(found.info):
                return None
            tab = self._create_tab(found.info, cause=None)
        if tab is None or tab.closed:
            return None
        self._bind(tab, page, found.window_id, found.complete)
        return tab

    def _bind(self, tab: Tab, page: PageHandle, window_id: int | None, complete: bool) -> None:
        tab.bind(page, window_id=window_id, complete=complete)
        self._announce(tab)

    def _announce_late(self, tab: Tab) -> None:
        self._announce(tab)
        if tab.first_page_refused:
            # Playwright reports no page for it, ever: every call on the tab would wait in vain, and
            # the list would show it loading for good. It shows nothing: give it the empty page.
            self.spawn(tab.host.load_blank(tab))

    def _announce_if_due(self, tab: Tab) -> None:
        if not tab.is_ready and tab.document_due:
            self._announce(tab)

    def _announce_if_unready(self, tab: Tab) -> None:
        if not tab.is_ready:
            self._announce(tab)

    def _announce(self, tab: Tab) -> None:
        if tab.id in self._announced or tab.closed:
            return
        self._announced.add(tab.id)
        self._changed.set()
        # A tab whose browser is connected again is back under its id: not new, nobody opened it.
        back = {"back": True} if tab.id in self._back else {}
        self._back.discard(tab.id)
        # A page still on its way (a slow server), or the one the tool that opened the tab loads
        # next: the URL it loads, not the about:blank it shows.
        loads = tab.due_url or self._opening_urls.pop(tab.id, "")
        url = loads if loads and tab.url in ("", "about:blank") else tab.named_url
        self._host.emit("tab_opened", tab.id, openerId=tab.opener_id, url=url, cause=tab.cause, **back)
        if tab.id in self._follow:
            self._follow.discard(tab.id)
            self._activate(tab)
        for then in self._after_announce.pop(tab.id, []):
            then()

    def once_announced(self, tab: Tab, then: Callable[[], object]) -> None:
        """`then()` once `tab` has been announced (its `tab_opened` sent), at once if it has: what
        is said of a tab comes after the news that it opened."""
        if tab.id in self._announced:
            then()
        elif not tab.closed:
            self._after_announce.setdefault(tab.id, []).append(then)

    # -- tabs going away -----------------------------------------------------------------------------

    def tab_gone(self, tab: Tab, cause: CloseCause | None) -> None:
        """Forget a tab at once; promote the previously active tab if it was active."""
        if tab.closed:
            return
        self._follow.discard(tab.id)  # a tab that goes is not made active on its way out
        self._announce(tab)  # a tab is announced before it is reported closed
        self._after_announce.pop(tab.id, None)
        tab.mark_closed()
        was_active = self.registry.remove(tab)
        if tab.target_id:
            self._scope.gone(tab.target_id)
        cause = cause or tab.closing_cause
        tab.closing_cause = cause  # why, for the errors of the calls it cut short
        if cause is None and self.cdp is not None and self._is_open():
            # A dying browser reports its pages closed ~40 ms before itself: ask the browser whether
            # it is still there before calling this close the page's or another client's doing.
            self._checking[tab.id] = (tab, was_active, False)
            self.spawn(self._report_unexplained_close(tab))
            return
        self._report_close(tab, cause or self._unexplained_close_cause(tab), was_active)

    async def _report_unexplained_close(self, tab: Tab) -> None:
        try:
            # The browser must still answer, and still be there a moment later, before the close
            # is the page's or another client's doing; otherwise it is the browser's crash.
            await asyncio.gather(self._alive(), asyncio.sleep(CLOSE_GRACE))
        finally:
            # Reported exactly once (unless the instance was lost meanwhile and reported it), also
            # when cancelled because the instance is being closed.
            checked = self._checking.pop(tab.id, None)
            if checked is not None:
                cause = (
                    self.lost_cause
                    if self._state() == "lost"
                    else tab.closing_cause or self._unexplained_close_cause(tab)
                )
                self._report_close(tab, cause, checked[1])

    def _unexplained_close_cause(self, tab: Tab) -> CloseCause:
        return "page" if tab.may_close_itself else self._closed_outside

    def closed_every_tab_first(self) -> bool:
        """Whether every tab went before the browser did, each close still being checked: a browser
        that quits in order (its last window closed, told to quit) closes its pages first, where a
        killed or crashed one takes them along."""
        return (
            bool(self._checking)
            and not len(self.registry)
            and all(said for _tab, _active, said in self._checking.values())
        )

    def report_checked_closes(self) -> list[Tab]:
        """The browser is gone: the closes still being checked were its doing; report them now.
        Returns those tabs (a browser connected again may still have their pages)."""
        checking, self._checking = self._checking, {}
        for tab, was_active, _said in checking.values():
            self._report_close(tab, self.lost_cause, was_active)
        return [tab for tab, _active, _said in checking.values()]

    def _report_close(self, tab: Tab, cause: CloseCause, was_active: bool) -> None:
        self._announced.discard(tab.id)
        if self._state() == "closing":
            # The whole instance is closed on purpose: none of its tabs becomes active, and which
            # tab is active now is the manager's to say (another instance may be the default).
            was_active = False
        active = self.registry.active if self._is_open() else None
        new_active = active.id if active is not None else None
        # Which cap: the instance's own, or the total shared with other managers (`TabBudget`).
        limit = {"limit": "total" if tab.over_total else "own"} if cause == "cap" else {}
        self._host.emit(
            "tab_closed",
            tab.id,
            by=cause,
            activeTabId=new_active,
            activeChanged=was_active,
            url=tab.named_url,
            **limit,
        )
        if was_active and new_active is not None:
            self._host.emit("tab_activated", new_active, previousTabId=tab.id, reason="promoted")


_LEFT_SCOPE: dict[str, CloseCause] = {"unshared": "unshared", "privileged": "privileged"}
"""Why the extension's relay says a tab left scope (`leftScope`), as its close cause."""

DOCUMENT_EVENTS = ("Page.frameStartedNavigating", "Page.frameNavigated", "Page.frameStoppedLoading")
"""What a page's session says of its documents: one asked for, one arrived, loading over."""
_SAME_DOCUMENT = frozenset({"sameDocument", "historySameDocument"})
BFCACHE_RESTORE = "BackForwardCacheRestore"
"""`Page.frameNavigated`'s type for a page restored from the back/forward cache: the user's own
Chrome keeps one (a browser Playwright launches does not)."""


def _document_event(tab: Tab, method: str, raw: str) -> str | None:
    """Keep `Tab.document_due` true from the moment the browser starts loading a new document
    into the tab's main frame (a link, a form, a script, tabpilot's own navigation) until it
    arrives or loading ends without one (a download, HTTP 204): the page answers nothing
    meanwhile, and a click that started it must not read as a page stuck in a script. The tab is
    `loading` from that moment too, as the browser's own tab strip shows it. Returns the URL of
    a new document the tab started loading (None for any other event)."""
    params = json.loads(raw).get("params") or {}
    if params.get("frameId", (params.get("frame") or {}).get("id")) != tab.target_id:
        return None  # an iframe's
    if method == "Page.frameNavigated":
        tab.document_settled()
        if params.get("type") == BFCACHE_RESTORE:
            # A page back from the back/forward cache loads nothing: no load event comes.
            tab.restored_from_cache(str((params.get("frame") or {}).get("url", "")))
    elif method == "Page.frameStoppedLoading":
        tab.loading_stopped()
    elif params.get("navigationType") not in _SAME_DOCUMENT:
        url = str(params.get("url", ""))
        tab.document_requested(url)
        return url
    return None


DIALOG_TITLE_WAIT = 2.0
"""Seconds the browser has to say a tab's title when a dialog opens on it."""
