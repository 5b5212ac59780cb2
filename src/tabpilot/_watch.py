"""What an action on a tab watches for while it runs: a dialog it raises, and tabs it opens.

- A dialog (alert, confirm, prompt) blocks its page until handled, so an action waiting for the
  page would hang until its timeout. `ActionWatch.run` stops waiting the moment a dialog opens on
  the tab and says so (policy "report"), or accepts it and goes on waiting (policy "accept", for
  front ends that have no way to handle dialogs). Navigation and every page action use this one race.
- Tabs the action opens (target=_blank, window.open, middle or modifier click): the instance tells
  the watch about every tab created while it runs whose opener is the watched tab (or, with no
  opener, when this is the only action under way in the instance). Chromium creates the target of
  a tab a click opens around the time the click returns; an action that saw none waits
  `NEW_TAB_GRACE` for one (up to `NEW_TAB_TIMEOUT` when its page asked for a window meanwhile),
  then waits until the tabs it saw are ready and announced.
- Other tabs the action sends to a new page (a link whose target names a tab already open, a
  popup's script that sets `window.opener.location`): the instance tells the watch of every tab
  of the watched tab's opener family that starts loading a new document while it runs (only those
  pages can reach each other), and the action's answer says so: that tab's old refs are gone.
- File pickers the action opens (a click on an upload button): held back while it runs, and
  counted (`file_pickers`).

The windows pages ask for (`Page.windowOpen`, which the opener's renderer sends before the browser
creates the new tab's target: a moment before, or hundreds of ms under load or through the
extension) are counted by `WindowAsks`: actions compare the count before and after, and settling
waits for every window asked for that has not arrived as a tab yet.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from ._types import DialogInfo


def retrieve_outcome(done: asyncio.Future[Any]) -> None:
    """A done callback for work nobody awaits any more: take its outcome, so that asyncio does not
    log its error as never retrieved."""
    if not done.cancelled():
        done.exception()


T = TypeVar("T")

NEW_TAB_GRACE = 0.03
"""Seconds an action that saw no new tab waits for one before returning (and the least
`TabManager.settle` waits by default). Chromium creates the target of a tab a click opens before
or right after the click returns; this covers reordering."""
NEW_TAB_TIMEOUT = 3.0
"""Seconds an action waits for the tabs it opened to be ready and announced."""
BLOCKABLE_WAIT = 0.5
"""Seconds a window asked for with no user gesture is waited for in a browser whose popup blocker
is on (the user's own): the blocker most likely stopped it, and no tab will come. One that does
come later is still tracked, and reported as opened by the next answer."""

DialogPolicy = Literal["report", "accept"]


class WindowAsks:
    """The windows each page target asked for, and those of them still on their way as tabs.

    Keyed by the opener's target id: a window asked for still arrives when its opener closed
    meanwhile. Windows on their way are given up on `NEW_TAB_TIMEOUT` (or the ask's own shorter
    wait) after the opener's latest ask (a popup blocker or a tab out of scope means a window that
    never comes as a tab here).
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._asked: dict[str, int] = {}
        self._coming: dict[str, tuple[int, float]] = {}
        """Opener target id -> (windows asked for minus tabs arrived, when those are given up on)."""
        self._urls: dict[str, collections.deque[tuple[str, float]]] = {}
        """Opener target id -> the URLs of its windows on their way, oldest first, each with when
        it is given up on."""
        self._early: dict[str, int] = {}
        """Opener target id -> tabs that arrived before their ask was heard (and took no URL)."""

    def asked(self, opener: str, *, url: str = "", wait: float = NEW_TAB_TIMEOUT) -> None:
        """A page of `opener` asked for a window (to load `url`), waited for as a tab for up to
        `wait` seconds."""
        self._asked[opener] = self._asked.get(opener, 0) + 1
        self._count(opener, +1, wait)
        if self._early.get(opener):  # its tab came first
            self._early[opener] -= 1
        else:
            self._urls.setdefault(opener, collections.deque()).append((url, self._clock() + wait))

    def arrived(self, opener: str) -> str:
        """A tab `opener`'s page asked for arrived: the URL it was asked to load, as far as the
        asks tell ("" when its ask is not heard yet, or was given up on: a window the popup
        blocker stopped leaves its URL to no later tab)."""
        # Counted also when it comes first: the ask heard just after nets it out.
        self._count(opener, -1, NEW_TAB_TIMEOUT)
        urls = self._urls.get(opener)
        now = self._clock()
        while urls:
            url, until = urls.popleft()
            if until > now:
                return url
        self._urls.pop(opener, None)
        self._early[opener] = self._early.get(opener, 0) + 1
        return ""

    def _count(self, opener: str, change: int, wait: float) -> None:
        coming, until = self._coming.pop(opener, (0, 0.0))
        if coming + change:
            self._coming[opener] = (coming + change, max(until, self._clock() + wait))

    def left(self, opener: str) -> float:
        """Seconds until the windows the pages of that target asked for are given up on (0: none
        is on its way)."""
        coming, until = self._coming.get(opener, (0, 0.0))
        return max(0.0, until - self._clock()) if coming > 0 else 0.0

    def count(self, opener: str) -> int:
        """How many windows the pages of that target asked for so far."""
        return self._asked.get(opener, 0)

    def forget(self, opener: str) -> None:
        """The opener is gone: its count goes (windows on their way are still waited for)."""
        self._asked.pop(opener, None)
        self._early.pop(opener, None)

    def due(self) -> float | None:
        """When the last window still on its way is given up on (clock time), or None if none is."""
        now = self._clock()
        for opener, (_, until) in list(self._coming.items()):
            if until <= now:
                del self._coming[opener]
        for opener, urls in list(self._urls.items()):
            if all(until <= now for _url, until in urls):
                del self._urls[opener]
        waiting = [until for coming, until in self._coming.values() if coming > 0]
        return max(waiting) if waiting else None


