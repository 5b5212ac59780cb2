"""`browser_storage_state`: save an instance's cookies and localStorage to a file, for
`--storage-state FILE` (or `browser_instance launch` with options.storageState) to start from."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field, StrictStr

from tabpilot import path_in_roots, quoted

from ..config import file_roots
from ..state import SessionState
from .base import Call, OptionalInstanceId, ToolSpec

DEFAULT_NAME = "storage-state.json"
"""The file written when the call names none; over HTTP each session's own (`default_path`: the
tool's description leaves that out, the tool list is at its size budget, and the answer names the file)."""


@dataclass(slots=True)
class DefaultFile:
    """The file an HTTP session saves to when its call names none, once chosen (`default_path`)."""

    path: Path | None = None


def default_path(session: SessionState, roots: list[str]) -> Path:
    """Over stdio, `storage-state.json`. Over HTTP, sessions share the file roots: each has a file
    of its own, `storage-state-N.json` (N: its number) unless one of that name is there already,
    then `storage-state-N-2.json` and so on. Numbers start again with each run of the server, so
    such a file is most likely the cookies a session of an earlier run saved, perhaps another
    agent's: never written over. The session's later saves go to the file it got."""
    if session.config.http_host is None:
        return writable_path(DEFAULT_NAME, roots)
    kept = session.state_for(DefaultFile)
    if kept.path is None:
        stem = f"storage-state-{session.number}"
        names = (f"{stem}.json" if n == 1 else f"{stem}-{n}.json" for n in itertools.count(1))
        paths = (writable_path(name, roots) for name in names)
        kept.path = next(path for path in paths if not path.exists())
    return kept.path


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
    roots = file_roots(call.session.config)
    target = writable_path(path, roots) if path else default_path(call.session, roots)
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
