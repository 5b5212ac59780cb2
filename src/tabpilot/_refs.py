"""Element refs that carry their tab: Playwright's `e5` on tab 3 is `3e5`, its `f1e2` is `3f1e2`."""

from __future__ import annotations

import re
from collections.abc import Collection

from ._errors import quoted, text_given
from ._ids import decimal_id

# ASCII digits only: `１e4` (a full-width 1) is no ref of tab 1, as "２" is no tab id.
_TAB_REF = re.compile(r"^([0-9]+)((?:f[0-9]+)?e[0-9]+)$")
_PAGE_REF = re.compile(r"^(?:f[0-9]+)?e[0-9]+$")
_SNAPSHOT_REF = re.compile(r"\[ref=((?:f\d+)?e\d+)\]")
_POINTER = " [cursor=pointer]"
_CLICKABLE_ROLE = re.compile(r"\s*- (?:link|button)\b")


def parse_ref(ref: str) -> tuple[int | None, str]:
    """Split a ref into (tab id, per-page ref). A bare per-page ref gives (None, ref).

    Raises ValueError for text that is no ref at all.
    """
    text = text_given(ref, "ref", "'3e5' from a snapshot").strip()
    match = _TAB_REF.match(text)
    if match:
        tab_id = decimal_id(match.group(1))
        if tab_id is None:  # int() of 4,300 digits or more raises in Python's own words
            raise ValueError(
                f"{quoted(ref, 60)} names no open tab: no tab has an id that large. Refs come from a snapshot."
            )
        return tab_id, match.group(2)
    if _PAGE_REF.match(text):
        return None, text
    raise ValueError(
        f"{quoted(ref, 60)} is not an element ref. Refs look like '3e5' (tab 3, element e5) and come from "
        "a snapshot."
    )


def tab_ref(tab_id: int, page_ref: str) -> str:
    return f"{tab_id}{page_ref}"


def scope_snapshot(tab_id: int, snapshot: str) -> tuple[str, set[str]]:
    """Prefix every ref in a Playwright aria snapshot with its tab id, and drop `[cursor=pointer]`
    where the role already says the element is clickable (links, buttons: most of a page's
    pointers). Other elements keep it: it marks a `div` that acts as a button.

    Returns the rewritten text and the set of per-page refs it contained.
    """
    snapshot = _drop_role_pointers(snapshot)
    found = _SNAPSHOT_REF.findall(snapshot)
    if snapshot.count("[ref=") == len(found):
        # Every "[ref=" is a ref (the usual case): one str.replace, several times faster than a
        # regex substitution on a large page.
        return snapshot.replace("[ref=", f"[ref={tab_id}"), set(found)
    return _SNAPSHOT_REF.sub(rf"[ref={tab_id}\1]", snapshot), set(found)


_FRAME_PREFIX = re.compile(r"\[ref=(f\d+)e")
_ANY_REF = re.compile(r"\[ref=((?:f\d+)?)(e\d+)\]")


class FrameRefs:
    """One tab's names for the frames of Playwright's refs.

    Playwright names an iframe's elements `f1e1`, `f1e2`, ... and keeps `f1` when the iframe
    loads another document, whose elements start again at `f1e1`: a ref the agent was given for
    one button would name another on the iframe's next page. So once an iframe has loaded a
    document (`frames_moved`), the next snapshot shows the refs of every iframe under a frame
    number this tab has not shown before, and the old ones name nothing (`playwright_ref` gives
    None). The page's own refs (`e5`, or `f2e5` after a navigation) keep their names, and nothing
    is renamed while no iframe moves, which is nearly always."""

    def __init__(self) -> None:
        self._shown: dict[str, str] = {"": ""}
        """Playwright's frame prefix -> the one shown ('' for the first document's own refs)."""
        self._playwright: dict[str, str] = {"": ""}
        """The reverse, for the prefixes still in use."""
        self._used: set[str] = {""}
        """Every prefix shown so far on the tab: never shown again for another frame."""
        self._main = ""
        """Playwright's prefix of the page's own refs in the latest snapshot."""
        self._moved_on: set[str] = set()
        """Prefixes shown for iframes that have loaded another document since."""
        self.moves = 0
        """How many times an iframe has loaded another document (`frames_moved`)."""

    def frames_moved(self) -> None:
        """An iframe loaded another document: every iframe's prefix is shown anew from the next
        snapshot (which prefix is that iframe's, Playwright does not say)."""
        self.moves += 1
        self._moved_on |= self._retire(keep={"", self._main})

    def document_changed(self) -> None:
        """The page loaded a new document: Playwright names its own refs and its iframes' anew."""
        self._retire(keep={""})

    def _retire(self, keep: set[str]) -> set[str]:
        retired = set()
        for playwright in [p for p in self._shown if p not in keep]:
            alias = self._shown.pop(playwright)
            del self._playwright[alias]
            retired.add(alias)
        return retired

    def shown(self, snapshot: str, *, whole: bool = True, moves: int | None = None) -> str:
        """`snapshot` (Playwright's; `whole`: of the whole page, not of one element's subtree)
        with its refs under the prefixes this tab shows. `moves`: `self.moves` before the page
        was read: an iframe that loaded another document meanwhile may be read as it was, so the
        names given now are retired at once (its refs then ask for a new snapshot)."""
        try:
            return self._shown_now(snapshot, whole)
        finally:
            if moves is not None and moves != self.moves:
                self.frames_moved()

    def _shown_now(self, snapshot: str, whole: bool) -> str:
        if whole and (first := _ANY_REF.search(snapshot)) is not None:
            self._main = first.group(1)  # the root line is the page's own
        if "[ref=f" not in snapshot:  # the page's first document and no iframe: nothing to rename
            return snapshot
        prefixes = dict.fromkeys(_FRAME_PREFIX.findall(snapshot))  # in the order they appear
        new = [p for p in prefixes if p not in self._shown]
        # Playwright's own name where this tab has not shown it yet, then new names for the rest.
        for playwright in sorted(new, key=lambda p: p in self._used):
            alias = playwright if playwright not in self._used else self._fresh()
            self._shown[playwright] = alias
            self._playwright[alias] = playwright
            self._used.add(alias)
        if all(self._shown[p] == p for p in prefixes):
            return snapshot
        return _ANY_REF.sub(lambda m: f"[ref={self._shown[m.group(1)]}{m.group(2)}]", snapshot)

    def playwright_ref(self, shown_ref: str) -> str | None:
        """The Playwright ref of a per-page ref as shown (`f4e2` -> `f1e2`); None when its frame
        has moved on since it was shown."""
        match = _ANY_REF.fullmatch(f"[ref={shown_ref}]")
        if match is None:
            return None
        playwright = self._playwright.get(match.group(1))
        return None if playwright is None else playwright + match.group(2)

    def moved_on(self, shown_ref: str) -> bool:
        """Whether `shown_ref` was shown for an iframe that has loaded another document since."""
        match = _ANY_REF.fullmatch(f"[ref={shown_ref}]")
        return match is not None and match.group(1) in self._moved_on

    def _fresh(self) -> str:
        n = 1
        while f"f{n}" in self._used:
            n += 1
        return f"f{n}"


