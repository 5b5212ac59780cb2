"""json_value: a script's result (as Playwright returns it) in JSON values only."""

from __future__ import annotations

import datetime
import json
import re

from tabpilot._values import json_value


def test_values_json_has_no_words_for_are_written_as_javascript_prints_them() -> None:
    moment = datetime.datetime(2026, 11, 24, 9, 30, 1, 250000, tzinfo=datetime.UTC)
    given = [float("nan"), float("inf"), float("-inf"), -0.0, 2.0, 2.5, moment, re.compile("a+", re.I | re.M)]
    assert json_value(given) == [
        "NaN",
        "Infinity",
        "-Infinity",
        0,
        2,
        2.5,
        "2026-11-24T09:30:01.250Z",
        "/a+/im",
    ]
    assert json.dumps(json_value(given), allow_nan=False)  # valid JSON


def test_only_an_object_inside_itself_is_circular_one_met_twice_is_written_twice() -> None:
    shared = {"x": 1}
    loop: dict[str, object] = {"name": "loop"}
    loop["me"] = loop
    loop["list"] = [loop, shared]
    assert json_value([shared, shared, loop]) == [
        {"x": 1},
        {"x": 1},
        {"name": "loop", "me": "[Circular]", "list": ["[Circular]", {"x": 1}]},
    ]


def test_other_objects_become_their_text() -> None:
    assert json_value([ValueError("bad"), (1, 2), {3: None}, True]) == [
        "ValueError: bad",
        [1, 2],
        {"3": None},
        True,
    ]
