"""The response every tool returns: fixed sections, the same facts as text and as JSON.

A tool fills a `Response`; the tool wrapper finishes it with `await response.build(session)`,
which adds what the client has not heard yet. Sections, in order:

    ### Result      what the tool did (or ### Error: what went wrong and what to do next)
    ### Events      every tab event since this client's previous response, one line each
    ### Tabs        the tab list, whenever the tab set or an active tab changed (or `show_tabs()`)
    ### Page        url and title of the tab the tool worked on (`set_page(tab)`), unless
                    ### Tabs is in the same response (its line there says the same)
    ### Snapshot    the whole snapshot (`set_snapshot`), or after an action only the lines that
                    changed on that tab (`set_page(tab, changes=True)`); a tree is cut at the
                    server's limit (--max-snapshot-chars), saying what went and how to read on

With `structured` (the server's --structured-content), MCP structured content carries the same
facts under fixed keys: `result`, `error`, `events`, `tabs`, `activeTabId`, `page`, `snapshot`,
`snapshotChanges`, `snapshotCut`. It is off by default: a host that gets both forms shows the model the JSON
instead of the text, or both. Images (screenshots) go in as image content.
`render` writes sections as text and `parse_response` reads them back (clients and tests).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent

from tabpilot import (
    DialogOpenError,
    Secrets,
    Snapshot,
    Tab,
    TabEvent,
    TabInfo,
    TabManager,
    TabpilotError,
    parse_ref,
)

from .advice import (
    DEFAULT_CALLS,
    ToolCalls,
    error_page_mark,
    error_text,
    event_line,
    page_line,
    short,
    tab_line,
    tabs_renamed,
)
from .state import SessionState

MAX_CHANGED_LINES = 200
"""More changed lines than this are cut: the agent can take the whole snapshot instead."""
MAX_REMOVED_SHOWN = 5
"""Removed lines up to this many are named (which row of a list went); more are counted."""
BRIEF_TABS_FROM = 6
"""From this many open tabs, a `### Tabs` after tabs opened or closed lists every id and the lines
of the new tabs only (the others as last listed): a whole list of 16 tabs was most of the answer
of a click that opened one."""


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    content: str


def render(sections: Sequence[Section]) -> str:
    """Sections as the text the model reads."""
    return "\n\n".join(f"### {s.title}\n{s.content}" for s in sections)


def parse_response(text: str) -> dict[str, str]:
    """The sections of a response's text, by title, each body stripped (the inverse of `render`)."""
    sections: dict[str, str] = {}
    title: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("### "):
            if title is not None:
                sections[title] = "\n".join(body).strip()
            title, body = line[4:].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        sections[title] = "\n".join(body).strip()
    return sections


_FOCUS = " [active]"


def _lost_focus(line: str, focused: dict[str, str]) -> bool:
    """Whether `line` is an element's line of `focused` (the old lines with ` [active]`, by ref)
    less that mark alone."""
    ref = _REF.search(line)
    was = focused.get(ref.group(1)) if ref is not None else None
    return was is not None and was.replace(_FOCUS, "", 1) == line


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """Lines of `after` that are new or changed compared with `before`, and the lines of `before`
    that are gone: an element is gone when its ref is (a changed one is shown in its new form, not
    as removed, unless it only lost the focus); a line without a ref when its text is, unless a
    new line without one took its place in the same run of changes (its text changed)."""
    old, new = before.splitlines(), after.splitlines()
    old_lines, new_lines = set(old), set(new)
    new_refs = {m.group(1) for m in _REF.finditer(after)}
    focused = {ref.group(1): line for line in old if _FOCUS in line and (ref := _REF.search(line))}
    added: list[str] = []
    removed: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            # A line that only lost the focus is left out: the line that has it now says where it
            # went, and the old one read as the parent of the lines below it (the page's root,
            # focused after a load, after nearly every first click).
            added.extend(line for line in new[j1:j2] if not _lost_focus(line, focused))
        if op in ("replace", "delete"):
            retexted = sum(1 for line in new[j1:j2] if not _REF.search(line) and line not in old_lines)
            for line in old[i1:i2]:
                ref = _REF.search(line)
                if ref is not None:
                    if ref.group(1) not in new_refs:
                        removed.append(line)
                elif line not in new_lines:
                    if retexted:
                        retexted -= 1
                    else:
                        removed.append(line)
    return added, removed


