"""`browser_evaluate`: run a JavaScript function in a tab (active or not) and return its result."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Tab, evaluate

from ..advice import json_block, script_value
from .base import Call, TabIdArg, ToolSpec
from .input import report


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
        said = "its result comes after the dialog (with the answer that handles it, or in ### Events)."
        report(call, tab, f"The script started on tab {tab.id}; {said}", result)
        return
    if not result.returned:  # its page closed the tab first: "Result: null" read as its value
        done = f"The script ran on tab {tab.id}, which closed itself before the script returned: there is no result."
        report(call, tab, done, result, returned=False)
        return
    if result.undefined:  # it read "null", which a script may return too
        done = f"Ran the script on tab {tab.id}. It returned undefined (no value)."
        report(call, tab, done, result, value=None, undefined=True)
        return
    text, facts = script_value(result.value)
    # A cut result is not sent whole in the structured content either: the cap is for both.
    report(call, tab, f"Ran the script on tab {tab.id}. Result:\n{json_block(text)}", result, **facts)


TOOLS = [
    ToolSpec(
        "browser_evaluate",
        browser_evaluate,
        "Run a JavaScript function in a tab (on an element with ref); returns its JSON result.",
        ToolAnnotations(title="Run JavaScript", destructive_hint=True, open_world_hint=True),
        tab=True,
    )
]
