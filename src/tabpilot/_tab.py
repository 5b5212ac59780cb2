"""One tab: a Playwright page with a stable id, its state, dialogs and element refs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from playwright.async_api import Dialog, Download, Frame, Locator, Page

from ._errors import DialogOpenError, ForeignRefError, NoDialogError, StaleRefError, TabNotFoundError
from ._refs import parse_ref, scope_snapshot, tab_ref
from ._types import DialogInfo, OpenCause, TabStatus

if TYPE_CHECKING:
    from ._instance import Instance


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An accessibility snapshot of one tab, refs already scoped to it (`3e5`)."""

    tab_id: int
    url: str
    title: str
    text: str
    refs: frozenset[str]
    """Per-page refs (`e5`) the snapshot contained."""


class Tab:
    """A page of an instance. Its id never changes and is never given to another tab."""

    def __init__(
        self,
        tab_id: int,
        instance: Instance,
        page: Page,
        *,
        opener_id: int | None,
        cause: OpenCause,
    ) -> None:
        self.id = tab_id
        self.instance = instance
        self.page = page
        self.opener_id = opener_id
        self.cause: OpenCause = cause
        self.target_id: str | None = None
        self.window_id: int | None = None
        self.pinned = False
        self.status: TabStatus = "loading"
        self.closed = False
        self._title = ""
        self._dialog: Dialog | None = None
        self._refs: set[str] = set()
        self._last_snapshot: Snapshot | None = None
        self._disposers: list[Callable[[], None]] = []
        self._title_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<Tab {self.id} {self.url!r}>"

    # -- state read without a browser round trip ---------------------------------------------

    @property
    def url(self) -> str:
        return self.page.url

    @property
    def title(self) -> str:
        return self._title

    @property
    def dialog(self) -> DialogInfo | None:
        d = self._dialog
        return DialogInfo(d.type, d.message, d.default_value) if d else None

    @property
    def last_snapshot(self) -> Snapshot | None:
        return self._last_snapshot

    # -- listeners -----------------------------------------------------------------------------

    def _listen(self, event: str, handler: Callable[..., Any]) -> None:
        self.page.on(event, handler)  # type: ignore[call-overload]

        def dispose() -> None:
            try:
                self.page.remove_listener(event, handler)
            except KeyError:
                pass

        self._disposers.append(dispose)

    def _attach(self) -> None:
        self._listen("close", self._on_close)
        self._listen("crash", self._on_crash)
        self._listen("dialog", self._on_dialog)
        self._listen("download", self._on_download)
        self._listen("load", self._on_load)
        self._listen("domcontentloaded", self._on_new_document)
        self._listen("framenavigated", self._on_frame_navigated)

    def _dispose(self) -> None:
        if self._title_task is not None:
            self._title_task.cancel()
            self._title_task = None
        disposers, self._disposers = self._disposers, []
        for dispose in disposers:
            dispose()

    def _on_close(self, _page: Page) -> None:
        self.instance._tab_gone(self, None)

    def _on_crash(self, _page: Page) -> None:
        self.status = "crashed"
        self.instance._emit("tab_crashed", self.id, url=self.url)

    def _on_dialog(self, dialog: Dialog) -> None:
        # Keeping a listener makes Playwright leave the dialog open; it blocks only this tab.
        self._dialog = dialog
        self.instance._emit(
            "dialog_opened",
            self.id,
            dialogType=dialog.type,
            message=dialog.message,
            defaultValue=dialog.default_value,
        )

    def _on_download(self, download: Download) -> None:
        self.instance._emit(
            "download", self.id, url=download.url, suggestedFilename=download.suggested_filename
        )

    def _on_load(self, _page: Page) -> None:
        if self.status != "crashed":
            self.status = "complete"
        self._fetch_title_soon()

    def _on_new_document(self, _page: Page) -> None:
        # A new document has new elements: every ref of the old one is stale.
        self._refs.clear()
        self._fetch_title_soon()

    def _fetch_title_soon(self) -> None:
        """Learn the title when a document loads, so listing tabs later needs no round trip.

        Chromium's Target.targetInfoChanged reports URL changes but not title changes.
        """
        if self._title_task is not None and not self._title_task.done():
            return

        async def fetch() -> None:
            try:
                self._title = await asyncio.wait_for(self.page.title(), 5)
            except Exception:
                pass  # navigating, closed, or blocked by a dialog: the next load tries again

        self._title_task = asyncio.get_running_loop().create_task(fetch())

    def _on_frame_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame and self.status != "crashed":
            self.status = "loading"

    # -- guards --------------------------------------------------------------------------------

    def ensure_open(self) -> None:
        if self.closed:
            raise TabNotFoundError(
                self.id, self.instance.manager._open_tabs(), reason="It was closed."
            )

    def ensure_no_dialog(self) -> None:
        """Refuse page work while a dialog blocks this tab (it would hang until the dialog goes)."""
        self.ensure_open()
        info = self.dialog
        if info is not None:
            raise DialogOpenError(
                f"Tab {self.id} has an open {info.type} dialog ({info.message!r}). Handle it first with "
                f"browser_handle_dialog(tabId={self.id}, accept=true|false); other tabs keep working.",
                tab_id=self.id,
            )

    # -- dialogs -------------------------------------------------------------------------------

    async def handle_dialog(self, *, accept: bool, prompt_text: str | None = None) -> DialogInfo:
        """Accept or dismiss the open dialog of this tab."""
        self.ensure_open()
        dialog = self._dialog
        if dialog is None:
            raise NoDialogError(
                f"Tab {self.id} has no open dialog. Nothing to handle; continue with your next step.",
                tab_id=self.id,
            )
        info = DialogInfo(dialog.type, dialog.message, dialog.default_value)
        self._dialog = None
        if accept:
            await dialog.accept(prompt_text) if prompt_text is not None else await dialog.accept()
        else:
            await dialog.dismiss()
        self.instance._emit("dialog_closed", self.id, accepted=accept, dialogType=info.type)
        return info

    # -- snapshots and refs --------------------------------------------------------------------

    async def refresh_title(self) -> str:
        """Ask the page for its title (one round trip), for when an answer must be exact now."""
        self._title = await self.page.title()
        return self._title

    async def snapshot(self, *, depth: int | None = None, ref: str | None = None) -> Snapshot:
        """Take an accessibility snapshot; its refs replace this tab's valid refs."""
        self.ensure_no_dialog()
        if ref is not None:
            source: Page | Locator = await self.locator(ref)
        else:
            source = self.page
        # The title comes in the same round trip time as the tree, not one after it.
        raw, title = await asyncio.gather(source.aria_snapshot(mode="ai", depth=depth), self.refresh_title())
        text, refs = scope_snapshot(self.id, raw)
        snap = Snapshot(self.id, self.url, title, text, frozenset(refs))
        if ref is None:
            self._refs = set(refs)
            self._last_snapshot = snap
        else:
            self._refs |= refs
        return snap

    def resolve_ref(self, ref: str) -> str:
        """Check that `ref` belongs to this tab and is in its latest snapshot; return the per-page ref."""
        ref_tab, page_ref = parse_ref(ref)
        if ref_tab is not None and ref_tab != self.id:
            raise ForeignRefError(
                f"Ref {ref} belongs to tab {ref_tab}, not tab {self.id}. Leave tabId out to act on "
                f"tab {ref_tab}, or take a snapshot of tab {self.id} and use one of its refs.",
                ref=ref,
                tab_id=ref_tab,
            )
        if page_ref not in self._refs:
            shown = tab_ref(self.id, page_ref)
            raise StaleRefError(
                f"Ref {shown} is not in the latest snapshot of tab {self.id} (the page changed, or the ref "
                f"was never issued). Call browser_snapshot(tabId={self.id}) and use a ref from it.",
                ref=ref,
                tab_id=self.id,
            )
        return page_ref

    async def locator(self, ref: str) -> Locator:
        """The element a ref names, checked to exist now, so a stale ref fails at once."""
        self.ensure_no_dialog()
        page_ref = self.resolve_ref(ref)
        loc = self.page.locator(f"aria-ref={page_ref}")
        try:
            found = await asyncio.wait_for(loc.count(), timeout=5)
        except Exception:
            found = 0
        if not found:
            self._refs.discard(page_ref)
            raise StaleRefError(
                f"Ref {tab_ref(self.id, page_ref)} no longer matches an element on tab {self.id} (the page "
                f"changed). Call browser_snapshot(tabId={self.id}) and use a ref from it.",
                ref=ref,
                tab_id=self.id,
            )
        return loc
