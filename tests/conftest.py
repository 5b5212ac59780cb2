from __future__ import annotations

from collections.abc import Iterator

import pytest

from tabpilot._browser_path import find_browser
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
