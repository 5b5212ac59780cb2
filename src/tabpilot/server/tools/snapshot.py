"""`browser_snapshot`: the tab list, the page's url/title and its accessibility tree with tab-scoped refs."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Tab, parse_ref

from .base import Call, TabIdArg, ToolSpec


async def browser_snapshot(
    call: Call,
    tab: Tab,
    tabId: TabIdArg = None,
    depth: Annotated[int | None, Field(ge=1, description="Levels to read.")] = None,
    ref: Annotated[str | None, Field(description="Only this element's subtree.")] = None,
    full: Annotated[bool, Field(description="All of it, even if unchanged or long.")] = False,
) -> None:
    snap = await tab.snapshot(depth=depth, ref=ref)
    # The ref as the snapshot gave it (`3e5`), however it was sent (` e5 `): one part, one name.
    ref = None if ref is None else f"{tab.id}{parse_ref(ref)[1]}"
    # The same tree (or part) as this client's previous read of it gave, or, of the whole tree, as
    # that and all the changes it was told since: the refs in it were read again just now.
    unchanged = call.session.read_again(tab.id, depth, ref, snap.url, snap.text)
    if unchanged and not full:
        part = ", ".join([*([f"subtree of {ref}"] if ref else []), *([f"depth {depth}"] if depth else [])])
        limit = call.session.config.max_snapshot_chars
        size = f": all {len(snap.text):,} characters" if len(snap.text) > limit else ""
        call.response.result(
            f"Tab {tab.id}{f' ({part})' if part else ''} is unchanged since its previous snapshot; its refs "
            f"still hold (full=true shows it{size}).",
            {"tabId": tab.id, "url": snap.url, "title": snap.title, "unchanged": True},
        )
        call.response.set_page(tab)
        return
    scope = f" (subtree of {ref})" if ref else ""
    call.response.result(
        f"Snapshot of tab {tab.id}{scope}.", {"tabId": tab.id, "url": snap.url, "title": snap.title}
    )
    call.response.show_tabs(brief=True)  # a state read names every tab id, in few words
    call.response.set_snapshot(snap, tab, depth=depth, ref=ref, whole=full)


TOOLS = [
    ToolSpec(
        "browser_snapshot",
        browser_snapshot,
        "Read a tab's accessibility tree with element refs, its URL and title, and the tab list.",
        ToolAnnotations(title="Snapshot a tab", read_only_hint=True, open_world_hint=True),
        tab=True,
    )
]
