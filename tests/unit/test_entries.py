"""Telemetry entries: the compact timing of a waterfall entry reads like the dict it replaces."""

from __future__ import annotations

import json

import pytest

from tabpilot._telemetry._entries import NetworkEntry, Timing

PHASES = {
    "requestTime": 12345.678,
    "dnsStart": -1,
    "sendStart": 0.5,
    "sendEnd": 0.75,
    "receiveHeadersEnd": 2.25,
    "unknownText": "not a number",
    "flag": True,
}


def entry(timing: Timing) -> NetworkEntry:
    return NetworkEntry(
        seq=1,
        timestamp=0.0,
        tab_id=1,
        method="GET",
        url="http://127.0.0.1/x",
        resource_type="fetch",
        status=200,
        status_text="OK",
        failure=None,
        mime_type="text/plain",
        started=0.0,
        duration_ms=3.0,
        timing=timing,
        request_body_size=None,
        response_body_size=None,
        navigation=False,
        redirected_from=None,
    )


def test_timing_keeps_the_numeric_phases_but_request_time_in_their_order() -> None:
    timing = Timing(PHASES)
    assert dict(timing) == {"dnsStart": -1.0, "sendStart": 0.5, "sendEnd": 0.75, "receiveHeadersEnd": 2.25}
    assert list(timing) == ["dnsStart", "sendStart", "sendEnd", "receiveHeadersEnd"]
    assert timing["receiveHeadersEnd"] == 2.25 and len(timing) == 4
    assert timing == {"dnsStart": -1, "sendStart": 0.5, "sendEnd": 0.75, "receiveHeadersEnd": 2.25}
    assert timing.get("requestTime") is None and "flag" not in timing
    with pytest.raises(KeyError):
        timing["requestTime"]


def test_entries_with_the_same_phases_share_one_tuple_of_names() -> None:
    first, second = Timing(json.loads(json.dumps(PHASES))), Timing(json.loads(json.dumps(PHASES)))
    assert list(first) == list(second)
    assert next(iter(first)) is next(iter(second))
    assert Timing() == {} and Timing(None) == {}


def test_to_dict_gives_the_timing_as_a_plain_json_ready_dict() -> None:
    data = entry(Timing(PHASES)).to_dict()
    assert type(data["timing"]) is dict
    assert json.loads(json.dumps(data))["timing"] == {
        "dnsStart": -1.0,
        "sendStart": 0.5,
        "sendEnd": 0.75,
        "receiveHeadersEnd": 2.25,
    }


def test_a_phase_that_is_not_a_number_this_time_is_left_out() -> None:
    assert dict(Timing({"sendStart": 1, "sendEnd": 2})) == {"sendStart": 1.0, "sendEnd": 2.0}
    assert dict(Timing({"sendStart": "soon", "sendEnd": 2})) == {"sendEnd": 2.0}
    assert dict(Timing({"sendStart": 1, "sendEnd": 2})) == {"sendStart": 1.0, "sendEnd": 2.0}
