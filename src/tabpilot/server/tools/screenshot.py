"""`browser_screenshot`: a PNG of a tab (viewport, full page or one element), active or not."""

from __future__ import annotations

import struct
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Tab, screenshot

from .base import Call, TabIdArg, ToolSpec


def _png_size(data: bytes) -> tuple[int, int]:
    # Width and height are the first fields of the IHDR chunk, right after the 8-byte signature.
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def browser_screenshot(
    call: Call,
    tab: Tab,
    tabId: TabIdArg = None,
    fullPage: Annotated[
        bool, Field(description="The whole scrollable page instead of the viewport.")
    ] = False,
    ref: Annotated[
        str | None,
        Field(description="Only this element (ref from browser_snapshot, e.g. '3e5'; it names its tab)."),
    ] = None,
) -> None:
    image = await screenshot(tab, full_page=fullPage, ref=ref)
    width, height = _png_size(image)
    what = f"element {ref}" if ref else "the full page" if fullPage else "the viewport"
    call.response.result(
        f"Screenshot of {what} of tab {tab.id} ({width}x{height} px, PNG). For element refs use browser_snapshot.",
        {
            "tabId": tab.id,
            "width": width,
            "height": height,
            "mimeType": "image/png",
            "fullPage": fullPage,
            "ref": ref,
        },
    )
    call.response.add_image(image, "image/png")
    call.response.set_page(tab)


TOOLS = [
    ToolSpec(
        "browser_screenshot",
        browser_screenshot,
        "Take a PNG screenshot of a tab (viewport, fullPage, or one element by ref). Works on a background "
        "tab without activating it. To act on the page, use browser_snapshot for element refs.",
        ToolAnnotations(title="Screenshot a tab", read_only_hint=True, open_world_hint=True),
        tab=True,
    )
]
