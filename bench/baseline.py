"""What tabpilot is measured against, taken in the same run: plain Playwright on the same pages.

- Playwright's own `page.aria_snapshot(mode="ai")` on the local site's `/many` pages: the floor
  for `browser_snapshot`, which is that call plus tabpilot's ref scoping and its response. The
  server bench times the two alternately, call for call, so both see the same machine load.
- The browser's PSS with 1 and 20 tabs when only Playwright drives it: the floor for the
  browser memory per tab under tabpilot.
"""

from __future__ import annotations

import os
from types import TracebackType

import procmem
from harness import Progress, Results
from playwright.async_api import Browser, Page, Playwright, async_playwright

from tabpilot import find_browser
from tabpilot.demo.site import LocalSite

SECTION = "baseline: plain Playwright"


async def browser_pss(site: LocalSite, results: Results, progress: Progress, *, tabs: int) -> None:
    """PSS of a fresh Playwright-driven Chromium with 1 tab, then with `tabs` tabs of small pages."""
    progress.begin(SECTION)
    if not procmem.available():
        results.note("Browser PSS not measured: /proc/<pid>/smaps_rollup is Linux-only.")
        return
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=find_browser(), headless=True)
        try:
            root = procmem.browser_root(os.getpid())
            if root is None:
                results.note(
                    "Browser PSS not measured: the Chromium process was not found under this process."
                )
                return
            context = await browser.new_context()
            page = await context.new_page()
            await page.goto(site.url("/page/0"))
            one, _ = procmem.tree_pss_mb(root)
            for i in range(1, tabs):
                progress.update(f"opening tab {i + 1}/{tabs} for PSS")
                extra = await context.new_page()
                await extra.goto(site.url(f"/page/{i}"))
            many, processes = procmem.tree_pss_mb(root)
        finally:
            await browser.close()
    results.value("playwright.browser_pss.1", SECTION, "browser PSS, 1 tab", "MB", one)
    results.value(
        f"playwright.browser_pss.{tabs}",
        SECTION,
        f"browser PSS, {tabs} tabs ({processes} processes)",
        "MB",
        many,
    )
    results.value(
        "playwright.browser_pss_per_tab",
        SECTION,
        f"browser PSS per added tab (1->{tabs})",
        "MB",
        (many - one) / (tabs - 1),
    )


class PlaywrightPages:
    """A Playwright-driven Chromium with one page per `/many?n=` size, for aria snapshots on demand."""

    def __init__(self, site: LocalSite) -> None:
        self.site = site
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._pages: dict[int, Page] = {}

    async def __aenter__(self) -> PlaywrightPages:
        self._pw = await async_playwright().start()
        self._browser = await self._pw.chromium.launch(executable_path=find_browser(), headless=True)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._browser is not None:
            await self._browser.close()
        if self._pw is not None:
            await self._pw.stop()

    async def open(self, n: int) -> None:
        assert self._browser is not None
        # No viewport emulation, like the tabs of the server's CDP-driven browser: Playwright's
        # default 1280x720 emulation alone makes a 6000-element snapshot measurably slower.
        context = await self._browser.new_context(no_viewport=True)
        page = await context.new_page()
        await page.goto(self.site.url(f"/many?n={n}"))
        self._pages[n] = page

    async def aria(self, n: int) -> str:
        return await self._pages[n].aria_snapshot(mode="ai")

    async def close(self, n: int) -> None:
        page = self._pages.pop(n)
        await page.context.close()
