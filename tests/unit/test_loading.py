"""The server's start-up: the collector rests while the server loads, and works again after it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tabpilot.server.runner import loading


@pytest.fixture
def collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()  # what a test froze is this test process's, not the server's
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector")
def test_what_the_server_loads_is_kept_from_the_collector_and_collections_resume_after() -> None:
    gc.enable()
    frozen = gc.get_freeze_count()
    with loading():
        assert not gc.isenabled()
        loaded = [{"schema": i} for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(loaded)

    # A cycle made after start-up is collected as before.
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1


@pytest.mark.usefixtures("collector")
def test_a_start_up_that_fails_leaves_the_collector_working() -> None:
    gc.enable()
    with pytest.raises(ValueError, match="refused"), loading():
        raise ValueError("tool set refused")
    assert gc.isenabled()
