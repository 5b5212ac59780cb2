"""The response every tool returns: fixed sections, the same facts as text and as JSON.

A tool fills a `Response`; the tool wrapper (`server/tools/__init__.py`) finishes it with
`await response.build(session)`, which adds what the client has not heard yet. Sections, in order:

    ### Result      what the tool did (or ### Error: what went wrong and what to do next)
    ### Events      every tab event since this client's previous response, one line each
    ### Tabs        the tab list, whenever the tab set or an active tab changed (or `show_tabs()`)
    ### Page        url and title of the tab the tool worked on (`set_page(tab)`)
    ### Snapshot    the whole snapshot (`set_snapshot`), or after an action only the lines that
                    changed on that tab (`set_page(tab, changes=True)`)

Structured content carries the same facts under fixed keys: `result`, `error`, `events`, `tabs`,
`activeTabId`, `page`, `snapshot`, `snapshotChanges`. Images (screenshots) go in as image content.

Typical page action (see `tools/navigate.py`)::

    async def browser_frobnicate(call: Call, ref: str, tabId: TabIdArg = None) -> None:
        tab = call.target(tab_id=tabId, ref=ref)     # resolves, refuses a tab with an open dialog
        ...                                          # call the library
        call.response.result(f"Frobnicated {ref} on tab {tab.id}.", {"tabId": tab.id})
        call.response.set_page(tab, changes=True)    # ### Page + the lines that changed
"""

from __future__ import annotations

import asyncio
import base64
import difflib
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent

from tabpilot import DialogOpenError, Snapshot, Tab, TabInfo, TabpilotError

if TYPE_CHECKING:
    from .state import SessionState

MAX_CHANGED_LINES = 200
"""More changed lines than this are cut: the agent can take the whole snapshot instead."""


def describe_tab(info: TabInfo, *, new_errors: int = 0) -> str:
    """One line of a `### Tabs` section."""
    title = info.title or "(no title)"
    marks: list[str] = []
    if info.active:
        marks.append("active")
    if info.opener_id is not None:
        marks.append(f"opened by tab {info.opener_id}")
    if info.pinned:
        marks.append("pinned")
    if info.status != "complete":
        marks.append(info.status)
    if info.dialog is not None:
        marks.append(f"{info.dialog.type} dialog open: {info.dialog.message!r}")
    if new_errors:
        marks.append(f"{new_errors} new error{'s' if new_errors != 1 else ''}")
    tail = f" [{', '.join(marks)}]" if marks else ""
    return f"- tab {info.id}: {title} ({info.url}){tail}"


def changed_lines(before: str, after: str) -> tuple[list[str], int]:
    """Lines of `after` that are new or changed compared with `before`, and how many were removed."""
    old, new = before.splitlines(), after.splitlines()
    added: list[str] = []
    removed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            added.extend(new[j1:j2])
        if op in ("replace", "delete"):
            removed += i2 - i1
    return added, removed


