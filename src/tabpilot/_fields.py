"""Checks an action makes on a form field before it acts, where waiting could not help.

A disabled or read-only field, a select with no option for a value, and a value of the wrong kind
for the field (text for a checkbox, true/false for a text field, several options for a list that
takes one, an option for a text field, text a date, time or number field would not keep, text
longer than a field's maxlength) fail at once, with what the field is and what it takes, instead
of Playwright's words after a timeout or about the DOM ("Input of type "checkbox" cannot be
filled"), or a field silently left empty (a date field given 'tomorrow') or cut short. An element
that is no form field, or is not on the page now, is left to the action.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any, Literal, NoReturn, cast

from ._errors import ActionError, ActionReason, FieldKind, quoted
from ._pw import ElementHandle
from ._tab import Tab

FieldUse = Literal["text", "toggle", "options"]
"""What an action puts into a field: text, a checked state, or option values."""

FIELD_CHECK_TIMEOUT = 5.0
"""Seconds the check of a field before an action may take (it reads the element at once)."""
_WORDS = {
    "text": "a text field",
    "checkbox": "a checkbox",
    "radio": "a radio button",
    "switch": "a switch",
    "select": "a drop-down list",
    "listbox": "a multiple-choice list",
    "file": "a file input",
    "button": "a button",
}
_USE_OF = {
    "text": "text",
    "checkbox": "toggle",
    "radio": "toggle",
    "switch": "toggle",
    "select": "options",
    "listbox": "options",
}
_INSTEAD = {
    "text": "Type text into it instead.",
    "toggle": "Click it to change it (a form fill takes true or false for it).",
    "options": "Select one of its options instead, by value or label.",
    "file": "Upload files to it instead.",
    "button": "Click it, or use the ref of the field you meant (take a new snapshot to find it).",
}
_TAKES = {"text": "text", "toggle": "true or false", "options": "an option's value or label", "file": "files"}
_FORMATS = {
    "date": ("a date field", "a date as YYYY-MM-DD (e.g. 2026-11-24)"),
    "time": ("a time field", "a time as HH:MM, 24-hour (e.g. 13:05)"),
    "datetime-local": (
        "a date and time field",
        "a date and time as YYYY-MM-DDTHH:MM (e.g. 2026-11-24T13:05)",
    ),
    "month": ("a month field", "a month as YYYY-MM (e.g. 2026-11)"),
    "week": ("a week field", "a week as YYYY-Www (e.g. 2026-W48)"),
    "number": ("a number field", "a number (e.g. 42 or -3.5)"),
}
"""What an input type keeps: the browser empties the field for text in any other form."""
_TOGGLE_WORDS = {"true": True, "false": False}


async def field_state(
    tab: Tab, element: ElementHandle, what: str, ref: str, text: str | None = None
) -> dict[str, Any] | None:
    """`element.input_state(text)`, read for `what`: a dialog that opens meanwhile (a page's
    timer) stops the page, and the read with it, and is said at once (DialogOpenError); a page
    that does not answer within FIELD_CHECK_TIMEOUT is said busy. (The read waited for ever, and
    the actions behind it on the tab too.)"""
    try:
        return await tab.unless_dialog(asyncio.wait_for(element.input_state(text), FIELD_CHECK_TIMEOUT))
    except TimeoutError:
        raise ActionError(
            f"{what} failed: checking element {ref} did not finish within {FIELD_CHECK_TIMEOUT:g} s.",
            f"The page may be busy: take a snapshot of tab {tab.id} and retry.",
            tab_id=tab.id,
            ref=ref,
            reason="busy",
        ) from None


async def check_field(
    tab: Tab,
    element: ElementHandle,
    what: str,
    ref: str,
    *,
    uses: Collection[str] = (),
    values: Sequence[str] | None = None,
    text: str | None = None,
    room: str | None = None,
) -> dict[str, Any] | None:
    """Fail at once where waiting could not help (see the module docstring). `uses`: what the
    action can put into the field (empty: any); `values`: options it will select; `text`: what it
    will set as the value (in the field's format); `room`: what it will type, at once or key by
    key (within the field's maxlength). Returns the element's state (`ElementHandle.input_state`),
    or None if it is not on the page now."""
    state = await field_state(tab, element, what, ref, text)
    if state is None:
        return None
    kind = str(state.get("kind", "other"))
    if state["disabled"]:
        raise ActionError.disabled(what, tab_id=tab.id, ref=ref)
    if state["readOnly"]:
        _fail(tab, what, ref, "is read-only (not editable)", "not_editable")
    use = _USE_OF.get(kind)
    if uses and kind in _WORDS and use not in uses:
        if "text" in uses:
            problem = f"is {_WORDS[kind]}, not a text field"
        elif "options" in uses:
            problem = f"is {_WORDS[kind]}, not a drop-down list"
        else:
            problem = f"is {_WORDS[kind]}: it takes {_TAKES.get(use or kind, 'no value')}, not true or false"
        wanted = cast(FieldKind, use or kind)  # a key of _INSTEAD: the kinds of _WORDS and their uses
        _fail(tab, what, ref, problem, "wrong_field", _INSTEAD.get(wanted, ""), field=wanted)
    options = state["options"]
    if values is not None and options is not None:
        known = {text for value, label, _ in options for text in (value, label)}
        missing = [v for v in values if v not in known]
        if missing:
            shown = _labels(options)
            _fail(
                tab,
                what,
                ref,
                f"has no option {', '.join(map(repr, missing))} (its options: {shown or 'none'})",
                "no_option",
                "Options match by value or label.",
            )
        if kind == "select" and len(values) > 1:
            _fail(
                tab,
                what,
                ref,
                f"takes one option (it is not a multiple-choice list); {len(values)} were given",
                "failed",
                "Give one value.",
            )
        disabled = _disabled_choice(options, values, several=kind == "listbox")
        if disabled is not None:
            enabled = [option for option in options if not option[2]]
            _fail(
                tab,
                what,
                ref,
                f"cannot take option {quoted(disabled)}: the option is disabled (the page does not let it be chosen now)",
                "failed",
                f"Choose one of its enabled options ({_labels(enabled) or 'none'}), or first do what the page "
                "asks to enable it.",
            )
    most = state.get("maxLength", -1)
    if room is not None and 0 <= most < len(room.encode("utf-16-le")) // 2:  # as the page counts
        # The browser keeps the first `most` characters, silently. (The text is not said: it may
        # be a secret.)
        _fail(
            tab,
            what,
            ref,
            f"takes at most {most} characters (its maxlength), fewer than the text has",
            "bad_value",
            "Shorten the text to fit (the field was left as it was).",
        )
    if text is not None and state.get("accepts") is False:
        field, takes = _FORMATS[state["inputType"]]
        _fail(
            tab,
            what,
            ref,
            f"is {field}, which takes {takes}, not {quoted(text)}",
            "bad_value",
            "Give the value in that form (the field was left as it was).",
        )
    return state


def _labels(options: Sequence[Sequence[Any]]) -> str:
    """The labels of a select's options (`input_state`'s), the first 20 of them."""
    return ", ".join(repr(option[1]) for option in options[:20]) + (" …" if len(options) > 20 else "")


def _disabled_choice(options: Sequence[Sequence[Any]], values: Sequence[str], *, several: bool) -> str | None:
    """The label of the disabled option a selection of `values` would reach, as Playwright walks
    the options (`several`: a multiple-choice list, else the first match ends the walk): Playwright
    waits for such an option to be enabled until its timeout, where it should be said at once."""
    remaining = list(values)
    for value, label, disabled in options:
        matched = [v for v in remaining if v in (value, label)]
        if not matched:
            continue
        if disabled:
            return str(label)
        if not several:
            return None
        remaining = [v for v in remaining if v not in matched]
    return None


def field_uses(value: str | bool | Sequence[str]) -> tuple[FieldUse, ...]:
    """What a form fill's value can go into: True/False a checkbox, radio button or switch; text a
    text field or a select's option, and, if it is 'true' or 'false', a checkbox too; a list of
    values a select's options."""
    if isinstance(value, bool):
        return ("toggle",)
    if isinstance(value, str):
        return (
            ("text", "options", "toggle") if value.strip().lower() in _TOGGLE_WORDS else ("text", "options")
        )
    return ("options",)


def toggle_text(value: str, state: dict[str, Any] | None) -> bool | None:
    """The checked state that text 'true' or 'false' asks of a checkbox, radio button or switch
    (`state`: its `input_state`); None for other text or other elements."""
    if state is None or _USE_OF.get(str(state.get("kind"))) != "toggle":
        return None
    return _TOGGLE_WORDS.get(value.strip().lower())


def _fail(
    tab: Tab,
    what: str,
    ref: str,
    problem: str,
    reason: ActionReason,
    advice: str = "",
    *,
    field: FieldKind | None = None,
) -> NoReturn:
    raise ActionError(
        f"{what} failed: element {ref} {problem}.",
        advice or f"Take a new snapshot of tab {tab.id} and use a ref of an element you can act on.",
        tab_id=tab.id,
        ref=ref,
        reason=reason,
        field=field,
    )


__all__ = ["FieldUse", "check_field", "field_uses", "toggle_text"]
