"""Element refs that carry their tab: Playwright's `e5` on tab 3 is `3e5`, its `f1e2` is `3f1e2`."""

from __future__ import annotations

import re

from ._errors import quoted
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
    text = ref.strip()
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
