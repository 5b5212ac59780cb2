"""`browser_screenshot` (PNG or JPEG of a viewport, a full page or one element, optionally scaled
down) and `browser_resize` (a tab's viewport), on any tab, active or not."""

from __future__ import annotations

import struct
from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Tab, resize, screenshot

from .base import Call, TabIdArg, ToolSpec

MAX_SIDE = 8000
"""The most pixels a screenshot has a side: models refuse larger pictures."""


def image_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG (its IHDR chunk) or a JPEG (its start-of-frame segment)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    at = 2  # after the JPEG's start-of-image marker: segments, each 0xFF, a marker, a length
    while at + 9 < len(data):
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):  # start of frame: precision, height, width
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return 0, 0


async def browser_screenshot(
    call: Call,
    tab: Tab,
    tabId: TabIdArg = None,
    fullPage: Annotated[bool, Field()] = False,
    ref: Annotated[str | None, Field(description="Only this element.")] = None,
    type: Annotated[Literal["png", "jpeg"], Field()] = "png",
    quality: Annotated[int | None, Field(ge=0, le=100, description="jpeg only.")] = None,
    maxWidth: Annotated[int | None, Field(ge=16, description="Scale down to this width.")] = None,
) -> None:
    if fullPage and ref is not None:  # in this tool's words (the library's are full_page)
        raise ValueError(
            "fullPage and ref exclude each other: a screenshot is of the page or of one element."
        )
    # A page or an element (or a viewport browser_resize made 10000 px) can be larger than a
    # model takes a picture (8000 px a side).
    image = await screenshot(
        tab,
        full_page=fullPage,
        ref=ref,
        image_type=type,
        quality=quality,
        max_width=min(maxWidth, MAX_SIDE) if maxWidth is not None else MAX_SIDE,
        max_height=MAX_SIDE,
    )
    width, height = image_size(image)
    mime = f"image/{type}"
    what = f"element {ref}" if ref else "the full page" if fullPage else "the viewport"
    # Said, as the cut of a taller one is: its pixels are no longer CSS pixels.
    scaled = (
        f" It is {MAX_SIDE} px wide, the most a model takes: a wider area is scaled down to fit."
        if width >= MAX_SIDE and (maxWidth is None or maxWidth >= MAX_SIDE)
        else ""
    )
    cut, facts = "", {}
    if image.cut and image.shown_height is not None:
        # Where it stops in the page's own (CSS) pixels, which scrolling takes: the image's are
        # fewer once it is scaled down, or twice as many on a screen of 2 device pixels per CSS pixel.
        shown = image.shown_height
        further = (
            f"scroll (browser_evaluate with window.scrollTo(0, {shown})) and take the viewport, or take an element by ref"
            if fullPage
            else f"scroll (browser_evaluate with window.scrollBy(0, {shown})) and take it again"
            if ref is None
            else "take the elements inside it by ref"
        )
        cut = (
            f" It shows the top {shown:,} of the {image.area_height:,} CSS pixels of {what} (the page's own, "
            f"which scrolling takes): the image stops at {MAX_SIDE} px, the most a model takes. To see further "
            f"down, {further}."
        )
        facts = {"shownCssHeight": shown, "cssHeight": image.area_height}
    call.response.result(
        f"Screenshot of {what} of tab {tab.id} ({width}x{height} px, {type.upper()}).{scaled}{cut} For element refs "
        "use browser_snapshot.",
        {
            "tabId": tab.id,
            "width": width,
            "height": height,
            "mimeType": mime,
            "fullPage": fullPage,
            "ref": ref,
            **facts,
        },
    )
    call.response.add_image(image, mime)
    call.response.set_page(tab)


async def browser_resize(
    call: Call,
    tab: Tab,
    width: Annotated[int, Field(ge=100, le=10000)],
    height: Annotated[int, Field(ge=100, le=10000)],
    tabId: TabIdArg = None,
) -> None:
    got = await resize(tab, width, height)
    call.response.result(
        f"Resized the viewport of tab {tab.id} to {got[0]}x{got[1]}.",
        {"tabId": tab.id, "width": got[0], "height": got[1]},
    )
    call.response.set_page(tab)


TOOLS = [
    ToolSpec(
        "browser_screenshot",
        browser_screenshot,
        "Screenshot a tab's viewport, full page or one element.",
        ToolAnnotations(title="Screenshot a tab", read_only_hint=True, open_world_hint=True),
        tab=True,
    ),
    ToolSpec(
        "browser_resize",
        browser_resize,
        "Resize a tab's viewport (CSS pixels).",
        ToolAnnotations(title="Resize the viewport", destructive_hint=False, open_world_hint=True),
        tab=True,
    ),
]