_REF = re.compile(r"\[ref=([^\]]+)\]")


LONG_LINE_SHARE = 8
"""A cut tree shows a line longer than this share of the limit (a long text, a `data:` URL) shortened
to it: one such line took the limit whole and hid every element after it, with no ref to read on by."""
MIN_LONG_LINE = 200
"""The fewest characters of a long line a cut tree shows, however small the limit."""


@dataclass(frozen=True, slots=True)
class Cut:
    """A snapshot cut to the server's limit (`cut_snapshot`): the whole lines kept, and what went."""

    text: str
    total_chars: int
    total_lines: int
    shown_lines: int
    depth: int | None
    """The most levels of the tree that fit the limit whole (what a read at that depth shows), or
    None when not even the top level does."""
    shortened: int = 0
    """How many of the lines shown are shortened (longer than `long_line(limit)`)."""

    def to_dict(self) -> dict[str, int]:
        said = {
            "shownChars": len(self.text),
            "totalChars": self.total_chars,
            "shownLines": self.shown_lines,
            "totalLines": self.total_lines,
        }
        return {**said, "shortenedLines": self.shortened} if self.shortened else said


def long_line(limit: int) -> int:
    """The most characters of one line a tree cut at `limit` shows (`LONG_LINE_SHARE`)."""
    return max(limit // LONG_LINE_SHARE, MIN_LONG_LINE)


def _shortened(line: str, most: int) -> str:
    """`line`'s first `most` characters, its ref kept (a long name comes before it), and how many
    more it has."""
    head, ref = line[:most], _REF.search(line)
    if ref is None or ref.end() <= most:
        return f"{head}… ({len(line) - most:,} more characters)"
    head = head[: ref.start()].rstrip()
    return f"{head}… {ref.group()} ({len(line) - len(head) - len(ref.group()):,} more characters)"


def cut_snapshot(text: str, limit: int) -> Cut | None:
    """`text` cut after its last whole line within `limit` characters, each line longer than
    `long_line(limit)` shortened to that; None when it fits. Every ref of the tree keeps working
    (the whole tree was read): the cut is only of what is shown."""
    if len(text) <= limit:
        return None
    lines = text.splitlines()
    most = long_line(limit)
    kept: list[str] = []
    shortened = size = 0
    for line in lines:
        long = len(line) > most
        if long:
            line = _shortened(line, most)
        size += len(line) + (1 if kept else 0)
        if size > limit:
            break
        kept.append(line)
        shortened += long
    by_level: dict[int, int] = {}
    for line in lines:
        level = (len(line) - len(line.lstrip(" "))) // 2
        by_level[level] = by_level.get(level, 0) + len(line) + 1
    depth: int | None = None
    upto = 0
    for level in range(max(by_level)):  # not the deepest: all levels are the tree, which does not fit
        upto += by_level.get(level, 0)
        if upto - 1 > limit:
            break
        if level >= 1:  # depth=1 is the root and its children
            depth = level
    return Cut("\n".join(kept), len(text), len(lines), len(kept), depth, shortened)


def cut_note(cut: Cut, limit: int, ways: Sequence[str]) -> str:
    """What a cut snapshot says below its lines: how much went, and `ways`, the reads that show the
    rest (in the calls of the answer's tool set)."""
    left_lines = cut.total_lines - cut.shown_lines
    if left_lines:
        said = (
            f"{left_lines:,} more lines ({cut.total_chars - len(cut.text):,} characters) are left out, of "
            f"{cut.total_lines:,} lines in all"
        )
        if cut.shortened:
            said += f", and {cut.shortened:,} shown {'is' if cut.shortened == 1 else 'are'} shortened"
    else:  # every line fits once the long ones are shortened
        said = f"all {cut.total_lines:,} lines are shown, {cut.shortened:,} of them shortened"
    if cut.shortened:
        said += f" to {long_line(limit):,} characters (…)"
    return f"(Cut at {limit:,} characters, the server's limit: {said}. To read on: {'; '.join(ways)}.)"


def _reads_on(cut: Cut, tab_id: int, *, depth: int | None, ref: str | None) -> list[str]:
    """The `browser_snapshot` reads that show what a cut left out."""
    of = f"ref='{tab_id}{parse_ref(ref)[1]}'" if ref is not None else f"tabId={tab_id}"
    ways = []
    if cut.depth is not None:
        ways.append(f"browser_snapshot({of}, depth={cut.depth}) shows the tree to depth {cut.depth} whole")
    ways.append("browser_snapshot(ref=...) one element's subtree")
    same = f", depth={depth}" if depth is not None else ""
    ways.append(f"browser_snapshot({of}{same}, full=true) all of it")
    return ways


def _yaml(text: str) -> str:
    if not text.strip():  # about:blank, a page still empty
        return "(the page is empty: nothing in its accessibility tree)"
    return f"```yaml\n{text}\n```"


class Response:
    """What one tool call answers; see the module docstring."""

    def __init__(
        self,
        tool: str,
        *,
        secrets: Secrets | None = None,
        structured: bool = False,
        calls: ToolCalls = DEFAULT_CALLS,
    ) -> None:
        self.tool = tool
        self.calls = calls
        self._secrets = secrets
        self._structured = structured
        self.is_error = False
        self._result_lines: list[str | Callable[[], str]] = []
        self._result_data: dict[str, Any] = {}
        self._late_data: list[Callable[[], dict[str, Any]]] = []
        self._error_lines: list[str] = []
        self._force_tabs = False
        self._brief_tabs = False
        self._tabs_listed = False
        self._page_tab: Tab | None = None
        self._page_changes = False
        self._page_into_result = False
        self._snapshot: Snapshot | None = None
        self._snapshot_read: tuple[int | None, str | None, bool] = (None, None, False)
        """The depth and ref `_snapshot` was read with, and whether it is shown whole (full=true)."""
        self._images: list[ImageContent] = []
        self._plain: str | None = None
        self._plain_data: Any = None
        self._plain_later: Callable[[], tuple[str, Any]] | None = None
        self._told: set[tuple[str, int]] = set()

    # -- what tools call ---------------------------------------------------------------------

    def result(
        self,
        text: str | Callable[[], str],
        data: dict[str, Any] | Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """Add a line to `### Result`, and facts to structured `result`. A function as `text` is
        called when the response is built, for a line about what may change until then (a tab the
        action opened may close itself): it then tells the same moment as ### Events and ### Tabs.
        A function as `data` likewise gives the facts of that moment."""
        self._result_lines.append(text)
        if callable(data):
            self._late_data.append(data)
        elif data:
            self._result_data.update(data)

    def _write_late_data(self) -> None:
        late, self._late_data = self._late_data, []
        for facts in late:
            self._result_data.update(facts())

    def error(self, text: str) -> None:
        """Make this an error response; `text` says what went wrong and what to do next."""
        self.is_error = True
        self._error_lines.append(text)

    def fail(self, exc: BaseException) -> None:
        """Make this an error response for `exc`, in words that name the next call."""
        self.error(error_text(exc, self.calls))

    @property
    def summary(self) -> str:
        """The first line of the error or result: what the action log records. Read it after
        `build`: a line written late (`result` given a function) is fixed when first read."""
        lines = self._error_lines if self.is_error else self._result_lines
        first = lines[0] if lines else None
        return (first() if callable(first) else first) or self._plain or "done"

    def _result_text(self) -> str:
        return "\n".join(line() if callable(line) else line for line in self._result_lines)

    def plain(self, text: str, data: Any = None, *, error: bool = False) -> None:
        """Answer with exactly `text`, no sections: for compatible tool sets that must mimic another
        server's output. Structured content still carries `result` (`data`) and the events."""
        self._plain = text
        self._plain_data = data
        if error:
            self.is_error = True
            self._error_lines.append(text)

    def plain_later(self, make: Callable[[], tuple[str, Any]]) -> None:
        """`plain` with the text and structured result `make()` gives, read again when the response
        is built, after the browser has settled: a list of tabs tells the same moment as the
        events that come with it (a tab that leaves meanwhile is not listed beside its leaving).
        `make()` runs now too: what it raises fails the call here, as any tool's error does."""
        self.plain(*make())
        self._plain_later = make

    def told(self, event_type: str, *tab_ids: int) -> None:
        """The result line already says this (`tab_opened` of a tab the tool opened, ...): leave
        these events out of `### Events` (structured content keeps every event)."""
        self._told.update((event_type, tab_id) for tab_id in tab_ids)

    def show_tabs(self, *, brief: bool = False) -> None:
        """Include `### Tabs` even if nothing changed; with `brief`, an unchanged list is told as
        its ids only (the client has the titles and URLs from the last list it was shown)."""
        self._force_tabs = True
        self._brief_tabs = brief

    def set_page(self, tab: Tab, *, changes: bool = False, into_result: bool = False) -> None:
        """Report `tab`'s url and title; with `changes`, also what changed on it since its previous
        snapshot (a fresh snapshot is taken after the action has settled). `into_result`: the
        structured result's `url` and `title` are the page's as reported, read with the snapshot."""
        self._page_tab = tab
        self._page_changes = changes
        self._page_into_result = into_result

    def set_snapshot(
        self,
        snapshot: Snapshot,
        tab: Tab,
        *,
        depth: int | None = None,
        ref: str | None = None,
        whole: bool = False,
    ) -> None:
        """Show a snapshot (browser_snapshot), read with `depth` and `ref`: up to the server's limit
        (--max-snapshot-chars), or `whole`."""
        self._page_tab = tab
        self._snapshot = snapshot
        self._snapshot_read = (depth, ref, whole)

    def add_image(self, data: bytes, mime_type: str = "image/png") -> None:
        self._images.append(
            ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)
        )

    # -- finishing ---------------------------------------------------------------------------

    async def build(self, session: SessionState | None) -> CallToolResult:
        """Settle the browser, collect what the client has not seen, and render both forms."""
        data: dict[str, Any] = {}
        if self.is_error and self._plain is None and self.calls.plain_error is not None:
            # Every error of a compatible set reads as that system's do, whoever raised it (the tool,
            # the wrapper, the argument check): one place, not a catch in each tool.
            self._plain = self.calls.plain_error(self.tool, "\n".join(self._error_lines))
        if self._plain is not None:
            data["result"] = self._plain_data
            if self.is_error:
                data["error"] = self._plain
            notes: list[str] = []
            if session is not None:
                await session.manager.settle(grace=0)
                events = session.take_events()
                if self._structured:  # the JSON forms are built only for clients that get them
                    data["events"] = [e.to_dict() for e in events]
                notes = _plain_notes(events, self._told, session.manager, self.calls.tab_named)
            if self._plain_later is not None:
                # Unless that moment has no answer (the browser was lost meanwhile): the first stands.
                with contextlib.suppress(TabpilotError):
                    self._plain, data["result"] = self._plain_later()
            # A block of its own: the set's answer stays as that system's (JSON stays JSON).
            return self._result([self._plain, *(["\n".join(notes)] if notes else [])], data)

        sections: list[Section] = []
        if self.is_error:
            sections.append(Section("Error", "\n".join(self._error_lines)))
            data["error"] = "\n".join(self._error_lines)
        if self._result_data or self._late_data:
            data["result"] = self._result_data  # late facts are added to it below
        if session is None:
            self._write_late_data()
        else:
            manager = session.manager
            # Re-reading the acted-on tab and waiting for the tabs it opened overlap: neither needs the other.
            # No grace: an action has waited for the tabs it opens (a list or a read opens none).
            _, page = await asyncio.gather(manager.settle(grace=0), self._page_sections(data, session))
            # Tabs may have appeared while the snapshot was read; from here on nothing awaits, so
            # the events and the tab list below describe the same moment.
            await manager.settle(grace=0)
            events = session.take_events()
            self._write_late_data()
            if self._structured:
                data["events"] = [e.to_dict() for e in events]
            untold = _said_once(
                [e for e in events if e.tab_id is None or (e.type, e.tab_id) not in self._told]
            )
            if untold:
                default = manager.default_instance
                said = [event_line(e, default_instance=default.id if default else None) for e in untold]
                sections.append(Section("Events", "\n".join(f"- {line}" for line in said)))
            tabs = self._tabs_section(session, data)
            page_section, snapshot_section = page
            read = self._page_tab
            if read is not None and read.leaving:
                # Closed (or closing) while it was read: not shown as a page to work on.
                page_section = snapshot_section = None
                for key in ("page", "snapshot", "snapshotChanges", "snapshotCut"):
                    data.pop(key, None)
            if page_section is not None and not self._page_news(session, data):
                page_section = None
            sections += [s for s in (tabs, page_section, snapshot_section) if s is not None]
        if not self.is_error:  # written last: its lines may tell what happened until now
            sections.insert(0, Section("Result", self._result_text() or "Done."))
        return self._result([render(sections)], data)

    def _page_news(self, session: SessionState, data: dict[str, Any]) -> bool:
        """Whether `### Page` tells this client something: not when `### Tabs` in this response
        has the tab's line, nor, beside an action's changes, when the client last saw the tab with
        this URL and title (a whole tree keeps it, as its heading: a snapshot, a reload)."""
        page = data["page"]
        seen = (page["url"], page["title"])
        if self._tabs_listed or ("snapshot" not in data and session.seen_pages.get(page["tabId"]) == seen):
            return False
        session.seen_pages[page["tabId"]] = seen
        return True

    def _result(self, texts: list[str], data: dict[str, Any]) -> CallToolResult:
        if self._secrets:  # no secret value leaves the server: its placeholder shows instead
            texts = self._secrets.mask_all(texts)
            data = self._secrets.mask_all(data) if self._structured else data
        content: list[ContentBlock] = [TextContent(type="text", text=well_formed(t)) for t in texts]
        content.extend(self._images)
        structured = _outgoing(data) if self._structured else None
        return CallToolResult(content=content, structured_content=structured, is_error=self.is_error)

    def _tabs_section(self, session: SessionState, data: dict[str, Any]) -> Section | None:
        manager = session.manager
        infos = manager.tabs()
        telemetry = session.telemetry
        errors = {k: v for k, v in telemetry.error_counts_since(session.last_error_seq).items() if v}
        dropped = telemetry.errors_dropped_since(session.last_error_seq, (i.id for i in infos))
        session.last_error_seq = telemetry.last_seq
        # Dialogs are part of the shape: a tab blocked by one is worth telling at once.
        shape = tuple((i.id, i.active, i.dialog is not None) for i in infos)
        shown = session.shown_tabs
        changed = shape != shown or bool(errors) or bool(dropped)
        if not (changed or self._force_tabs):
            return None
        session.shown_tabs = shape
        default = manager.default_instance
        active = default.active_tab if default is not None else None
        active_id = active.id if active is not None else None
        # The client has every line from the last list when the same tabs are open and only the
        # active one moved: their ids say it (a list asked for is always given whole).
        same_tabs = shown is not None and not errors and not dropped and _set_of(shape) == _set_of(shown)
        brief_tabs = same_tabs and bool(infos) and (self._brief_tabs or not self._force_tabs)
        new = None if brief_tabs else self._new_tabs(manager, infos, shown, errors or dropped)
        if brief_tabs or new is not None:
            # The tabs listed before by their ids (only the active one moved, or tabs closed), and
            # the lines of the new ones: the full list is built only when it is given.
            data["activeTabId"] = active_id
            ids = ", ".join(f"{i.id}{' (active)' if i.id == active_id else ''}" for i in infos)
            if not new:
                return Section("Tabs", f"{len(infos)} open, as last listed: {ids}")
            session.seen_pages.update((i.id, (i.url, i.title)) for i in new)
            but = "the new one" if len(new) == 1 else "the new ones"
            head = f"{len(infos)} open, as last listed but {but}: {ids}"
            return Section("Tabs", "\n".join([head, *(tab_line(info, active_id=active_id) for info in new)]))
        self._tabs_listed = True
        session.seen_pages = {i.id: (i.url, i.title) for i in infos}
        if self._structured:
            self._structured_tabs(infos, errors, dropped, data)
        data["activeTabId"] = active_id
        lines: list[str] = []
        heading: str | None = None
        # With several browsers, each has its own active tab: say which tabs are whose. A lost
        # browser that was replaced has no tabs left to tell apart.
        browsers = {i.instance_id for i in infos} | {i.id for i in manager.instances if i.state == "open"}
        for info in infos:
            if len(browsers) > 1 and info.instance_id != heading:
                heading = info.instance_id
                is_default = default is not None and default.id == heading
                lines.append(f"instance {heading}{' (default)' if is_default else ''}:")
            lines.append(
                tab_line(
                    info,
                    active_id=active_id,
                    new_errors=errors.get(info.id, 0),
                    errors_dropped=info.id in dropped,
                )
            )
        if (errors or dropped) and session.config.shows_network:  # browser_observe is offered
            lines.append("(see errors with browser_observe(what='errors', tabId=N))")
        return Section("Tabs", "\n".join(lines) if lines else "(no open tabs)")

    def _new_tabs(
        self,
        manager: TabManager,
        infos: Sequence[TabInfo],
        shown: tuple[tuple[int, bool, bool], ...] | None,
        news: object,
    ) -> list[TabInfo] | None:
        """The tabs new since the list this client was last shown, when the rest of a long list is
        as shown then (`BRIEF_TABS_FROM`); None: the list is to be given whole (a short one, one
        asked for, new error counts, a dialog opened or closed, several browsers, mostly new tabs)."""
        if shown is None or self._force_tabs or news or len(infos) < BRIEF_TABS_FROM:
            return None
        if len({i.instance_id for i in infos} | {i.id for i in manager.instances if i.state == "open"}) > 1:
            return None
        before = {tab_id: dialog for tab_id, _, dialog in shown}
        if any(before[i.id] != (i.dialog is not None) for i in infos if i.id in before):
            return None
        new = [i for i in infos if i.id not in before]
        return new if len(new) * 2 <= len(infos) else None

    def _structured_tabs(
        self, infos: Sequence[TabInfo], errors: dict[int, int], dropped: set[int], data: dict[str, Any]
    ) -> None:
        def counts(info: TabInfo) -> dict[str, Any]:
            # newErrorsDropped: more came than newErrors says, and were dropped.
            said = {"newErrors": errors.get(info.id, 0)}
            return {**said, "newErrorsDropped": True} if info.id in dropped else said

        listed = self._result_data.get("tabs")
        if isinstance(listed, list) and [t.get("id") for t in listed] == [i.id for i in infos]:
            # browser_tabs list already carries this list in its result: add the error counts there
            # instead of sending every tab twice (it is most of a long list's bytes), and bring it
            # up to what the text says (a title can change while the response is built).
            for entry, info in zip(listed, infos, strict=True):
                entry.update(info.to_dict(), **counts(info))
        else:
            data["tabs"] = [{**i.to_dict(), **counts(i)} for i in infos]

    async def _page_sections(
        self, data: dict[str, Any], session: SessionState
    ) -> tuple[Section | None, Section | None]:
        limit = session.config.max_snapshot_chars
        tab = self._page_tab
        if tab is None or tab.leaving:  # going: the result says so
            return None, None
        snapshot: Section | None = None
        if self._snapshot is not None:
            depth, ref, whole = self._snapshot_read
            snapshot = _tree(
                self._snapshot.text, None if whole else limit, tab.id, data, depth=depth, ref=ref
            )
        elif self._page_changes:
            snapshot = await self._changes(tab, data, session)
            if tab.is_gone:  # it closed itself after the action (window.close): `build` drops its keys
                return None, None
        data["page"] = {"tabId": tab.id, "url": tab.url, "title": tab.title}
        if self._page_into_result:
            self._result_data.update(url=tab.url, title=tab.title)
        mark = ""
        if tab.error_page:
            blocked = tab.blocked
            data["page"]["errorPage"] = True
            if blocked:
                data["page"]["blocked"] = True
            mark = f" [{error_page_mark(blocked)}]"
        page = Section("Page", f"tab {tab.id}: {page_line(tab.title, tab.url)}{mark}")
        return page, snapshot

    async def _changes(self, tab: Tab, data: dict[str, Any], session: SessionState) -> Section:
        limit = session.config.max_snapshot_chars
        previous = tab.last_snapshot
        try:
            fresh = await tab.snapshot()
        except DialogOpenError as exc:
            held = "shows a dialog" if exc.tab_id == tab.id else f"waits for the dialog on tab {exc.tab_id}"
            return Section(
                "Snapshot",
                f"(tab {tab.id} {held}; handle it with browser_handle_dialog(tabId={exc.tab_id}) before "
                "reading the page)",
            )
        except TabpilotError as exc:
            return Section("Snapshot", f"(no snapshot: {error_text(exc)})")
        # A new document (navigation, reload) shares no ref with the old one: show it whole. The
        # same document under another URL (a #fragment, an app's pushState route) keeps its refs:
        # its changes, as after any action.
        if previous is None or not previous.refs & fresh.refs:
            session.read_again(tab.id, None, None, fresh.url, fresh.text)  # shown (if cut, it says so)
            return _tree(fresh.text, limit, tab.id, data)
        added, removed = changed_lines(previous.text, fresh.text)
        shown = added[:MAX_CHANGED_LINES]
        size = 0
        for at, line in enumerate(shown):  # long lines, too, are cut at the limit
            size += len(line) + 1
            if size > limit:
                shown = shown[:at]
                break
        cut = len(added) - len(shown)
        # Changes cut, or lines removed but only counted: the client lacks part of the tree now, and
        # the snapshot it is told to take shows the tree, not "unchanged".
        session.tree_changed(tab.id, previous, fresh, all_told=not cut and len(removed) <= MAX_REMOVED_SHOWN)
        data["snapshotChanges"] = {
            "tabId": tab.id,
            "lines": shown,
            "removedLines": len(removed),
            "removed": [line.strip() for line in removed[:MAX_REMOVED_SHOWN]],
            "cutLines": cut,
        }
        head = f"Changes since the previous snapshot of tab {tab.id}:"
        if not added and not removed:
            return Section("Snapshot", f"{head}\n(no changes)")
        tail = []
        if 0 < len(removed) <= MAX_REMOVED_SHOWN:
            tail.append("Removed:\n" + "\n".join(line.strip() for line in removed))
        elif removed:
            tail.append(f"({len(removed)} lines removed)")
        if cut:
            tail.append(f"({cut} more changed lines cut; take a snapshot to see them)")
        lines = [_yaml("\n".join(shown))] if shown else []  # only removals: no empty block
        return Section("Snapshot", "\n".join([head, *lines, *tail]))


def _tree(
    text: str,
    limit: int | None,
    tab_id: int,
    data: dict[str, Any],
    *,
    depth: int | None = None,
    ref: str | None = None,
) -> Section:
    """`### Snapshot` with a tree (`data["snapshot"]`), cut to `limit` (None: whole) with a note."""
    cut = None if limit is None else cut_snapshot(text, limit)
    if limit is None or cut is None:
        data["snapshot"] = text
        return Section("Snapshot", _yaml(text))
    data["snapshot"] = cut.text
    data["snapshotCut"] = {"tabId": tab_id, **cut.to_dict()}
    note = cut_note(cut, limit, _reads_on(cut, tab_id, depth=depth, ref=ref))
    return Section("Snapshot", f"{_yaml(cut.text)}\n{note}" if cut.text else note)


def _set_of(shape: Sequence[tuple[int, bool, bool]]) -> list[tuple[int, bool]]:
    """A shown tab list without its active marks: the ids in order and which have a dialog."""
    return [(tab_id, dialog) for tab_id, _, dialog in shape]


STRUCTURED_URL_CHARS = 4096
"""URLs (and titles) longer than this are cut in structured content too: a page can make them any size."""
_CUT_KEYS = ("url", "title")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with each lone UTF-16 surrogate (half of an emoji a page's title cut, a script's
    '\\ud800') as U+FFFD: an answer must encode as UTF-8, and one that did not ended the server."""
    if text.isascii():  # most text; CPython knows it without reading the string
        return text
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def _outgoing(value: Any, key: str = "") -> Any:
    """Structured content as it goes out: every string `well_formed` (keys too), and every string
    under a key ending in "url" or "title" cut to STRUCTURED_URL_CHARS."""
    if isinstance(value, str):
        value = well_formed(value)
        if len(value) > STRUCTURED_URL_CHARS and key.lower().endswith(_CUT_KEYS):
            return short(value, STRUCTURED_URL_CHARS)
        return value
    if isinstance(value, dict):
        return {well_formed(k): _outgoing(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_outgoing(v, key) for v in value]
    return value


def _said_once(events: list[TabEvent]) -> list[TabEvent]:
    """`events` but the activation of a tab because the active tab closed, when that close is
    among them: its line says which tab is active now ("tab 3 closed (by page); active tab is now 2")."""
    closes = {
        (e.tab_id, e.data.get("activeTabId"))
        for e in events
        if e.type == "tab_closed" and e.data.get("activeChanged")
    }
    return [
        e
        for e in events
        if not (
            e.type == "tab_activated"
            and e.data.get("reason") == "promoted"
            and (e.data.get("previousTabId"), e.tab_id) in closes
        )
    ]


def _plain_notes(
    events: list[TabEvent],
    told: set[tuple[str, int]],
    manager: TabManager,
    named: Callable[[int], str] | None = None,
) -> list[str]:
    """What a compatible set's answer adds, in a block of its own (those sets show no `### Events`),
    in words free of the default set's (no instances, no tools of its): a browser lost and launched
    again since the client's previous answer (without it, its tabs would vanish from the lists
    unexplained, and new ids appear), and the tabs closed by no call (a popup's window.close(), the
    user, the tab cap) that the answer did not tell (an error, a state or list call): the next calls
    act on another tab, and the agent is told which, as it is now. `named`: how the set names a
    tab (`ToolCalls.tab_named`; None: `tab 2`, and the active tab by its id)."""
    several = sum(1 for i in manager.instances if i.state == "open") > 1
    lost: list[str] = []
    closed: list[str] = []
    back: list[str] = []
    moved = False
    for e in events:
        browser = f"the browser ({e.instance_id})" if several else "the browser"
        if e.type == "instance_lost":
            lost.append(f"{browser} was lost: {e.data.get('reason')}")
        elif e.type == "instance_relaunched":
            again = e.data.get("reconnected") or e.data.get("kind") == "extension"
            tabs = "its tabs keep their ids" if e.data.get("tabsKept") else "the old tabs are gone"
            back.append(
                f"a new browser was {'connected again' if again else 'launched'} in its place: {tabs}"
            )
            moved = True
        elif (
            e.type == "tab_closed"
            and e.data.get("by") != "tool"
            and e.tab_id is not None
            and ("tab_closed", e.tab_id) not in told
        ):
            # The active tab as it is now, once below: the event's was of its moment (no tab at all
            # while a lost browser's tabs closed, before its successor opened one).
            moved = moved or bool(e.data.get("activeChanged"))
            line = event_line(dataclasses.replace(e, data={**e.data, "activeChanged": False}))
            closed.append(tabs_renamed(line, {e.tab_id}, named) if named is not None else line)
    lines = lost + closed + back  # a lost browser's tabs close before it is said lost
    if lines and moved:
        default = manager.default_instance
        active = default.active_tab if default is not None and default.state == "open" else None
        now = "" if active is None else named(active.id) if named is not None else str(active.id)
        lines[-1] += f"; active tab is now {now}" if now else "; no tab is open"
    return [f"Note: {line}." for line in lines]
