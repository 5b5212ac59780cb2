"""`browser_evaluate`: run a JavaScript function in a tab (active or not) and return its result."""

from __future__ import annotations

import json
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Tab, evaluate

from .base import Call, TabIdArg, ToolSpec
from .input import report

MAX_RESULT_CHARS = 20_000
"""Longer results are cut (text and structured content); ask the page for less (a selector, a slice)."""


async def browser_evaluate(
    call: Call,
    tab: Tab,
    function: Annotated[
        str,
        Field(description="e.g. '() => document.title', with ref '(el) => el.value'."),
    ],
    tabId: TabIdArg = None,
    ref: Annotated[str | None, Field(description="Element passed to the function.")] = None,
) -> None:
    result = await evaluate(tab, function, ref=ref)
    if result.dialog is not None:
        report(call, tab, f"The script started on tab {tab.id}; its result comes after the dialog.", result)
        return
    text = json.dumps(result.value, ensure_ascii=False)
    cut = len(text) > MAX_RESULT_CHARS
    shown = text[:MAX_RESULT_CHARS] + (
        f"... ({len(text) - MAX_RESULT_CHARS} more characters cut)" if cut else ""
    )
    report(
        call,
        tab,
        f"Ran the script on tab {tab.id}. Result:\n```json\n{shown}\n```",
        result,
        # A cut result is not sent whole in the structured content either: the cap is for both.
        **(
            {"valueJson": text[:MAX_RESULT_CHARS], "truncated": True, "valueChars": len(text)}
            if cut
            else {"value": result.value}
        ),
    )


TOOLS = [
    ToolSpec(
        "browser_evaluate",
        browser_evaluate,
        "Run a JavaScript function in a tab (on an element with ref); returns its JSON result.",
        ToolAnnotations(title="Run JavaScript", destructive_hint=True, open_world_hint=True),
        tab=True,
    )
]
