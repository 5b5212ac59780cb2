"""`browser_handle_dialog`: accept or dismiss the dialog (alert, confirm, prompt) open on a tab.

A dialog blocks only its own tab; other tabs keep working. Dialogs on background tabs are
reported in ### Events and ### Tabs, and handled here with their tabId.
"""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import NoDialogError, Tab, dialog_noun, quoted

from ..advice import dialog_said, json_block, script_value
from .base import Call, TabIdValue, ToolSpec


async def browser_handle_dialog(
    call: Call,
    tab: Tab,
    accept: Annotated[bool, Field(description="OK (true) or Cancel (false).")],
    promptText: Annotated[
        str | None, Field(description="prompt: the answer. Default: the prompt's default.")
    ] = None,
    tabId: Annotated[
        TabIdValue | None,
        Field(description="The dialog's tab. Default: the active tab."),
    ] = None,
) -> None:
    if tab.dialog is None:
        waiting = [t for t in call.manager.tabs() if t.dialog is not None]
        if not waiting:
            raise NoDialogError(tab.id)
        shown = ", ".join(f"tab {t.id} ({t.dialog.type})" for t in waiting if t.dialog)
        raise ValueError(
            f"Tab {tab.id} has no open dialog. Tabs with an open dialog: {shown}; pass tabId={waiting[0].id}."
        )
    since = call.manager.events.last_seq
    info = await tab.handle_dialog(accept=accept, prompt_text=promptText)
    verb = "Accepted" if accept else "Dismissed"
    answer = ""
    if accept and info.type == "prompt":
        answer = f" answering {quoted(promptText if promptText is not None else info.default_value)}"
        answer += "" if promptText is not None else " (its default value)"
    said = f" {quoted(info.message)}" if info.message else dialog_said(info.type, info.message)
    unused = ""
    if promptText is not None and not answer:
        unused = (
            f" promptText was not used: {dialog_noun(info.type)} takes no text."
            if info.type != "prompt"
            else " promptText was not used: a dismissed prompt answers nothing."
        )
    call.response.result(
        f"{verb} the {info.type} dialog{said} on tab {tab.id}{answer}.{unused}",
        {"tabId": tab.id, "accepted": accept, "dialog": info.to_dict()},
    )
    call.response.told("dialog_closed", tab.id)
    _held_scripts(call, tab, since)
    call.response.set_page(tab, changes=True)


def _held_scripts(call: Call, tab: Tab, since: int) -> None:
    """Tell the outcome of the scripts the dialog held up (browser_evaluate) that finished once it
    was handled; of one still running, that its outcome comes in ### Events."""
    lines, outcomes = [], []
    for event in call.manager.events.history(since=since):
        if event.type != "script_result" or event.data.get("heldBy") != tab.id or event.tab_id is None:
            continue
        # Named by its text: two scripts held up by one dialog each get a result line.
        script = f" {quoted(str(event.data['function']), 80)}" if event.data.get("function") else ""
        held = f"The script{script} it held up on tab {event.tab_id}"
        if "error" in event.data:
            lines.append(f"{held} ended with an error: {event.data['error']}")
            outcomes.append({"tabId": event.tab_id, "error": event.data["error"]})
        elif event.data.get("undefined"):
            lines.append(f"{held} returned undefined (no value).")
            outcomes.append({"tabId": event.tab_id, "value": None, "undefined": True})
        else:
            text, facts = script_value(event.data.get("value"))
            lines.append(f"{held} returned:\n{json_block(text)}")
            outcomes.append({"tabId": event.tab_id, **facts})
        call.response.told("script_result", event.tab_id)
    if tab.holds_work:
        lines.append(
            "A script it held up is still running (or waits for another dialog); its result comes in "
            "### Events when it ends."
        )
    if lines:
        call.response.result("\n".join(lines), {"scriptResults": outcomes} if outcomes else None)


TOOLS = [
    ToolSpec(
        "browser_handle_dialog",
        browser_handle_dialog,
        "Accept or dismiss the dialog that blocks a tab.",
        ToolAnnotations(title="Handle a dialog", destructive_hint=True, open_world_hint=True),
        tab=True,
        allows_dialog=True,
    )
]
