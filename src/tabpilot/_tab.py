"""One tab: a page target with a stable id, its state, its dialog and its element refs.

A tab exists from the moment Chromium creates its target (`Target.targetCreated`): its id, opener,
url and title are known at once. Playwright reports the page a little later; until then the tab
is not `ready` and page work waits for it (`await tab.ready()`).

A tab knows nothing of the instance that holds it beyond `TabHost`, what the instance gives it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from ._errors import (
    ActionError,
    DialogOpenError,
    ForeignRefError,
    NavigationBlockedError,
    NoDialogError,
    StaleRefError,
    TabCrashedError,
    TabLike,
    TabNotFoundError,
    check_switch,
    manager_closed,
    text_given,
)
from ._policy import UrlPolicy
from ._pw import (
    ERROR_PAGE,
    DialogHandle,
    Disposer,
    Doing,
    DownloadHandle,
    ElementHandle,
    Page,
    PageHandle,
    is_closed_error,
    map_playwright_errors,
)
from ._refs import (
    FrameRefs,
    cut_at_depth,
    has_field_values,
    mask_passwords,
    parse_ref,
    scope_snapshot,
    tab_ref,
)
from ._types import CloseCause, DialogInfo, EventType, OpenCause, TabStatus, closed_reason
from ._watch import ActionWatch, retrieve_outcome

T = TypeVar("T")
S = TypeVar("S")

READY_TIMEOUT = 10.0
"""Seconds page work waits for Playwright to report a tab whose target exists already."""
REF_CHECK_TIMEOUT = 5.0
RESPONSIVE_TIMEOUT = 1.0
"""Seconds a page has to answer a trivial script before it counts as not responding."""
STAYS_OPEN = ("unshared", "unreachable", "released", "privileged")
"""Close causes of a tab that left the agent's reach but stays open in its browser."""
TREE_READ_GRACE = 5.0
"""Seconds at least a page whose snapshot timed out has to answer, to count as one whose tree
took the time (it goes on building it) rather than one stuck in a script."""
CLOSE_NOTICE = 0.5
"""Seconds within which a page whose document ended under a call without a navigation is seen
closing, if that is what ended it."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An accessibility snapshot of one tab: `text` shows its refs scoped to the tab (`3e5`), the
    form every action takes; `refs` holds them as the page names them (`e5`)."""

    tab_id: int
    url: str
    title: str
    text: str
    refs: frozenset[str]
    """Per-page refs (`e5`) the snapshot contained."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    action: float
    navigation: float


class TabHost(Protocol):
    """What a tab needs of the instance that holds it."""

    @property
    def instance_id(self) -> str: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def policy(self) -> UrlPolicy: ...

    @property
    def renders_in_background(self) -> bool:
        """Whether a tab behind another may be brought to front for an action (no one sees it)."""
        ...

    def emit(self, type: EventType, tab_id: int, **data: Any) -> None: ...

    def dialog_opened(self, tab: Tab, dialog: DialogInfo) -> None: ...

    def download_began(self, tab: Tab, download: DownloadHandle) -> None:
        """A page of `tab` began a download (told already): keep its file, tell when it is done."""
        ...

    async def load_blank(self, tab: Tab) -> None:
        """Have `tab`'s page (not reported by Playwright yet) load about:blank."""
        ...

    def page_closed(self, tab: Tab) -> None: ...

    def open_tabs(self) -> Sequence[TabLike]: ...

    def check_alive(self) -> bool: ...

    @property
    def tabs(self) -> Sequence[Tab]:
        """The instance's open tabs."""
        ...

    def ensure_usable(self) -> None:
        """Raise if the instance cannot do page work now (lost, closed, its browser unreachable)."""
        ...

    async def ensure_answering(self) -> None:
        """Raise the instance's loss, with its reason, if its browser no longer answers at all."""
        ...

    async def guard(self, job: Awaitable[T]) -> T:
        """Await page work, failing at once if the browser becomes unreachable meanwhile."""
        ...

    def activate_tab(self, tab_id: int) -> bool:
        """Make the tab with this id (of the same instance) active; False if it is not open."""
        ...

    @property
    def active_tab(self) -> Tab | None:
        """The instance's active tab."""
        ...

    def watch(self, tab: Tab) -> AbstractContextManager[ActionWatch]:
        """Watch an action on `tab`: the dialog it raises and the tabs it opens."""
        ...


