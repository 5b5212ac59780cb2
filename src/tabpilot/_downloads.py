"""Downloads: each file a page downloads is saved into one folder under a name of its own, and
an event tells when it is there (its path and size) or why it is not.

Playwright keeps a download in a temporary folder it deletes with the browser; a copy here
outlives the browser and the server. In the user's own Chrome (the extension) the file stays
where Chrome saves downloads: only that it finished is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._pw import DownloadHandle

DEFAULT_DOWNLOADS_DIR = Path(tempfile.gettempdir()) / "tabpilot-downloads"
"""Where downloads are saved unless told otherwise."""

Emit = Callable[..., object]
"""`emit(type, tab_id, **data)`: an instance's event bus."""


class Downloads:
    """Saves downloads into `directory` (made when the first one comes) and tells when each is done."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else DEFAULT_DOWNLOADS_DIR
        self._saving: set[asyncio.Task[None]] = set()

    def began(self, download: DownloadHandle, tab_id: int, emit: Emit, *, in_browser: bool = False) -> None:
        """A page of tab `tab_id` began `download`: save it in the background and emit
        `download_finished` when it is done. `in_browser`: the browser keeps the file where it
        saves downloads (the user's own): only wait for it to finish."""
        job = self._wait(download) if in_browser else self._save(download)
        task = asyncio.get_running_loop().create_task(self._tell(job, download, tab_id, emit))
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def _tell(self, job: Any, download: DownloadHandle, tab_id: int, emit: Emit) -> None:
        said: dict[str, Any] = await job
        emit("download_finished", tab_id, url=download.url, suggestedFilename=download.filename, **said)

    async def _wait(self, download: DownloadHandle) -> dict[str, Any]:
        failure = await download.finished()
        return {"failure": failure} if failure is not None else {"savedBy": "browser"}

    async def _save(self, download: DownloadHandle) -> dict[str, Any]:
        try:
            path = self._claim(download.filename)
        except OSError as exc:
            return {"failure": f"could not save it in {self.directory}: {exc.strerror or exc}"}
        try:
            failure = await download.save_as(str(path))
        except BaseException:  # stopped (the manager closes): no part-file is left behind
            _remove(path)
            raise
        if failure is not None:
            _remove(path)
            return {"failure": failure}
        return {"path": str(path), "bytes": path.stat().st_size}

    def _claim(self, suggested: str) -> Path:
        """A path in the folder no other file has, named as the server suggested (as a browser
        does, `name (1).ext` when the name is taken), created empty so no other download takes it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        name = Path(suggested).name.strip() or "download"
        stem, suffix = Path(name).stem, Path(name).suffix
        for n in range(10_000):
            path = self.directory / (name if n == 0 else f"{stem} ({n}){suffix}")
            try:
                with open(path, "x"):
                    return path
            except FileExistsError:
                continue
        raise FileExistsError(f"too many files named like {name!r}")

    async def close(self) -> None:
        """Stop saving: the browsers tabpilot launched have closed, and a browser it only
        connected to goes on with its downloads without us."""
        saving = list(self._saving)
        for task in saving:
            task.cancel()
        await asyncio.gather(*saving, return_exceptions=True)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
