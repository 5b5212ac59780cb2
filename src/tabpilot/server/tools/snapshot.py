"""`browser_snapshot`: the tab list, the page's url/title and its accessibility tree with tab-scoped refs."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Tab

from .base import Call, TabIdArg, ToolSpec


async def browser_snapshot(
    call: Call,
    tab: Tab,
    tabId: TabIdArg = None,
    depth: Annotated[
        int | None, Field(ge=1, description="Only this many levels of the tree (default: all).")
    ] = None,
    ref: Annotated[
        str | None, Field(description="Only the subtree of this element ref (e.g. '3e5'); it names its tab.")
    ] = None,
) -> None:
    snap = await tab.snapshot(depth=depth, ref=ref)
    scope = f" (subtree of {ref})" if ref else ""
    call.response.result(
        f"Snapshot of tab {tab.id}{scope}. Refs like [ref={tab.id}e1] work only on tab {tab.id}.",
        {"tabId": tab.id, "url": snap.url, "title": snap.title},
    )
    call.response.show_tabs()
    call.response.set_snapshot(snap, tab)


TOOLS = [
    ToolSpec(
        "browser_snapshot",
        browser_snapshot,
        "Read a tab: the list of open tabs, the page's URL and title, and its accessibility tree with element "
        "refs ('3e5' = element e5 of tab 3) to use with click/type/etc. Works on any tab (tabId) without "
        "activating it. Use depth or ref to read part of a large page.",
        ToolAnnotations(title="Snapshot a tab", read_only_hint=True, open_world_hint=True),
        tab=True,
    )
]