def _drop_role_pointers(snapshot: str) -> str:
    """The snapshot without the first ` [cursor=pointer]` of each link's and button's line. Only
    the lines with the marker are looked at (a regex tried at every line start took three times
    as long on a page of 300 links)."""
    parts: list[str] = []
    kept = 0
    last_line = -1
    at = snapshot.find(_POINTER)
    while at != -1:
        line = snapshot.rfind("\n", 0, at) + 1
        if line != last_line and _CLICKABLE_ROLE.match(snapshot, line):
            parts.append(snapshot[kept:at])
            kept = at + len(_POINTER)
            last_line = line
        at = snapshot.find(_POINTER, at + len(_POINTER))
    if not parts:
        return snapshot
    parts.append(snapshot[kept:])
    return "".join(parts)


def cut_at_depth(text: str, depth: int) -> str:
    """A snapshot read at `depth` with its iframes' contents cut there too: Playwright cuts the
    page's own tree at the depth, and gives every iframe whole (`depth=1` of a page with an
    iframe was all of the iframe). A line nested deeper than `depth` goes; a line whose children
    went loses its colon, as Playwright writes an element cut at the depth."""

    def level(line: str) -> int:
        return (len(line) - len(line.lstrip(" "))) // 2

    kept = [line for line in text.splitlines() if level(line) <= depth]
    for at, line in enumerate(kept):
        has_children = at + 1 < len(kept) and level(kept[at + 1]) > level(line)
        if line.endswith(":") and not has_children:
            kept[at] = line[:-1]
    return "\n".join(kept)


_FIELD_VALUE = re.compile(
    r'^(?P<head>[ \t]*- textbox(?: "(?:[^"\\\n]|\\.)*")?(?: \[[^\]\n]*\])*): (?P<value>.+)$', re.MULTILINE
)
"""A text field's line with its value: `- textbox "Password" [ref=e5]: hunter22` (the name quoted,
the states in brackets, the value last; YAML-quoted when it needs to be)."""
_ANY_FIELD_VALUE = re.compile(r'- textbox(?: "(?:[^"\\\n]|\\.)*")?(?: \[[^\]\n]*\])*: ')
"""`_FIELD_VALUE` without its line start, for the look at every snapshot: starting with a literal,
it is found about four times as fast (1.6 against 0.4 ms on 300,000 characters). It may also match
inside an element's quoted name, which only costs the page a look at its password fields."""
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)")
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def has_field_values(snapshot: str) -> bool:
    """Whether a snapshot shows the value of a text field (one of which may be a password's)."""
    return _ANY_FIELD_VALUE.search(snapshot) is not None


def mask_passwords(snapshot: str, passwords: Collection[str]) -> str:
    """The snapshot with each text field's value that is one of `passwords` (the values of the
    page's password fields) shown as `(password, N characters)`. Playwright shows a password
    field's value as it shows any text field's: what was typed into it, or what its user typed."""
    # As shown -> its length: a value may be shown with its white space collapsed.
    hidden = {shown: len(p) for p in passwords if p for shown in (" ".join(p.split()), p)}
    if not hidden:
        return snapshot

    def masked(match: re.Match[str]) -> str:
        count = hidden.get(_unquoted(match.group("value")))
        if count is None:
            return match.group()
        return f"{match.group('head')}: (password, {count} character{'' if count == 1 else 's'})"

    return _FIELD_VALUE.sub(masked, snapshot)


def _unquoted(value: str) -> str:
    """A value as Playwright wrote it in a snapshot, YAML-quoted or not, as the text it is."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return value
    return _ESCAPE.sub(
        lambda m: (
            chr(int(m.group(1)[1:], 16)) if len(m.group(1)) == 3 else _ESCAPES.get(m.group(1), m.group(1))
        ),
        value[1:-1],
    )
