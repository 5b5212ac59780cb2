"""Fixtures every test folder shares: the local site, the browser, library managers, MCP servers.

- `tests/unit`: pure logic, no browser.
- `tests/browser`: the library on a real Chromium.
- `tests/server`: the MCP server through a real MCP client, in memory or over stdio/HTTP.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from mcp import Client

from support import (
    PlaywrightServer,
    RemoteChromium,
    SeleniumGrid,
    grid_pieces,
    playwright_server,
    remote_chromium,
    selenium_grid,
)
from tabpilot import Instance, TabManager, find_browser
from tabpilot.demo.site import LocalSite
from tabpilot.server import ServerConfig, TabpilotServer, create_server

_RUN_TMP: str | None = None
"""The temporary directory of this run (`TMPDIR` for every process the tests start)."""


def pytest_configure(config: pytest.Config) -> None:
    """Everything the run's processes put in the temporary directory goes into one of its own,
    removed at the end: a browser a test kills leaves its `org.chromium.Chromium.*` socket
    directory behind (nobody is left to remove it), which the system's /tmp kept."""
    global _RUN_TMP
    # Short: tests make temp dirs in it for servers whose driver makes its own in those, and
    # Chromium's socket path under all of them must stay within 107 bytes (`socket_fits`).
    _RUN_TMP = tempfile.mkdtemp(prefix="tpt-")
    os.environ["TMPDIR"] = _RUN_TMP
    tempfile.tempdir = None  # read TMPDIR again


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RUN_TMP is not None:
        shutil.rmtree(_RUN_TMP, ignore_errors=True)


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


@pytest.fixture(scope="session")
def grid(browser_path: str) -> Iterator[SeleniumGrid]:
    """A real Selenium Grid 4 (hub + node on 127.0.0.1) for the whole run, stopped at its end.

    A machine without Java, the server jar or ChromeDriver skips the tests that need it, saying
    what is missing (`make grid` installs them); with TABPILOT_REQUIRE_GRID=1 (CI) that fails instead.
    """
    try:
        grid_pieces()
    except LookupError as missing:
        if os.environ.get("TABPILOT_REQUIRE_GRID"):
            pytest.fail(f"{missing}; TABPILOT_REQUIRE_GRID is set")
        pytest.skip(str(missing))
    with selenium_grid(browser_path) as running:
        yield running
        left = running.sessions_end()
    assert not left, f"tests left grid sessions running: {left}"


# -- remote browsers (one per test module that asks) -----------------------------------------------


@pytest.fixture(scope="module")
def remote(browser_path: str) -> Iterator[RemoteChromium]:
    with remote_chromium(browser_path) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def pw_server(browser_path: str) -> Iterator[PlaywrightServer]:
    with playwright_server(browser_path) as server:
        yield server


# -- library fixtures (tests/browser) -------------------------------------------------------------


@pytest.fixture(scope="module")
async def manager(browser_path: str) -> AsyncIterator[TabManager]:
    async with TabManager(browser_path=browser_path) as m:
        await m.launch()
        yield m


@pytest.fixture
async def instance(manager: TabManager) -> AsyncIterator[Instance]:
    """A fresh, isolated browser context of the module's browser, as an instance of its own."""
    inst = await manager.attach_isolated(manager.instances[0])
    yield inst
    await manager.close_instance(inst.id)


# -- MCP server fixtures (tests/server) ------------------------------------------------------------


@pytest.fixture(scope="session")
async def shared_browser(browser_path: str) -> AsyncIterator[Instance]:
    """One Chromium for every in-memory MCP test; each server session gets its own isolated
    context of it, so tests stay isolated without paying for a launch each."""
    async with TabManager(browser_path=browser_path) as host:
        yield await host.launch()


@pytest.fixture
def make_server(shared_browser: Instance) -> Callable[..., TabpilotServer]:
    """`make_server(max_tabs=3, ...)`: a server with these ServerConfig options on the shared browser.
    Structured content is on unless a test says otherwise: the tests read ids from it."""

    def make(**options: Any) -> TabpilotServer:
        options.setdefault("structured_content", True)
        return create_server(ServerConfig(**options), shared=shared_browser)

    return make


@pytest.fixture
def connect(make_server: Callable[..., TabpilotServer]) -> Callable[..., Client]:
    """`async with connect(**options) as client:` an MCP client, in memory, on a fresh server.

    (Not a yielding fixture: the client's task group must open and close in the test's own task.)
    """

    def make(**options: Any) -> Client:
        return Client(make_server(**options))

    return make