class Watched(Protocol):
    """What a watch needs of its tab (`tabpilot.Tab`)."""

    @property
    def id(self) -> int: ...

    @property
    def dialog(self) -> DialogInfo | None: ...

    async def handle_dialog(self, *, accept: bool, prompt_text: str | None = None) -> DialogInfo: ...

    def blocked_by(self) -> Watched | None: ...


class ActionWatch:
    """One action on `tab`: see the module docstring. Created by the tab's instance (`watch`)."""

    def __init__(
        self,
        tab: Watched,
        *,
        settle: Callable[[float], Awaitable[None]],
        guard: Callable[[Awaitable[Any]], Awaitable[Any]] | None = None,
        window_opens: Callable[[], int | None] | None = None,
        window_wait: Callable[[], float] | None = None,
    ) -> None:
        self.tab = tab
        self.follow: bool | None = None
        """Whether a tab the action opens becomes the active one: None as the manager's rule says
        (`follow_new_tabs`); False keeps it in the background whatever the rule."""
        self._guard = guard
        """Wraps the job so that it fails at once when the browser becomes unreachable."""
        self._window_opens = window_opens
        """How many windows the tab's pages asked for so far (None: not known for this tab)."""
        self._opens_before = window_opens() if window_opens is not None else None
        self._window_wait = window_wait
        """Seconds left to wait for the windows the tab's pages asked for."""
        self._settle = settle
        self.opened: list[int] = []
        """Tabs created during the action and attributed to it, in order."""
        self.opened_shared: set[int] = set()
        """Of `opened`, those another action was at work on the opener too when they came: either
        may have opened them (a page does not say which script or click did)."""
        self.gives_input = True
        """The action is input (a click, keys): the one to credit with a tab opened with no opener
        (a middle or modifier click's) while reads run beside it."""
        self.loaded: dict[int, str] = {}
        """Other tabs that started loading a new document during the action: tab id -> the URL
        asked for (the latest, in the order the tabs started)."""
        self.dialog: DialogInfo | None = None
        """A dialog the action raised and left open (policy "report")."""
        self.dialog_tab_id: int | None = None
        """The tab that shows `dialog`: the action's, or one whose dialog holds the action's tab up."""
        self.dialog_shared = False
        """Another action was at work on the tab when `dialog` opened: either may have opened it."""
        self._dialog_tab: Watched | None = None
        self._dialog_others = 0
        self.accepted: list[DialogInfo] = []
        """Dialogs the action raised and accepted (policy "accept")."""
        self._dialog_opened = asyncio.Event()
        self._tab_created = asyncio.Event()
        self.file_pickers = 0
        """File pickers the action opened (held back: no native dialog showed)."""

    # -- what the instance reports ---------------------------------------------------------------

    def tab_created(self, tab_id: int, *, shared: bool = False) -> None:
        self.opened.append(tab_id)
        if shared:
            self.opened_shared.add(tab_id)
        self._tab_created.set()

    def tab_loading(self, tab_id: int, url: str) -> None:
        if tab_id != self.tab.id and tab_id not in self.opened:  # a new tab's first page is told as one
            self.loaded.pop(tab_id, None)
            self.loaded[tab_id] = url

    def dialog_opened(self, tab: Watched, *, others: int = 0) -> None:
        """`tab` shows a dialog; `others`: how many other actions it stopped too."""
        self._dialog_tab = tab
        self._dialog_others = others
        self._dialog_opened.set()

    def file_picker_opened(self) -> None:
        self.file_pickers += 1

    # -- the race ------------------------------------------------------------------------------------

    async def run(
        self, job: Awaitable[T], *, dialogs: DialogPolicy = "report", stop: asyncio.Event | None = None
    ) -> tuple[T | None, bool]:
        """Await `job`: returns (its value, True), or (None, False) when a dialog stopped the wait.

        With policy "accept" every dialog the tab shows meanwhile is accepted and the wait goes on.
        If the caller is cancelled, so is the job. `stop`: set when a dialog stops the wait, for a
        job of several steps to give none after the one under way (which ends once the dialog is
        handled): they would come after the action's answer, beside the next calls.
        """
        task: asyncio.Future[Any] = asyncio.ensure_future(self._guard(job) if self._guard else job)
        try:
            while True:
                waiter: asyncio.Future[Any] = asyncio.ensure_future(self._dialog_opened.wait())
                try:
                    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                if task.done():
                    return task.result(), True
                self._dialog_opened.clear()
                holder = self._dialog_tab or self.tab
                if holder.dialog is None:
                    continue  # handled meanwhile by another call
                if dialogs == "accept":
                    self.accepted.append(await holder.handle_dialog(accept=True))
                    continue
                self.dialog, self.dialog_tab_id = holder.dialog, holder.id
                self.dialog_shared = self._dialog_others > 0
                # The page is blocked until the dialog is handled; then the job ends by itself.
                # Nobody awaits it any more: keep its outcome from being logged.
                task.add_done_callback(retrieve_outcome)
                if stop is not None:
                    stop.set()
                return None, False
        except asyncio.CancelledError:
            task.cancel()
            raise

    def _asked_for_window(self) -> bool:
        now = self._window_opens() if self._window_opens is not None else None
        return now is not None and self._opens_before is not None and now > self._opens_before

    async def opened_tabs(self) -> tuple[int, ...]:
        """The tabs the action opened, once they are ready and announced: also those that closed
        again meanwhile (a popup that closed itself, one the tab cap closed), which the action's
        answer must tell as much as the ones still open."""
        if not self.opened:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._tab_created.wait(), NEW_TAB_GRACE)
        if not self.opened and self._asked_for_window():
            # The page asked for a window whose tab is still on its way (a busy browser, or the
            # user's browser through the extension): wait for it (a blocked popup waits in vain,
            # for less time where one is likely).
            wait = self._window_wait() if self._window_wait is not None else NEW_TAB_TIMEOUT
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._tab_created.wait(), wait)
        if self.opened:
            await self._settle(NEW_TAB_TIMEOUT)
        return tuple(self.opened)