class Tab:
    """A page of an instance. Its id never changes and is never given to another tab."""

    def __init__(
        self,
        tab_id: int,
        host: TabHost,
        *,
        target_id: str | None,
        opener_id: int | None,
        cause: OpenCause,
        url: str = "",
        title: str = "",
        users_own: bool = False,
        asked_url: str = "",
    ) -> None:
        self.id = tab_id
        self.host = host
        self.target_id = target_id
        self.opener_id = opener_id
        self.cause: OpenCause = cause
        self.users_own = users_own
        """A tab of the user's own browser that neither tabpilot nor a page of the agent's tabs
        opened (one the user shares): `close_others` and the tab cap leave it open, and it does not
        count against the cap. Closing it by its id still closes it."""
        self.window_id: int | None = None
        self.chrome_tab_id: int | None = None
        """Chrome's own tab id (tabs of the user's browser, reached through the extension)."""
        self._strip_pinned: bool | None = None
        self.pinned = False
        self.status: TabStatus = "loading"
        self.closed = False
        self.closing_cause: CloseCause | None = None
        """Set when tabpilot itself closes the tab (a tool, the tab cap): not the page's doing."""
        self.closed_by_user = False
        """The user closed it (the extension tells: with its window, or in the tab strip): not its
        page's doing."""
        self.over_total = False
        """Closed by the tab cap: the total one shared with other managers (`TabBudget`), not its
        manager's own `max_tabs`."""
        self._url = url
        self.asked_url = asked_url
        """The URL its opener's page asked its window to load (`Page.windowOpen`), until its first
        navigation ends: "" for a tab no page opened, or whose ask was not heard."""
        self._title = title
        self._title_href: str | None = None
        """The URL the page last reported its title with (`_titles`)."""
        self._handle: PageHandle | None = None
        self._bound: asyncio.Event | None = None
        self._dialog: DialogHandle | None = None
        self._dialog_waiters: set[asyncio.Future[DialogInfo]] = set()
        self._navigation_waiters: set[asyncio.Future[None]] = set()
        self._restored_url: str | None = None
        """The URL of a page restored from the back/forward cache whose commit Playwright has not
        reported yet (`restored_from_cache`): that page has loaded already."""
        self._held: set[asyncio.Future[Any]] = set()
        """Work this tab's dialog holds up (a script that opened it), until it is done (`hold`)."""
        self._refs: set[str] = set()
        self._frame_refs = FrameRefs()
        """How the refs of the page's iframes are named on this tab (an iframe's next document gets
        names of its own)."""
        self._refs_reset: tuple[frozenset[str], str] | None = None
        """The refs the page lost without changing, and why (`refs_reset`), until the next snapshot
        or document."""
        self._refs_left: frozenset[str] = frozenset()
        """The refs of the last document that had any, once the tab has loaded another: a ref
        of them is said to be of an earlier page (a page that moved on by itself, on a timer)."""
        self._last_snapshot: Snapshot | None = None
        self._part_reads = 0
        """Snapshots of a subtree (`snapshot(ref=...)`) under way: Playwright's ref map holds only
        the subtree's elements from their read until the whole page is read again after it, and a
        ref outside it matches nothing meanwhile (`element` waits for them)."""
        self._part_reads_begun = 0
        """How many such snapshots have begun: one that began while a ref was checked may have hidden it."""
        self._whole_map = asyncio.Event()
        """Set while no subtree snapshot is under way: Playwright's ref map is the whole page's."""
        self._whole_map.set()
        self._disposers: list[Disposer] = []
        self._title_task: asyncio.Task[None] | None = None
        self._input_turns: deque[asyncio.Future[None]] = deque()
        """Actions that use the page's input, in the order they asked (`input_turn`); the first runs."""
        self.turns_taken = 0
        """Input actions and navigations that began on the tab so far (in their `input_turn`; one
        refused before it acted, for a stale ref or a field that cannot take its value, is not
        counted): a count that grew since an action's own means another action used the tab after
        it."""
        self._document_due = False
        """A navigation asked for a document that has not arrived yet (`expecting_document`,
        `document_requested`)."""
        self._due_url = ""
        """The URL of that document, when the browser said it ('' until then)."""
        self._stuck = False
        """The page did not answer a trivial script the last time it was asked (`raise_what_the_page_says`),
        and no new document came since."""
        self._nothing_came = False
        """Its first page's navigation ended before Playwright reported the page, with no document
        (an HTTP 204 answer to the URL a page opened it with): Playwright reports such a page only
        once a document arrives (`ready` has one load)."""
        self._blocked: NavigationBlockedError | None = None
        """The last navigation of the tab's page that the URL policy refused (`navigation_blocked`)."""
        self.block_told: tuple[str, bool, str, float] | None = None
        """The URL, frame or not, which check refused it, and when (monotonic), of the last refusal
        of a navigation of the tab that the instance heard of."""

    def __repr__(self) -> str:
        # A tab a page opened names the URL it was asked to load until its page comes (`url` is ''
        # then); a closed or crashed tab says so (its page is gone: work on it fails).
        state = " closed" if self.is_gone else " crashed" if self.status == "crashed" else ""
        return f"<Tab {self.id}{state} {self.named_url!r}>"

    # -- state read without a browser round trip ---------------------------------------------

    @property
    def instance_id(self) -> str:
        return self.host.instance_id

    @property
    def url(self) -> str:
        """The page's URL; on Chromium's error page, the URL that failed to load (the document's
        own is `chrome-error://chromewebdata/`; the target's record, like the address bar, keeps
        the one that failed)."""
        return self.location()[0]

    @property
    def named_url(self) -> str:
        """The URL its events name it by: its page's, or for a tab with no page yet (a popup the
        tab cap closed at once, one still on about:blank), the one its opener asked it to load."""
        url = self.url
        return self.asked_url if self.asked_url and url in ("", "about:blank") else url

    @property
    def first_page_refused(self) -> bool:
        """Whether the page its opener asked for never started loading: the browser refused it
        (a page may not send a new tab to a `data:` URL) and the tab has no page at all."""
        return (
            self._handle is None
            and not self.closed
            and not self._document_due
            and self._url in ("", "about:blank")
            and bool(self.asked_url)
            and not self.asked_url.startswith("about:")
        )

    @property
    def _document_url(self) -> str:
        """The URL of the document the tab shows (`chrome-error://chromewebdata/` on the error page)."""
        handle = self._handle
        return handle.url if handle is not None and not handle.is_closed() else self._url

    @property
    def error_page(self) -> bool:
        """Whether the tab shows Chromium's error page: its URL failed to load."""
        return self._document_url.startswith(ERROR_PAGE)

    @property
    def blocked(self) -> bool:
        """Whether the tab shows the browser's error page because the URL policy refused its URL
        (a link, a form or a script led it there: the instance aborts such navigations). Judged
        by the URL: a new tab's first navigation is refused before its page is known as this tab."""
        url, _title, error_page = self.location()
        policy = self.host.policy
        return error_page and policy.restricts and not policy.allows(url)

    @property
    def last_blocked(self) -> NavigationBlockedError | None:
        """The last navigation of the tab's page that the URL policy refused (`navigation_blocked`)."""
        return self._blocked

    @property
    def title(self) -> str:
        """The page's title ('' on the error page, whose title is only the host that failed)."""
        return self.location()[1]

    def location(self) -> tuple[str, str, bool]:
        """`url`, `title` and `error_page` together, from one look at the document's URL (each
        look crosses Playwright's API layer; a list of 100 tabs made 300 of them)."""
        document = self._document_url
        if not document.startswith(ERROR_PAGE):
            return document, self._title, False
        if self._url and not self._url.startswith(ERROR_PAGE):
            return self._url, "", True
        # Chromium's record may not have the failed URL yet (a new tab's first page refused by
        # the URL policy): the refusal names it.
        return (self._blocked.url if self._blocked is not None else document), "", True

    @property
    def title_live(self) -> bool:
        """Whether `title` is the page's own, reported for the tab's current document (no need to ask)."""
        return self._title_href is not None and self._title_href == self._document_url

    @property
    def dialog(self) -> DialogInfo | None:
        d = self._dialog
        return DialogInfo(d.type, d.message, d.default_value) if d else None

    @property
    def holds_work(self) -> bool:
        """Whether work held up by this tab's dialog (a script that opened it) is still running."""
        return bool(self._held)

    @property
    def last_snapshot(self) -> Snapshot | None:
        """The latest snapshot of the whole page (not of a subtree, nor cut at a depth)."""
        return self._last_snapshot

    @property
    def counts_against_cap(self) -> bool:
        """Whether it counts against a tab cap (an instance's, or a total budget's): open with no
        close under way (another call's, or the cap's), and not the user's own (`users_own`)."""
        return self.closing_cause is None and not self.users_own

    @property
    def may_close_itself(self) -> bool:
        """Whether its page may close it (`window.close()`): only a tab a page opened (a popup,
        a link's new tab), and not one the user closed (the extension tells). A close of any other
        that tabpilot did not make came from outside."""
        opened_by_page = self.opener_id is not None or self.cause in ("link", "popup")
        return opened_by_page and not self.closed_by_user

    @property
    def is_gone(self) -> bool:
        """Closed, or closing: its page is gone even if the close is still being reported."""
        return self.closed or (self._handle is not None and self._handle.is_closed())

    @property
    def leaving(self) -> bool:
        """Gone (`is_gone`), or its close under way (a call's, the tab cap's): not a page to show."""
        return self.is_gone or self.closing_cause is not None

    @property
    def is_ready(self) -> bool:
        return self._handle is not None

    @property
    def handle(self) -> PageHandle:
        """The page, for page work; `await ready()` first."""
        if self._handle is None:
            raise ActionError(
                f"Tab {self.id} is still opening.", "Wait a moment and retry.", tab_id=self.id, reason="busy"
            )
        return self._handle

    @property
    def page(self) -> Page:
        """Playwright's `Page` of this tab, for what tabpilot does not wrap (`await ready()` first)."""
        return self.handle.page

    async def ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until Playwright reports this tab's page (at once for every tab but a brand-new one).

        Playwright reports a page a page opened once its first document arrives: while that
        document's server has not sent it, the wait ends after the action timeout with the error
        that says so (`loading_error`), as work on a loaded tab's page would; when its navigation
        ended with no document (HTTP 204), the tab is given an empty one (about:blank, what it
        shows) so that Playwright reports it and it takes work."""
        self.ensure_open()
        if self._handle is not None:
            return
        if self._bound is None:
            self._bound = asyncio.Event()
        loop = asyncio.get_running_loop()
        started = loop.time()
        while self._handle is None:
            waited = loop.time() - started
            if self._nothing_came:
                self._nothing_came = False
                await self.host.load_blank(self)
            elif self.document_due and waited >= min(timeout, self.host.timeouts.action):
                # Until its first page comes, the tab takes no other either: wait, or close it.
                raise self.loading_error(
                    ActionError(
                        f"Tab {self.id} did not finish opening within {waited:.0f} s.", "", tab_id=self.id
                    ),
                    or_else="close the tab",
                )
            if waited >= timeout:
                raise ActionError(
                    f"Tab {self.id} did not finish opening within {timeout:g} s.",
                    "Retry, or close the tab.",
                    tab_id=self.id,
                    reason="busy",
                )
            with contextlib.suppress(TimeoutError):  # a look every 0.1 s at what the browser said meanwhile
                await asyncio.wait_for(self._bound.wait(), min(0.1, timeout - waited))
            self.ensure_open()

    async def usable(self) -> PageHandle:
        """The page, for page work: once ready, and refused while a dialog blocks it, after its
        page crashed (Playwright takes no more work for a crashed page) or while its browser cannot
        be reached."""
        self.ensure_open()
        self.host.ensure_usable()  # fails at once when the browser cannot be reached, never waits
        await self.ready()
        self.ensure_no_dialog()
        if self.status == "crashed":
            raise TabCrashedError(self.id, self.url)
        return self.handle

    # -- what the instance tells the tab -------------------------------------------------------

    def bind(self, handle: PageHandle, *, window_id: int | None, complete: bool) -> None:
        """The tab's page, as Playwright reports it; the tab listens to it from now on."""
        self._handle = handle
        self.window_id = window_id if window_id is not None else self.window_id
        if complete and self.status == "loading":
            self.status = "complete"
        self._disposers += [
            handle.on_close(lambda: self.host.page_closed(self)),
            handle.on_crash(self.mark_crashed),
            handle.on_download(self._on_download),
            handle.on_load(self._on_load),
            handle.on_new_document(self._on_new_document),
            handle.on_navigated(self._on_navigated),
            handle.on_frame_navigated(self._frame_refs.frames_moved),
        ]
        if self._bound is not None:
            self._bound.set()
        # A page that loaded before it was bound (a fast popup) sent its load event to nobody.
        self._fetch_title_soon(check_loaded=True)

    def update_from_target(self, *, url: str, title: str) -> None:
        """Chromium's own record of the target changed (url; title rarely: it sends few title changes)."""
        if url:
            self._url = url
        if title and not self.title_live and (title != url or not self._title):
            self._title = title

    def title_reported(self, title: str, href: str) -> None:
        """The page's title and URL, as its document reported them (`_titles`); an untitled page
        is named by its URL, as Chromium's own record and tab strip name it."""
        self._title = title or href
        self._title_href = href

    def update_from_tab_strip(self, info: dict[str, Any]) -> None:
        """What the user's browser shows of the tab (targets the extension reports carry it): its
        Chrome id, window and pin. A pin the user changes there wins over tabpilot's own."""
        if info.get("chromeTabId") is not None:
            self.chrome_tab_id = int(info["chromeTabId"])
        if info.get("windowId") is not None:
            self.window_id = int(info["windowId"])
        if "pinned" in info and bool(info["pinned"]) != self._strip_pinned:
            self._strip_pinned = self.pinned = bool(info["pinned"])

    def mark_crashed(self) -> None:
        if self.status == "crashed" or self.closed:
            return
        self.status = "crashed"
        self.host.emit("tab_crashed", self.id, url=self.url)

    def mark_closed(self) -> None:
        """The tab is gone: it is closed from now on and stops listening (safe to call twice)."""
        self.closed = True
        if self._title_task is not None:
            self._title_task.cancel()
            self._title_task = None
        disposers, self._disposers = self._disposers, []
        for dispose in disposers:
            dispose()
        if self._bound is not None:
            self._bound.set()  # wake waiters: they see the tab closed
        for turn in self._input_turns:  # and the actions waiting for their turn
            if not turn.done():
                turn.set_result(None)

    def add_disposer(self, dispose: Disposer) -> None:
        """Run `dispose` when the tab goes (listeners others attached for it)."""
        self._disposers.append(dispose)

    # -- page events ---------------------------------------------------------------------------

    def on_dialog(self, dialog: DialogHandle) -> None:
        """A dialog the tab's page opened (the instance hands it on: Playwright reports dialogs
        per browser context, before the page may be bound to its tab)."""
        self._dialog = dialog
        info = DialogInfo(dialog.type, dialog.message, dialog.default_value)
        for waiter in self._dialog_waiters:
            if not waiter.done():
                waiter.set_result(info)
        self.host.dialog_opened(self, info)

    def title_behind_dialog(self, title: str) -> None:
        """The browser's record of the title while a dialog holds the page (which reports its title
        again once the dialog is handled)."""
        if title and self._dialog is not None and title != self._document_url:
            self._title = title

    def navigation_blocked(self, blocked: NavigationBlockedError) -> None:
        """The URL policy refused a navigation of the tab's page (the instance aborted it)."""
        self._blocked = blocked

    def _on_download(self, download: DownloadHandle) -> None:
        if not self._due_url or download.url == self._due_url:
            # The download took the place of the document the tab waited for. One the page being
            # left began (a script's blob, a link with `download`) leaves that document due; a
            # navigation that a redirect turned into a download is settled when loading stops.
            self.document_settled()
        self.host.emit("download", self.id, url=download.url, suggestedFilename=download.filename)
        self.host.download_began(self, download)

    def _on_load(self) -> None:
        if self.status != "crashed":
            self.status = "complete"
        self._fetch_title_soon()

    def _on_new_document(self) -> None:
        # A new document has new elements: every ref of the old one is stale.
        if self._refs:
            self._refs_left = frozenset(self._refs)
        self._refs.clear()
        self._frame_refs.document_changed()
        self._refs_reset = None
        self._stuck = False
        self._fetch_title_soon()

    def _on_navigated(self) -> None:
        self.document_settled()  # committed: the page answers again
        for waiter in self._navigation_waiters:
            if not waiter.done():
                waiter.set_result(None)
        restored, self._restored_url = self._restored_url, None
        # CDP gives a frame's URL without its #fragment; Playwright's page URL has it.
        if self.status != "crashed" and restored != self.handle.url.partition("#")[0]:
            self.status = "loading"

    def restored_from_cache(self, url: str) -> None:
        """The page at `url` came back from the back/forward cache (the user's own browser keeps
        one): it loads nothing and no load event comes, so it is loaded now, whether Playwright
        reports its commit before this or after (`_on_navigated`)."""
        self._restored_url = url
        self.loading_stopped()

    def _fetch_title_soon(self, *, check_loaded: bool = False) -> None:
        """Learn the title when a document loads, so listing tabs later needs no round trip
        (`check_loaded`: and whether the page has loaded already).

        Chromium's Target.targetInfoChanged reports URL changes but not title changes.
        """
        if self._title_task is not None and not self._title_task.done():
            return
        handle = self._handle
        if handle is None or (self.title_live and not check_loaded):
            return  # the page reported its title (`_titles`): nothing to ask

        async def fetch() -> None:
            try:
                if check_loaded:
                    ready, title = await asyncio.wait_for(
                        handle.evaluate("() => [document.readyState, document.title]"), 5
                    )
                    if (
                        ready == "complete"
                        and self.status == "loading"
                        and not self._blank_on_its_way(handle)
                    ):
                        self.status = "complete"
                    self._title = title or self._title
                else:
                    self._title = await asyncio.wait_for(handle.title(), 5) or self.url
            except Exception:
                pass  # navigating, closed, or blocked by a dialog: the next load tries again

        self._title_task = asyncio.get_running_loop().create_task(fetch())

    def _blank_on_its_way(self, handle: PageHandle) -> bool:
        """Whether the page shows the empty document a new tab starts with while its first page is
        still on its way: about:blank (complete at once) where the target names another URL, or
        none yet. A tab meant to be blank (`window.open('about:blank')`, or `window.open('')` that
        the opener writes into) is named about:blank by its target too, and is loaded."""
        return handle.url == "about:blank" and self._url != "about:blank"

    # -- guards --------------------------------------------------------------------------------

    def ensure_open(self) -> None:
        if self.closed:
            raise TabNotFoundError(
                self.id,
                self.host.open_tabs(),
                reason=closed_reason(self.closing_cause),
                # Its manager closed: opening a tab, the advice without one, is no way on.
                no_instance=manager_closed() if self.closing_cause == "shutdown" else None,
            )

    def ensure_no_dialog(self) -> None:
        """Refuse page work while a dialog blocks this tab (it would hang until the dialog goes):
        its own, or one open on a tab of the same site it opened or was opened by as a popup."""
        self.ensure_open()
        holder = self.blocked_by()
        if holder is not None and (info := holder.dialog) is not None:
            raise DialogOpenError(holder.id, info, waiting_tab_id=None if holder is self else self.id)

    def blocked_by(self) -> Tab | None:
        """The tab whose open dialog blocks this tab's page now: this tab, or a tab of the same
        site it opened or was opened by as a popup (`_held_by`). None if nothing blocks it."""
        return self if self._dialog is not None else self._held_by(same_site=True)

    def _held_by(self, *, same_site: bool) -> Tab | None:
        """Another tab whose open dialog holds this tab's page up. Chromium runs the pages of one
        site that opened one another as popups (keeping a handle on their opener: one browsing
        context group) on one thread, and a dialog stops them all; a tab a link opened (noopener)
        or another site's popup runs on its own. `same_site` False: any popup relative (a
        subdomain may share the thread; the host alone cannot tell)."""
        holders = [t for t in self.host.tabs if t._dialog is not None and t is not self]
        if not holders:
            return None
        return next((tab for tab in self._thread_mates(same_site=same_site, among=holders)), None)

    def _thread_mates(self, *, same_site: bool, among: Sequence[Tab] | None = None) -> list[Tab]:
        """The other tabs (of `among`, when given) whose pages may run on this tab's page's thread:
        its popup relatives (the pages of one site that opened one another as popups; `same_site`
        False: of any site, as a subdomain may share the thread and the host alone cannot tell)."""
        tabs = self.host.tabs
        by_id = {t.id: t for t in tabs}
        parent = {t.id: t.opener_id for t in tabs if t.cause == "popup" and t.opener_id in by_id}

        def root(tab_id: int) -> int:
            seen: set[int] = set()
            while tab_id in parent and tab_id not in seen:
                seen.add(tab_id)
                tab_id = parent[tab_id]
            return tab_id

        mine, site = root(self.id), _site(self.url)
        return [
            tab
            for tab in (tabs if among is None else among)
            if tab is not self and root(tab.id) == mine and (not same_site or (site and site in tab._sites()))
        ]

    def _sites(self) -> set[str]:
        """The sites of the tab's page and of its iframes: one of them may be where a dialog or a
        stuck script is (an iframe of another site opens its own popups and dialogs)."""
        handle = self._handle
        frames = handle.frame_urls() if handle is not None and not handle.is_closed() else []
        return {_site(self.url), *map(_site, frames)}

    # -- input: one action at a time -------------------------------------------------------------

    @asynccontextmanager
    async def input_turn(self) -> AsyncIterator[None]:
        """Wait for this tab's turn to use its page's input, and hold it for the block.

        A page has one mouse pointer, one keyboard and one focus: two actions at once move them
        under each other (a click lands on another element, text goes into another field). Actions
        that use them, and navigations (which replace what they act on), run one at a time per tab,
        in the order they asked. Other tabs' actions, and work that only reads or scripts the page
        (snapshots, evaluate, screenshots, waits), never wait for a turn; neither does handling a
        dialog, and a dialog ends the action that raised it (the watch's race), so it never holds
        the turn. An action's timeout starts with its turn: the wait before it is bounded by the
        timeouts of the actions ahead. When the tab closes, every action still waiting fails at once
        (TabNotFoundError).
        """
        self.ensure_open()
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._input_turns.append(turn)
        try:
            self._pass_turn()
            await turn
            self.ensure_open()
            yield
        finally:
            self._input_turns.remove(turn)
            self._pass_turn()

    def _pass_turn(self) -> None:
        if self._input_turns and not self._input_turns[0].done():
            self._input_turns[0].set_result(None)

    # -- responsiveness -------------------------------------------------------------------------

    @contextmanager
    def expecting_document(self) -> Iterator[None]:
        """Around a navigation: until its new document arrives, the browser holds back every
        message to the page (scripts, snapshots and input wait), so a page that does not answer then
        is waiting for its server, not stuck in a script. A navigation that times out before its
        document arrived leaves the tab expecting it (the browser still waits for it) until it
        arrives or the tab's page goes another way (an error page, a download, a crash)."""
        self._document_due = True
        timed_out = False
        try:
            yield
        except ActionError as exc:
            timed_out = exc.reason in ("timeout", "busy")
            raise
        except asyncio.CancelledError:
            # The call was cancelled (its client gave up or went away): the browser goes on waiting
            # for the document as after a timeout, once it started loading it (the page then
            # answered nothing and was blamed on a script, "not responding").
            timed_out = bool(self._due_url)
            raise
        finally:
            if not timed_out:
                self.document_settled()

    def document_requested(self, url: str) -> None:
        """The browser started loading a new document into the tab (`url`), whoever asked for it:
        a link, a form, a script, a navigation of tabpilot's. Until it arrives (`document_settled`)
        the page answers nothing, as under `expecting_document`."""
        self._document_due = True
        self._due_url = url
        self._nothing_came = False  # a page on its way after all (an opener sent it elsewhere)
        if self.status == "complete":
            self.status = "loading"

    def loading_stopped(self) -> None:
        """The browser stopped loading the tab's page: its document came and loaded, or the
        navigation ended without one (a download, an empty answer such as HTTP 204, called off)."""
        if (
            self._handle is None
            and self._document_due
            and self._due_url
            and not self._due_url.startswith("about:")
        ):
            self._nothing_came = True
        self.document_settled()
        if self.status == "loading":
            self.status = "complete"
            self._fetch_title_soon()  # a page with no load event of its own (about:blank) has one now

    def document_settled(self) -> None:
        """The document a navigation asked for arrived, or the navigation ended without one (a
        download, an empty answer such as HTTP 204, a navigation called off)."""
        self._document_due = False
        self._due_url = ""
        self.asked_url = ""  # its first page came (or none will): it is named by what it shows

    @property
    def stuck(self) -> bool:
        """Whether the page was found not answering (a script keeps it busy) and has not answered
        since: a load it is asked for may wait on it, not on a server."""
        return self._stuck

    @property
    def document_due(self) -> bool:
        """Whether a navigation's document has not arrived yet (`expecting_document`)."""
        return self._document_due and self.status != "crashed" and not self.is_gone

    @property
    def due_url(self) -> str:
        """The URL of the document the tab waits for while `document_due` ('' if not known)."""
        return self._due_url if self.document_due else ""

    def loading_error(self, exc: ActionError, *, or_else: str = "load another page") -> ActionError:
        """`exc` (page work that timed out while `document_due`) told as what it is: the page is
        waiting for its server, not broken. `or_else`: what the agent can do instead of waiting."""
        return ActionError(
            f"{exc.fact.rstrip('.')}: tab {self.id} is {self._loading_what()}, whose server has not sent it yet "
            "(the page answers nothing until it comes).",
            f"The browser keeps waiting for it: take a snapshot of tab {self.id} in a while, or {or_else}.",
            tab_id=self.id,
            ref=exc.ref,
            reason="loading",
        )

    async def raise_what_the_page_says(
        self, exc: ActionError, what: str, *, read_for: float | None = None
    ) -> None:
        """After page work (`what`, e.g. "Clicking 3e5 on tab 3") failed (`exc`): raise what the
        page's state says of the failure, if it says more; otherwise return, for `exc` to be raised.
        - Timed out: when the page does not answer at all (a script stuck in a loop), an error that
          says so. A page whose next document has not arrived does not answer either: waiting for
          its server, it is not stuck, and `loading_error` is raised at once.
        - The page crashed ("crashed", before its crash event came): the crash error, as after it.
        - Its document ended ("navigated") with no navigation under way: the tab closing (the user
          closed it, through the extension) ends the document a moment before the page counts as
          closed; when the tab is seen closing within `CLOSE_NOTICE`, the tab-closed error.
        `read_for`: the work was a read of the accessibility tree, given up after that many seconds.
        The page goes on building the tree, answering nothing meanwhile: it has as long again
        (`TREE_READ_GRACE` at least) to answer, and when it does, the tree may be too large to read
        in that time (not a page stuck in a script)."""
        if exc.reason == "crashed":  # Playwright said so before the page's crash event came
            self.mark_crashed()
            raise TabCrashedError(self.id, self.url) from exc
        if exc.reason == "navigated":
            await self._raise_if_closing(exc, what)
            return
        if exc.reason not in ("timeout", "busy") or self.closed or self._handle is None:
            return
        if self.document_due and not self._stuck:
            raise self.loading_error(exc) from exc
        # Its own dialog (opened meanwhile by another call's script), or a popup relative's.
        holder = self if self._dialog is not None else self._held_by(same_site=False)
        if holder is not None and (info := holder.dialog) is not None:
            raise DialogOpenError(
                holder.id, info, waiting_tab_id=None if holder is self else self.id
            ) from exc
        tree = read_for is not None and not self._stuck
        wait = max(read_for or 0.0, TREE_READ_GRACE) if tree else RESPONSIVE_TIMEOUT
        try:
            await asyncio.wait_for(self._handle.evaluate("1"), wait)
        except TimeoutError:
            answered = False
        except Exception:  # closed, navigating (answered in its own way), or its browser went
            answered = True
        else:
            self._stuck = False
            if not tree:
                return
            raise ActionError(
                f"{exc.fact.rstrip('.')}, though the page answers: its accessibility tree may be too large "
                "to read in that time.",
                "Read a part of it: fewer levels (depth), or one element's subtree (ref).",
                tab_id=self.id,
                ref=exc.ref,
                reason="too_large",
            ) from exc
        # Neither the work nor the page answered: its whole browser may have gone without its
        # connection saying so (a grid that ended the session), which is then the reason.
        await self.host.ensure_answering()
        if answered:
            return
        self._stuck = True
        mates = self._thread_mates(same_site=True)
        shared = (
            f" The script may be its own or one of tab{'s' if len(mates) > 1 else ''} "
            f"{', '.join(str(t.id) for t in mates)}: their pages run on the same thread (a page and the "
            "popups of its site it opened or was opened by share one)."
            if mates
            else ""
        )
        raise ActionError(
            f"{exc.fact.rstrip('.')}: tab {self.id} is not responding: a script on it keeps it busy (a long "
            f"task, perhaps one an action started, or an endless loop).{shared}",
            "Read it again in a while: a long task ends by itself. If it still does not answer, close the "
            "tab; other tabs keep working. Reloading it may not help while the script runs."
            if not mates
            else f"Close {'tabs' if len(mates) > 1 else 'tab'} {', '.join(str(t.id) for t in mates)} first, then "
            f"tab {self.id} if it still does not answer; other tabs keep working.",
            tab_id=self.id,
            ref=exc.ref,
            reason="unresponsive",
            close_first=tuple(t.id for t in mates),
        ) from exc

    async def _raise_if_closing(self, exc: ActionError, what: str) -> None:
        handle = self._handle
        if handle is None or self.document_due or self.status == "loading":
            return  # a navigation ended the document, as `exc` says
        if not self.is_gone:
            closing: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def closed() -> None:
                if not closing.done():
                    closing.set_result(None)

            dispose = handle.on_close(closed)
            try:
                await asyncio.wait_for(closing, CLOSE_NOTICE)
            except TimeoutError:
                return
            finally:
                dispose()
        raise ActionError.tab_gone(
            what, f"tab {self.id} closed", tab_id=self.id, ref=exc.ref, cause=self.closing_cause
        ) from exc

    async def unless_dialog(self, work: Awaitable[T]) -> T:
        """Run page work a dialog would block (the page stops answering while one is open): if a
        dialog opens first, the work is dropped and DialogOpenError raised at once."""
        self.ensure_no_dialog()
        opened: asyncio.Future[DialogInfo] = asyncio.get_running_loop().create_future()
        ended = await _race(work, opened, self._dialog_waiters)
        if ended is None:
            raise DialogOpenError(self.id, opened.result())
        return ended.result()

    async def before_navigation(self, work: Awaitable[T]) -> tuple[bool, T | None]:
        """Run page work unless the tab's main frame navigates first (a load, a step in history,
        a reload, a new URL within the page): (True, its result), or (False, None), the work
        dropped."""
        moved: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ended = await _race(work, moved, self._navigation_waiters)
        return (True, ended.result()) if ended is not None else (False, None)

    # -- dialogs -------------------------------------------------------------------------------

    def hold(self, work: asyncio.Future[Any]) -> None:
        """`work` waits for this tab's dialog (a script that opened it, `evaluate`): handling the
        dialog waits briefly for it to finish."""
        self._held.add(work)
        work.add_done_callback(self._held.discard)

    async def handle_dialog(self, *, accept: bool, prompt_text: str | None = None) -> DialogInfo:
        """Accept or dismiss the open dialog of this tab. Work the dialog held up (`hold`: a script
        that opened it) is waited for, up to the action timeout or until it opens the next dialog.
        A prompt accepted without `prompt_text` answers its default value, as OK would."""
        check_switch(accept, "accept")  # accept="no" accepted the dialog
        if prompt_text is not None:
            text_given(prompt_text, "prompt_text", "'Ada'")
        self.ensure_open()
        dialog = self._dialog
        if dialog is None:
            raise NoDialogError(self.id)
        info = DialogInfo(dialog.type, dialog.message, dialog.default_value)
        if accept and prompt_text is None and info.type == "prompt":
            prompt_text = info.default_value  # Chromium's own answer would be ""
        self._dialog = None
        # Accepting a beforeunload dialog lets the page go: the answer waits until the next page
        # has loaded (or the tab closed, or a download took the navigation's place, or the next
        # page opened a dialog while it loaded, which holds its load up), as a navigation would, so
        # what the caller reads next is the page it let through.
        left = self._page_left() if accept and info.type == "beforeunload" else None
        try:
            with map_playwright_errors(Doing(f"Handling the dialog of tab {self.id}", tab_id=self.id)):
                # Guarded as page work is: a link to the browser that drops meanwhile (the
                # extension's) fails it saying so, not with the link's words for an unanswered command.
                await self.host.guard(dialog.accept(prompt_text) if accept else dialog.dismiss())
            self.host.emit("dialog_closed", self.id, accepted=accept, dialogType=info.type)
            if left is not None:
                await self._until_left(left[0])
            await self._held_finished()
        finally:
            if left is not None:
                left[1]()
        return info

    async def _until_left(self, left: asyncio.Future[None]) -> None:
        """Wait, up to the navigation timeout, until `left` (`_page_left`) or a dialog on this tab."""
        if self._dialog is None:
            await self._until_next_dialog(left, self.host.timeouts.navigation)

    async def _held_finished(self) -> None:
        """Wait, up to the action timeout, until the work the dialog held up (`hold`) has finished
        or opened the next dialog on this tab, so the caller hears of its outcome at once."""
        if not self._held:
            return
        finished = asyncio.ensure_future(asyncio.wait(set(self._held)))
        try:
            await self._until_next_dialog(finished, self.host.timeouts.action)
        finally:
            finished.cancel()  # stops this wait only: the held work goes on

    async def _until_next_dialog(self, done: asyncio.Future[Any], timeout: float) -> None:
        """Wait, up to `timeout`, until `done` or the next dialog this tab opens, whichever first."""
        opened: asyncio.Future[DialogInfo] = asyncio.get_running_loop().create_future()
        self._dialog_waiters.add(opened)
        either: set[asyncio.Future[Any]] = {done, opened}
        try:
            await asyncio.wait(either, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._dialog_waiters.discard(opened)
            opened.cancel()

    def _page_left(self) -> tuple[asyncio.Future[None], Disposer]:
        """A future that is done when the tab's next page has loaded, the tab closed or crashed,
        or a download began; and the disposer of what it listens to."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def finish(*_: object) -> None:
            if not done.done():
                done.set_result(None)

        handle = self.handle
        disposers = [
            handle.on_load(finish),
            handle.on_close(finish),
            handle.on_crash(finish),
            handle.on_download(finish),
        ]

        def dispose() -> None:
            for dispose_one in disposers:
                dispose_one()

        return done, dispose

    # -- snapshots and refs --------------------------------------------------------------------

    async def refresh_title(self) -> str:
        """The page's title, exact now: as the page reported it for its current URL (`_titles`), or
        else asked of the page (one round trip)."""
        if self.title_live:
            return self._title
        await self.ready()
        with map_playwright_errors(Doing(f"Reading the title of tab {self.id}", tab_id=self.id)):
            self._title = await self.handle.title() or self.url  # untitled: named by its URL
        return self._title

    async def snapshot(self, *, depth: int | None = None, ref: str | None = None) -> Snapshot:
        """Take an accessibility snapshot. The whole page's refs replace this tab's valid refs; a
        subtree's (`ref`) or a depth-limited one's are added to them: the refs given before keep
        working outside the subtree or below the depth."""
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
            raise ValueError(f"depth must be a whole number from 1 (None: the whole tree), not {depth!r}")
        page = await self.usable()
        what = f"Taking a snapshot of tab {self.id}"
        await self._document_or_loading(what)
        timeout = self.host.timeouts.action
        if ref is None:
            return await self._snapshot(page, what, timeout, depth)
        try:
            with map_playwright_errors(Doing(what, tab_id=self.id, ref=ref, timeout=timeout)):
                element = await self.element(ref)
        except ActionError as exc:
            await self.raise_what_the_page_says(exc, what, read_for=timeout)
            raise
        # From the subtree's read until the whole page's after it, refs outside it match nothing.
        self._part_reads += 1
        self._part_reads_begun += 1
        self._whole_map.clear()
        try:
            return await self._snapshot(page, what, timeout, depth, (ref, element))
        finally:
            self._part_reads -= 1
            if not self._part_reads:
                self._whole_map.set()

    async def _snapshot(
        self,
        page: PageHandle,
        what: str,
        timeout: float,
        depth: int | None,
        part: tuple[str, ElementHandle] | None = None,
    ) -> Snapshot:
        """`snapshot`, of the page or of `part` (the ref as given and its element, checked)."""
        ref = None if part is None else part[0]
        for attempt in range(3):
            # An iframe that loads another page while the tree is read may be read as it was: then
            # read again (its names would be the next page's too; `FrameRefs.shown`).
            moves = self._frame_refs.moves
            try:
                if ref is not None and attempt:  # the ref's element anew: none, if its iframe moved
                    part = (ref, self.element_unchecked(self.resolve_ref(ref)))
                raw, title = await self._read_snapshot(page, what, part, depth, timeout)
            except ActionError as exc:
                await self.raise_what_the_page_says(exc, what, read_for=timeout)
                raise
            if moves == self._frame_refs.moves:
                break
        if depth is not None:
            raw = cut_at_depth(raw, depth)
        self._title = title = title or self.url
        text, refs = scope_snapshot(self.id, self._frame_refs.shown(raw, whole=ref is None, moves=moves))
        snap = Snapshot(self.id, self.url, title, text, frozenset(refs))
        if ref is None:
            # A depth-limited read still maps every element of the page (Playwright's refs beyond
            # the depth keep working): the refs the tab gave before stay valid with it.
            self._refs = set(refs) if depth is None else self._refs | refs
            self._refs_reset = None
            if depth is None:  # the whole tree: what the next action's changes are counted from
                self._last_snapshot = snap
            return snap
        # Playwright finds a ref only among the elements of the page's latest snapshot, and a
        # subtree's replaces the whole page's: read the whole page again (its text unused) so the
        # refs the tab's earlier snapshots gave outside the subtree keep working.
        try:
            await self._read_snapshot(page, what, None, None, timeout)
        except ActionError as exc:
            await self.raise_what_the_page_says(exc, what, read_for=timeout)
            raise
        self._refs |= refs
        return snap

    async def _read_snapshot(
        self,
        page: PageHandle,
        what: str,
        part: tuple[str, ElementHandle] | None,
        depth: int | None,
        timeout: float,
    ) -> tuple[str, str]:
        ref = None if part is None else part[0]
        with map_playwright_errors(Doing(what, tab_id=self.id, ref=ref, timeout=timeout)):
            if part is not None:
                reading = part[1].aria_snapshot(depth=depth)
            else:
                reading = page.aria_snapshot(depth=depth)
            if self.title_live:  # the page reported its title: nothing to ask
                raw = await self.host.guard(self.unless_dialog(asyncio.wait_for(reading, timeout)))
                title = self._title
            else:
                # The title comes in the same round trip time as the tree, not one after it.
                raw, title = await self.host.guard(
                    self.unless_dialog(asyncio.wait_for(asyncio.gather(reading, page.title()), timeout))
                )
            if has_field_values(raw):  # a password field's value is shown as any text field's: hidden
                passwords = await self.host.guard(
                    self.unless_dialog(asyncio.wait_for(page.password_values(), timeout))
                )
                raw = mask_passwords(raw, passwords)
        return raw, title

    def refs_reset(self, why: str) -> None:
        """The page's refs stopped working although the page did not change (`why`: its browser's
        link was set up again, and with it the script that knows them); a ref from before says so."""
        if self._refs:
            self._refs_reset = (frozenset(self._refs), why)
            self._refs.clear()

    async def why_gone(self, error: ActionError, what: str) -> ActionError:
        """`error`, unless it says work on this tab failed as it closed while the tab stays open in
        its browser (the user took it back, it went where the extension may not follow, the link
        to their browser was lost): then that, once the tracker knows why (a moment after
        Playwright's error); or that it closed, and why when that is known (another call's close,
        the tab cap)."""
        if error.reason != "tab_closed":
            return error
        for _ in range(25):  # 0.5 s at most
            if self.closed:
                break
            await asyncio.sleep(0.02)
        cause = self.closing_cause
        if cause is not None and cause not in STAYS_OPEN and error.close_cause is None:
            # Closed by another call, the tab cap, ...: said (Playwright's error says only "closed").
            return ActionError.tab_gone(
                what, f"tab {self.id} closed", tab_id=self.id, ref=error.ref, cause=cause
            )
        if cause not in STAYS_OPEN:
            return error
        return ActionError(
            f"{what} failed: tab {self.id} left the agent's reach during the action. {closed_reason(cause)}",
            "List the tabs to see what is open.",
            tab_id=self.id,
            ref=error.ref,
            reason="tab_closed",
        )

    def _raise_if_reset(self, page_ref: str, ref: str) -> None:
        reset = self._refs_reset
        if reset is not None and page_ref in reset[0]:
            self.host.ensure_usable()  # while the link is still down, that is what to say
            raise StaleRefError(
                f"Ref {tab_ref(self.id, page_ref)} no longer works on tab {self.id}: {reset[1]}. The page may "
                "be as it was, but its refs are not.",
                f"Take a new snapshot of tab {self.id} and use a ref from it.",
                ref=ref,
                tab_id=self.id,
            )

    def resolve_ref(self, ref: str) -> str:
        """Check that `ref` belongs to this tab and is in its latest snapshot; return the per-page ref."""
        if self.status == "crashed":  # no ref of it works again (it said "the page changed")
            raise TabCrashedError(self.id, self.url)
        ref_tab, page_ref = parse_ref(ref)
        if ref_tab is not None and ref_tab != self.id:
            if all(tab.id != ref_tab for tab in self.host.open_tabs()):
                raise StaleRefError(  # not "use it on tab 99", of a tab that is not there
                    f"Ref {ref} is of tab {ref_tab}, which is not open (it closed, or the ref was never "
                    "issued).",
                    f"Take a snapshot of tab {self.id} and use a ref from it.",
                    ref=ref,
                    tab_id=self.id,
                )
            raise ForeignRefError(ref, ref_tab_id=ref_tab, tab_id=self.id)
        if page_ref not in self._refs:
            self._raise_if_reset(page_ref, ref)
            if self._frame_refs.moved_on(page_ref):
                raise self._moved_on_error(page_ref)
            if page_ref in self._refs_left:
                raise StaleRefError(
                    f"Ref {ref} was of an earlier page of tab {self.id}: the tab has loaded another page "
                    f"since ({self.url} now), whose elements have refs of their own.",
                    f"Take a new snapshot of tab {self.id} and use a ref from it.",
                    ref=ref,
                    tab_id=self.id,
                )
            raise StaleRefError(  # the ref as sent: `e2` was said as 1e2, a ref the agent never gave
                f"Ref {ref} is not in the latest snapshot of tab {self.id} (the page changed, or the ref was "
                "never issued).",
                f"Take a new snapshot of tab {self.id} and use a ref from it.",
                ref=ref,
                tab_id=self.id,
            )
        return page_ref

    def element_unchecked(self, page_ref: str) -> ElementHandle:
        """The element a per-page ref of this tab names (`resolve_ref` gives one), not checked to
        exist; a ref of an iframe's earlier page names none."""
        playwright = self._frame_refs.playwright_ref(page_ref)
        if playwright is None:
            self._refs.discard(page_ref)
            raise self._moved_on_error(page_ref)
        return self.handle.element(playwright)

    def _moved_on_error(self, page_ref: str) -> StaleRefError:
        # Not "its iframe has loaded another page": every iframe's refs are renamed when any one
        # moves (`FrameRefs.frames_moved`), and the ref's own iframe may be one that stayed.
        return StaleRefError(
            f"Ref {tab_ref(self.id, page_ref)} is from before an iframe of tab {self.id} loaded another page "
            "(its own iframe or another: which one, the browser does not say), when the refs of all the tab's "
            "iframes were given anew.",
            f"Take a new snapshot of tab {self.id} and use a ref from it.",
            ref=tab_ref(self.id, page_ref),
            tab_id=self.id,
        )

    async def element(self, ref: str) -> ElementHandle:
        """The element a ref names, checked to exist now, so a stale ref fails at once. While the
        tab waits for its next document (`document_due`) that fails at once too: the page answers
        nothing until the document comes, and no ref of the page it leaves works on the next."""
        self.ensure_no_dialog()
        page_ref = self.resolve_ref(ref)
        await self.ready()
        if self.document_due:
            raise self._leaving_error(page_ref, ref)
        element = self.element_unchecked(page_ref)
        # A page found stuck in a script before gets the time a trivial script has, not a ref's.
        limit = RESPONSIVE_TIMEOUT if self._stuck else REF_CHECK_TIMEOUT
        try:
            # A dialog that opens meanwhile (another call's script) stops the page: said at once.
            found = await self.unless_dialog(asyncio.wait_for(self._count(element), timeout=limit))
        except DialogOpenError:
            raise
        except Exception as exc:
            if self.document_due:  # a navigation started meanwhile
                raise self._leaving_error(page_ref, ref) from None
            if self.closed or is_closed_error(exc):  # the tab closed meanwhile, not the page changed
                raise ActionError.tab_gone(
                    f"Checking ref {tab_ref(self.id, page_ref)} on tab {self.id}",
                    f"tab {self.id} closed (or its browser went away)",
                    tab_id=self.id,
                    ref=ref,
                    cause=self.closing_cause,
                ) from None
            if not isinstance(exc, TimeoutError):
                found = 0  # its document went away meanwhile: the ref's element with it
            else:  # the page did not answer: not a sign that the element is gone
                checking = ActionError(
                    f"Checking ref {tab_ref(self.id, page_ref)} on tab {self.id} did not finish within {limit:g} s.",
                    f"The page may be busy: take a snapshot of tab {self.id} and retry.",
                    tab_id=self.id,
                    ref=ref,
                    reason="timeout",
                )
                await self.raise_what_the_page_says(checking, f"Checking ref {tab_ref(self.id, page_ref)}")
                raise checking from None
        if not found:
            self._refs.discard(page_ref)
            self._raise_if_reset(page_ref, ref)  # the link came back while the ref was checked
            raise StaleRefError(
                f"Ref {tab_ref(self.id, page_ref)} no longer matches an element on tab {self.id} (the page changed).",
                f"Take a new snapshot of tab {self.id} and use a ref from it.",
                ref=ref,
                tab_id=self.id,
            )
        return element

    async def _count(self, element: ElementHandle) -> int:
        """How many elements `element`'s ref matches, once Playwright's ref map is the whole page's
        again: a subtree snapshot under way (or begun during the count) hides every ref outside it."""
        for _ in range(3):
            begun = self._part_reads_begun
            await self._whole_map.wait()
            found = await element.count()
            if found or (begun == self._part_reads_begun and not self._part_reads):
                return found
        return found

    async def _document_or_loading(self, what: str) -> None:
        """Before page work (`what`) that would wait for the tab's next document (the page answers
        nothing until it comes): if the document has not come within `RESPONSIVE_TIMEOUT`, raise
        `loading_error` at once, not after the work's whole timeout (a snapshot waited 5 s, and
        when the page came meanwhile, put the time down to a large tree)."""
        handle = self._handle
        if handle is None or not self.document_due or self._stuck:
            return
        try:
            await asyncio.wait_for(handle.evaluate("1"), RESPONSIVE_TIMEOUT)
        except TimeoutError:
            if self.document_due:
                raise self.loading_error(
                    ActionError(f"{what} cannot begin yet", "", tab_id=self.id, reason="timeout")
                ) from None
        except Exception:  # its document came meanwhile (or it closed): the work finds out which
            return

    def _loading_what(self) -> str:
        return f"loading {self._due_url}" if self._due_url else "loading its next page"

    def _leaving_error(self, page_ref: str, ref: str) -> ActionError:
        return ActionError(
            f"Tab {self.id} is {self._loading_what()}, whose server has not sent it yet: ref "
            f"{tab_ref(self.id, page_ref)} is on the page it is leaving, which answers nothing until "
            "the new one comes.",
            f"Take a snapshot of tab {self.id} in a while and use a ref from it, or load another page.",
            tab_id=self.id,
            ref=ref,
            reason="loading",
        )


async def _race(
    work: Awaitable[T], signal: asyncio.Future[S], waiters: set[asyncio.Future[S]]
) -> asyncio.Future[T] | None:
    """Run `work` until it ends or `signal` (put in `waiters`, where the tab resolves it) comes
    first: the work's future if it ended first (its result or error to read), else None (dropped)."""
    task = asyncio.ensure_future(work)
    waiters.add(signal)
    either: set[asyncio.Future[Any]] = {task, signal}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        waiters.discard(signal)
    if task.done():
        return task
    task.cancel()
    task.add_done_callback(retrieve_outcome)
    return None


def _site(url: str) -> str:
    """A page's scheme and host, as far as same-site goes here ('' for about:blank and the like)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" if parts.hostname else ""