class Response:
    """What one tool call answers; see the module docstring."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.is_error = False
        self._result_lines: list[str] = []
        self._result_data: dict[str, Any] = {}
        self._error_lines: list[str] = []
        self._force_tabs = False
        self._page_tab: Tab | None = None
        self._page_changes = False
        self._snapshot: Snapshot | None = None
        self._images: list[ImageContent] = []
        self._plain: str | None = None
        self._plain_data: Any = None

    # -- what tools call ---------------------------------------------------------------------

    def result(self, text: str, data: dict[str, Any] | None = None) -> None:
        """Add a line to `### Result`, and facts to structured `result`."""
        self._result_lines.append(text)
        if data:
            self._result_data.update(data)

    def error(self, text: str) -> None:
        """Make this an error response; `text` says what went wrong and what to do next."""
        self.is_error = True
        self._error_lines.append(text)

    @property
    def summary(self) -> str:
        """The first line of the error or result: what the action log records."""
        lines = self._error_lines if self.is_error else self._result_lines
        return lines[0] if lines else (self._plain or "done")

    def plain(self, text: str, data: Any = None, *, error: bool = False) -> None:
        """Answer with exactly `text`, no sections: for compatible tool sets that must mimic another
        server's output. Structured content still carries `result` (`data`) and the events."""
        self._plain = text
        self._plain_data = data
        if error:
            self.is_error = True
            self._error_lines.append(text)

    def show_tabs(self) -> None:
        """Include `### Tabs` even if nothing changed."""
        self._force_tabs = True

    def set_page(self, tab: Tab, *, changes: bool = False) -> None:
        """Report `tab`'s url and title; with `changes`, also what changed on it since its previous
        snapshot (a fresh snapshot is taken after the action has settled)."""
        self._page_tab = tab
        self._page_changes = changes

    def set_snapshot(self, snapshot: Snapshot, tab: Tab) -> None:
        """Show a whole snapshot (browser_snapshot)."""
        self._page_tab = tab
        self._snapshot = snapshot

    def add_image(self, data: bytes, mime_type: str = "image/png") -> None:
        self._images.append(
            ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)
        )

    # -- finishing ---------------------------------------------------------------------------

    async def build(self, session: SessionState | None) -> CallToolResult:
        """Settle the browser, collect what the client has not seen, and render both forms."""
        if self._plain is not None:
            return await self._build_plain(session)
        data: dict[str, Any] = {}
        sections: list[str] = []
        if self.is_error:
            sections.append("### Error\n" + "\n".join(self._error_lines))
            data["error"] = "\n".join(self._error_lines)
        else:
            sections.append("### Result\n" + ("\n".join(self._result_lines) or "Done."))
        if self._result_data:
            data["result"] = self._result_data

        if session is not None:
            manager = session.manager
            # Re-reading the acted-on tab and waiting for the tabs it opened overlap: neither needs the other.
            _, (page_text, snapshot_text) = await asyncio.gather(manager.settle(), self._page_sections(data))
            # Tabs may have appeared while the snapshot was read; from here on nothing awaits, so
            # the events and the tab list below describe the same moment.
            await manager.settle()
            events = manager.events.history(since=session.last_event_seq)
            session.last_event_seq = manager.events.last_seq
            if events:
                sections.append("### Events\n" + "\n".join(f"- {e.describe()}" for e in events))
            data["events"] = [e.to_dict() for e in events]

            tabs_text = self._tabs_section(session, data)
            if tabs_text:
                sections.append(tabs_text)
            if page_text:
                sections.append(page_text)
            if snapshot_text:
                sections.append(snapshot_text)

        content: list[ContentBlock] = [TextContent(type="text", text="\n\n".join(sections))]
        content.extend(self._images)
        return CallToolResult(content=content, structured_content=data, is_error=self.is_error)

    async def _build_plain(self, session: SessionState | None) -> CallToolResult:
        data: dict[str, Any] = {"result": self._plain_data}
        if self.is_error:
            data["error"] = self._plain
        if session is not None:
            await session.manager.settle()
            events = session.manager.events.history(since=session.last_event_seq)
            session.last_event_seq = session.manager.events.last_seq
            data["events"] = [e.to_dict() for e in events]
        content: list[ContentBlock] = [TextContent(type="text", text=self._plain or "")]
        content.extend(self._images)
        return CallToolResult(content=content, structured_content=data, is_error=self.is_error)

    def _tabs_section(self, session: SessionState, data: dict[str, Any]) -> str:
        manager = session.manager
        infos = manager.tabs()
        telemetry = session.telemetry
        errors = {k: v for k, v in telemetry.error_counts_since(session.last_error_seq).items() if v}
        session.last_error_seq = telemetry.last_seq
        # Dialogs are part of the shape: a tab blocked by one is worth telling at once.
        shape = tuple((i.id, i.active, i.dialog is not None) for i in infos)
        changed = shape != session.shown_tabs
        if not (changed or self._force_tabs or errors):
            return ""
        session.shown_tabs = shape
        active = _active_tab_id(session)
        listed = self._result_data.get("tabs") if self._result_data else None
        if isinstance(listed, list) and [t.get("id") for t in listed] == [i.id for i in infos]:
            # browser_tabs list already carries this list in its result: add the error counts there
            # instead of sending every tab twice (it is most of a long list's bytes).
            for entry in listed:
                entry["newErrors"] = errors.get(entry["id"], 0)
        else:
            data["tabs"] = [{**i.to_dict(), "newErrors": errors.get(i.id, 0)} for i in infos]
        data["activeTabId"] = active
        lines: list[str] = []
        default = manager.default_instance
        heading: str | None = None
        for info in infos:
            # With several browsers, each has its own active tab: say which tabs are whose.
            if len(manager.instances) > 1 and info.instance_id != heading:
                heading = info.instance_id
                is_default = default is not None and default.id == heading
                lines.append(f"instance {heading}{' (default)' if is_default else ''}:")
            lines.append(describe_tab(info, new_errors=errors.get(info.id, 0)))
        if errors:
            lines.append("(see errors with browser_observe(what='errors', tabId=N))")
        return "### Tabs\n" + ("\n".join(lines) if lines else "(no open tabs)")

    async def _page_sections(self, data: dict[str, Any]) -> tuple[str, str]:
        tab = self._page_tab
        if tab is None or tab.closed:
            return "", ""
        snapshot_text = ""
        if self._snapshot is not None:
            snap = self._snapshot
            snapshot_text = f"### Snapshot\n```yaml\n{snap.text}\n```"
            data["snapshot"] = snap.text
        elif self._page_changes:
            snapshot_text = await self._changes(tab, data)
            if tab.closed or tab.page.is_closed():  # it closed itself after the action (window.close)
                data.pop("snapshot", None)
                data.pop("snapshotChanges", None)
                return "", ""
        data["page"] = {"tabId": tab.id, "url": tab.url, "title": tab.title}
        page_text = f"### Page\n- Tab: {tab.id}\n- URL: {tab.url}\n- Title: {tab.title or '(no title)'}"
        return page_text, snapshot_text

    async def _changes(self, tab: Tab, data: dict[str, Any]) -> str:
        previous = tab.last_snapshot
        try:
            fresh = await tab.snapshot()
        except DialogOpenError:
            return (
                f"### Snapshot\n(tab {tab.id} shows a dialog; handle it with "
                f"browser_handle_dialog(tabId={tab.id}) before reading the page)"
            )
        except TabpilotError as exc:
            return f"### Snapshot\n(no snapshot: {exc})"
        except Exception as exc:  # the page navigated or closed while we read it
            return f"### Snapshot\n(no snapshot: {exc}; call browser_snapshot(tabId={tab.id}) to retry)"
        # A new document (navigation, reload) shares no ref with the old one: show it whole.
        if previous is None or previous.url != fresh.url or not previous.refs & fresh.refs:
            data["snapshot"] = fresh.text
            return f"### Snapshot\n```yaml\n{fresh.text}\n```"
        added, removed = changed_lines(previous.text, fresh.text)
        cut = max(0, len(added) - MAX_CHANGED_LINES)
        shown = added[:MAX_CHANGED_LINES]
        data["snapshotChanges"] = {"tabId": tab.id, "lines": shown, "removedLines": removed, "cutLines": cut}
        head = (
            f"### Snapshot\nChanges on tab {tab.id} since its previous snapshot "
            f"(browser_snapshot(tabId={tab.id}) shows the whole page):"
        )
        if not added and not removed:
            return f"{head}\n(no changes)"
        body = "\n".join(shown)
        tail = []
        if removed:
            tail.append(f"({removed} line{'s' if removed != 1 else ''} removed)")
        if cut:
            tail.append(f"({cut} more changed lines cut; take a snapshot to see them)")
        return f"{head}\n```yaml\n{body}\n```" + ("\n" + "\n".join(tail) if tail else "")


def _active_tab_id(session: SessionState) -> int | None:
    default = session.manager.default_instance
    active = default.active_tab if default is not None else None
    return active.id if active is not None else None
