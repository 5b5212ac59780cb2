"""`browser_storage_state`: save an instance's cookies and localStorage to a file, for
`--storage-state FILE` (or `browser_instance launch` with options.storageState) to start from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field, StrictStr

from tabpilot import path_in_roots, quoted

from ..config import file_roots
from ..state import SessionState
from .base import Call, OptionalInstanceId, ToolSpec

DEFAULT_NAME = "storage-state.json"
"""The file written when the call names none; over HTTP each session's own (`default_name`: the
tool's description leaves that out, the tool list is at its size budget, and the answer names the file)."""


def default_name(session: SessionState) -> str:
    """Over HTTP, sessions share the file roots: each has a file of its own."""
    return DEFAULT_NAME if session.config.http_host is None else f"storage-state-{session.number}.json"


def writable_path(path: str, roots: list[str]) -> Path:
    """The absolute path to write, refused outside every root (relative paths: in the first root)."""
    target = path_in_roots(path, roots, base=roots[0], doing="written to")
    try:
        folder = target.parent.is_dir()
    except OSError:  # a name too long for the file system
        folder = False
    if not folder:
        raise ValueError(f"{target.parent} is not a folder: give a path in an existing folder.")
    return target


async def browser_storage_state(
    call: Call,
    path: Annotated[
        StrictStr | None,
        Field(description=f"In the allowed roots. Default: {DEFAULT_NAME}."),
    ] = None,
    instanceId: Annotated[OptionalInstanceId, Field()] = None,
) -> None:
    instance = call.manager.instance(instanceId)
    target = writable_path(path or default_name(call.session), file_roots(call.session.config))
    call.session.saved_state(str(target))
    try:
        counts = await instance.save_storage_state(target)
    except OSError as exc:  # a name too long, a full disk, no permission
        raise ValueError(
            f"{quoted(str(target))} cannot be written: {exc.strerror}. Give another path."
        ) from None
    config = call.session.config
    if config.http_host is not None and not config.instances_allowed:  # no browser the agent starts
        then = f"The server's operator can start a browser with it: --storage-state {target}."
    elif config.http_host is not None:
        then = (
            f'Start a browser with it: browser_instance launch with options={{"storageState": "{target}"}}.'
        )
    else:
        then = f"Start a browser with it: --storage-state {target}."
    call.response.result(
        f"Saved {counts['cookies']} cookies and the localStorage of {counts['origins']} origins of instance "
        f"{instance.id} to {target}. {then}",
        {"instanceId": instance.id, "path": str(target), **counts},
    )


TOOLS = [
    ToolSpec(
        "browser_storage_state",
        browser_storage_state,
        "Save cookies and localStorage to a JSON file (for --storage-state); never shown.",
        ToolAnnotations(title="Save the storage state", destructive_hint=False, open_world_hint=False),
    )
]
