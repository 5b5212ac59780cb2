"""The one place that knows Playwright: thin handles over its public API, and its errors translated.

Everything else in tabpilot works with these handles (`Driver`, `BrowserHandle`,
`ContextHandle`, `PageHandle`, `ElementHandle`, `DialogHandle`, `CdpSession`) and never imports
Playwright. Only public Playwright names are used; where Playwright has no API for something,
the route is a CDP session (`CdpSession`). Playwright's errors become tabpilot's at one
boundary, `map_playwright_errors`, most specific first.

`PageHandle.page` is the Playwright `Page` itself, for library users who need what tabpilot does
not wrap (`tab.page`).
"""

from .driver import Driver, Launched
from .errors import BETWEEN_PAGES, Doing, first_line, is_closed_error, launch_error, map_playwright_errors
from .handles import (
    ERROR_PAGE,
    UNDEFINED,
    BrowserHandle,
    CdpSession,
    ContextHandle,
    DialogHandle,
    Disposer,
    DownloadHandle,
    ElementHandle,
    MouseButton,
    Page,
    PageHandle,
    page_handle,
)

__all__ = [
    "BETWEEN_PAGES",
    "ERROR_PAGE",
    "UNDEFINED",
    "BrowserHandle",
    "CdpSession",
    "ContextHandle",
    "DialogHandle",
    "Disposer",
    "Doing",
    "DownloadHandle",
    "Driver",
    "ElementHandle",
    "Launched",
    "MouseButton",
    "Page",
    "PageHandle",
    "first_line",
    "is_closed_error",
    "launch_error",
    "map_playwright_errors",
    "page_handle",
]
