from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from mcp import Client
from playwright.async_api import Browser, Playwright, async_playwright

from tabpilot import Instance, TabManager
from tabpilot._browser_path import find_browser
from tabpilot.server import ServerConfig, TabpilotServer, create_server
from tabpilot.site import LocalSite


@pytest.fixture(scope="session")
def site() -> Iterator[LocalSite]:
    """The built-in local site, shared by the whole session; routes added by a test are cleared after it."""
    with LocalSite() as local_site:
        yield local_site


@pytest.fixture(autouse=True)
def _clear_site_routes(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "site" in request.fixturenames:
        request.getfixturevalue("site").clear_routes()


@pytest.fixture(scope="session")
def browser_path() -> str:
    return find_browser()


# -- library fixtures (tests/test_tabs.py, tests/test_actions.py) ---------------------------------


@pytest.fixture(scope="module")
async def manager(browser_path: str) -> AsyncIterator[TabManager]:
    async with TabManager(browser_path=browser_path) as m:
        await m.launch()
        yield m


@pytest.fixture
async def instance(manager: TabManager) -> AsyncIterator[Instance]:
    """A fresh, isolated browser context of the shared browser, as an instance of its own."""
    launched = manager.instances[0]
    assert launched.browser is not None
    inst = await manager.attach_context(await launched.browser.new_context())
    yield inst
    await manager.close_instance(inst.id)


# -- MCP server fixtures (tests/test_server_*.py) --------------------------------------------------


@pytest.fixture(scope="session")
async def shared_browser(browser_path: str) -> AsyncIterator[tuple[Playwright, Browser]]:
    """One Playwright driver and one Chromium for every in-memory MCP test; each server session
    gets its own context of it, so tests stay isolated without paying for a launch each."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=browser_path, headless=True)
        yield playwright, browser
        await browser.close()


@pytest.fixture
def make_server(shared_browser: tuple[Playwright, Browser]) -> Callable[..., TabpilotServer]:
    """`make_server(max_tabs=3, ...)`: a server with these ServerConfig options on the shared browser."""
    playwright, browser = shared_browser

    def make(**options: Any) -> TabpilotServer:
        return create_server(ServerConfig(**options), playwright=playwright, browser=browser)

    return make


@pytest.fixture
def connect(make_server: Callable[..., TabpilotServer]) -> Callable[..., Client]:
    """`async with connect(**options) as client:` an MCP client, in memory, on a fresh server.

    (Not a yielding fixture: the client's task group must open and close in the test's own task.)
    """

    def make(**options: Any) -> Client:
        return Client(make_server(**options))

    return make
