"""`browser_storage_state`: save an instance's cookies and localStorage to a file, for
`--storage-state FILE` (or `browser_instance launch` with options.storageState) to start from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field, StrictStr

from tabpilot import path_in_roots, quoted

from ..config import file_roots
from .base import Call, OptionalInstanceId, ToolSpec

DEFAULT_NAME = "storage-state.json"


def writable_path(path: str | None, roots: list[str]) -> Path:
    """The absolute path to write, refused outside every root (relative paths: in the first root)."""
    target = path_in_roots(path or DEFAULT_NAME, roots, base=roots[0], doing="written to")
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
    target = writable_path(path, file_roots(call.session.config))
    try:
        counts = await instance.save_storage_state(target)
    except OSError as exc:  # a name too long, a full disk, no permission
        raise ValueError(
            f"{quoted(str(target))} cannot be written: {exc.strerror}. Give another path."
        ) from None
    call.response.result(
        f"Saved {counts['cookies']} cookies and the localStorage of {counts['origins']} origins of instance "
        f"{instance.id} to {target}. Start a browser with it: --storage-state {target}.",
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
