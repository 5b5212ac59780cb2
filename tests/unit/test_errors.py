"""tabpilot's errors travel as Python's own do: pickled (a process pool, multiprocessing) and copied."""

from __future__ import annotations

import copy
import pickle

import pytest

from tabpilot import (
    ActionError,
    ConnectError,
    DialogInfo,
    DialogOpenError,
    ExtensionNotConnectedError,
    ForeignRefError,
    InstanceUnreachableError,
    LastTabError,
    PathNotAllowedError,
    StaleRefError,
    TabCrashedError,
    TabLimitError,
    TabNotFoundError,
    TabpilotError,
    TabSummary,
)

ERRORS: list[TabpilotError] = [
    TabNotFoundError(
        7,
        [TabSummary(2, "Home", "http://127.0.0.1/")],
        reason="It was closed by a call to tabpilot.",
        no_room=TabLimitError("inst_1", 5, 5, "reject"),
    ),
    ActionError("Click failed.", "Retry.", tab_id=2, ref="2e3", reason="covered", close_first=(4,)),
    ForeignRefError("3e1", ref_tab_id=3, tab_id=2),
    StaleRefError("Ref 2e9 is stale.", "Take a snapshot.", ref="2e9", tab_id=2),
    DialogOpenError(2, DialogInfo("confirm", "Sure?", ""), waiting_tab_id=5),
    PathNotAllowedError("/etc/passwd", ["/tmp/up"], "read from"),
    LastTabError(1, "inst_1", room=False),
    TabCrashedError(3, "http://127.0.0.1/crash"),
    ConnectError.no_answer("http://127.0.0.1:9222", 5),
    InstanceUnreachableError("inst_2", "the extension dropped", opening=True),
    ExtensionNotConnectedError("127.0.0.1:9777", "abcdef", wrong_token=True),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_pickles_and_copies_with_its_message_and_facts(error: TabpilotError) -> None:
    # Exception's own way made the error again from its message alone, and most take facts:
    # "TabNotFoundError.__init__() missing 1 required positional argument: 'open_tabs'" from
    # pickle.loads (a process pool's result), copy.copy and copy.deepcopy.
    for again in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(again) is type(error) and str(again) == str(error) and again.args == error.args
        assert vars(again).keys() == vars(error).keys()
        for name, value in vars(error).items():  # an error among them is a copy: said the same
            copied = getattr(again, name)
            assert (str(copied) == str(value)) if isinstance(value, Exception) else (copied == value), name
        assert (again.fact, again.advice) == (error.fact, error.advice)
        assert getattr(again, "tab_id", None) == getattr(error, "tab_id", None)
    found = pickle.loads(pickle.dumps(ERRORS[0]))
    assert isinstance(found, TabNotFoundError) and found.open_tab_ids == [2]
    assert isinstance(found.no_room, TabLimitError) and found.no_room.limit == 5
