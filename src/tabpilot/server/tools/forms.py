"""Form and mouse tools: fill a whole form, upload files, drag and drop; on any tab, active or not."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, StrictBool, StrictStr, model_validator

from tabpilot import Tab, check_file_paths, drag, fill_form, folder_files, quoted, upload_files

from ..config import file_roots
from .base import Call, RefArg, TabIdArg, ToolSpec
from .input import report


class FormField(BaseModel):
    ref: StrictStr
    value: StrictStr | StrictBool | list[StrictStr] = Field(description="Text, true/false, or option(s).")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, given: Any) -> Any:
        # Refused as an unknown argument is (it was dropped without a word); checked here, not by
        # `extra="forbid"`, whose schema line every tool list would carry.
        if isinstance(given, dict):
            unknown = sorted(set(given) - set(cls.model_fields))
            if unknown:
                raise ValueError(
                    f"unknown key {', '.join(map(repr, unknown))} in a field: give ref and value"
                )
        return given


def _shown(value: str | bool | list[str]) -> str:
    if isinstance(value, bool):
        return "checked" if value else "unchecked"
    if isinstance(value, str):
        return quoted(value)
    return ", ".join(quoted(v) for v in value)


async def browser_fill_form(
    call: Call,
    fields: Annotated[list[FormField], Field(min_length=1)],
    tabId: TabIdArg = None,
) -> None:
    tab = call.target(tab_id=tabId, ref=fields[0].ref)
    result = await fill_form(tab, [(f.ref, f.value) for f in fields])
    # As set: a checkbox given "false" is unchecked (it was shown as 'false').
    filled = "; ".join(f"{f.ref} = {_shown(value)}" for f, value in zip(fields, result.value, strict=False))
    done = f"Filled {len(fields)} field{'s' if len(fields) > 1 else ''} on tab {tab.id}: {filled}."
    if result.stopped:  # a field's dialog: the fields after it are left as they were
        left = [f.ref for f in fields[len(result.value) :]]
        done = (
            f"Filled {len(result.value)} of {len(fields)} fields on tab {tab.id}: {filled}. A dialog it opened "
            f"stopped the rest: {', '.join(left)} {'was' if len(left) == 1 else 'were'} not filled."
        )
    report(call, tab, done, result)


async def browser_file_upload(
    call: Call,
    tab: Tab,
    ref: Annotated[StrictStr, Field(description="A file input, or the button that opens the file picker.")],
    paths: Annotated[
        list[StrictStr],
        Field(min_length=1, description="File paths."),
    ],
    tabId: TabIdArg = None,
) -> None:
    roots = file_roots(call.session.config)
    files = check_file_paths(paths, roots, folders=True)  # a folder, for a folder input
    sent = [each for file in files for each in (folder_files(file, roots) if Path(file).is_dir() else [file])]
    for file in sent:
        call.session.check_not_others(file, "uploaded")
    result = await upload_files(tab, ref, paths, roots=roots)  # as given: an error quotes them so
    names = ", ".join(p.rstrip("/").rsplit("/", 1)[-1] for p in paths)
    if len(files) == 1 and Path(files[0]).is_dir():
        names = f"the folder {names} ({len(sent)} file{'s' if len(sent) != 1 else ''})"
    report(call, tab, f"Put {names} into {ref} on tab {tab.id}.", result, ref=ref, files=len(sent))


async def browser_drag(
    call: Call,
    tab: Tab,
    startRef: RefArg,
    endRef: Annotated[StrictStr, Field(description="Drop target.")],
    tabId: TabIdArg = None,
) -> None:
    result = await drag(tab, startRef, endRef)
    report(
        call, tab, f"Dragged {startRef} onto {endRef} on tab {tab.id}.", result, ref=startRef, endRef=endRef
    )


_ACTS = ToolAnnotations(destructive_hint=True, open_world_hint=True)

TOOLS = [
    ToolSpec(
        "browser_fill_form",
        browser_fill_form,
        "Fill several fields of one tab (text, checkbox, radio, select); all are checked first.",
        _ACTS.model_copy(update={"title": "Fill a form"}),
        secret_args=("fields",),
    ),
    ToolSpec(
        "browser_file_upload",
        browser_file_upload,
        "Upload files (on the server's machine, in its allowed roots) to a file input.",
        _ACTS.model_copy(update={"title": "Upload files"}),
        tab=True,
    ),
    ToolSpec(
        "browser_drag",
        browser_drag,
        "Drag an element onto another (refs of one tab).",
        _ACTS.model_copy(update={"title": "Drag and drop"}),
        tab=True,
        ref_arg="startRef",
    ),
]
