"""Downloads: each file a page downloads is saved into one folder under a name of its own, and
an event tells when it is there (its path and size) or why it is not.

Playwright keeps a download in a temporary folder it deletes with the browser; a copy here
outlives the browser and the server. While it comes, the file is `NAME.part` (a partial file
is never under the final name, even after a crash); then it takes its name, `name (1).ext` when
that is taken, as a browser names it. In the user's own Chrome (the extension) the file stays
where Chrome saves downloads: only that it finished is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from ._pw import DownloadHandle

logger = logging.getLogger("tabpilot")


def default_downloads_dir() -> Path:
    """Where downloads are saved unless told otherwise: the user's own folder in the system's temp
    folder as it is when the manager starts (made readable by the user alone; a folder there that
    is not is refused)."""
    return Path(tempfile.gettempdir()) / (
        f"tabpilot-downloads-{os.getuid()}" if hasattr(os, "getuid") else "tabpilot-downloads"
    )


PART = ".part"
"""The ending of a file still coming."""
NAME_MAX = 255
"""The longest file name, in bytes of UTF-8 (Linux, macOS): longer names are shortened, as
browsers do, keeping their extension."""
_DOUBLE_EXTENSIONS = (".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst")

Emit = Callable[..., object]
"""`emit(type, tab_id, **data)`: an instance's event bus."""
WhyStopped = Callable[[], str | None]
"""Why a download that failed did, when its instance is the reason (tabpilot closed it or let it
go); None: the download's own reason holds."""


class Downloads:
    """Saves downloads into `directory` (made when the first one comes) and tells when each is done."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        # Absolute: the events give the path to clients that do not know the server's folder.
        self._private = directory is None
        self.directory = (
            Path(directory).expanduser().absolute() if directory is not None else default_downloads_dir()
        )
        self._saving: set[asyncio.Task[None]] = set()

    def began(
        self,
        download: DownloadHandle,
        tab_id: int,
        emit: Emit,
        *,
        in_browser: bool = False,
        stopped: WhyStopped = lambda: None,
    ) -> None:
        """A page of tab `tab_id` began `download`: save it in the background and emit
        `download_finished` when it is done. `in_browser`: the browser keeps the file where it
        saves downloads (the user's own): only wait for it to finish."""
        job = self._wait(download) if in_browser else self._save(download)
        task = asyncio.get_running_loop().create_task(self._tell(job, download, tab_id, emit, stopped))
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def _tell(
        self,
        job: Awaitable[dict[str, Any]],
        download: DownloadHandle,
        tab_id: int,
        emit: Emit,
        stopped: WhyStopped,
    ) -> None:
        try:
            said = await job
        except Exception as exc:  # never a download that ends unsaid
            logger.exception("saving the download of %s failed", download.url)
            said = {"failure": f"it could not be saved: {exc}"}
        if "failure" in said:
            said["failure"] = stopped() or said["failure"]
        emit("download_finished", tab_id, url=download.url, suggestedFilename=download.filename, **said)

    async def _wait(self, download: DownloadHandle) -> dict[str, Any]:
        failure = await download.finished()
        return {"failure": failure} if failure is not None else {"savedBy": "browser"}

    async def _save(self, download: DownloadHandle) -> dict[str, Any]:
        name = _fitting(Path(download.filename).name.strip() or "download")
        try:
            part = self._claim(name, PART)
        except OSError as exc:
            return {"failure": f"could not save it in {self.directory}: {exc.strerror or exc}"}
        try:
            failure = await download.save_as(str(part))
            if failure is not None:
                return {"failure": failure}
            size = part.stat().st_size
            path = self._name(part, name)
        finally:  # done, failed, or stopped (the manager closes): no part file is left behind
            _remove(part)
        return {"path": str(path), "bytes": size}

    def _candidates(self, name: str, ending: str = "") -> Iterator[Path]:
        """The paths a file called `name` may take, in the order a browser tries them (made as
        they are asked for: nearly always the first is free)."""
        stem, suffix = _split(name)
        for n in range(1000):
            yield self.directory / (
                _fitting(name if n == 0 else f"{stem} ({n}){suffix}", stem, suffix, ending) + ending
            )

    def _claim(self, name: str, ending: str) -> Path:
        """A new, empty `NAME.part` in the folder for a file to be called `name`: one whose final
        name no file has yet, nor another part file."""
        if self._private:
            _private_folder(self.directory)
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
        for part in self._candidates(name, ending):
            if part.with_name(part.name.removesuffix(ending)).exists():
                continue
            try:
                with open(part, "x"):
                    return part
            except FileExistsError:
                continue
        raise FileExistsError(f"too many files named like {name!r}")

    def _name(self, part: Path, name: str) -> Path:
        """Give the whole file its name (the first free one like `name`, as a browser does): a
        hard link never replaces a file another download or the user put there meanwhile."""
        wanted = part.with_name(part.name.removesuffix(PART))
        for path in itertools.chain([wanted], self._candidates(name)):
            try:
                os.link(part, path)
                return path
            except FileExistsError:
                continue
            except OSError:  # a file system without hard links
                if path.exists():
                    continue
                os.replace(part, path)
                return path
        raise FileExistsError(f"too many files named like {name!r}")

    async def close(self) -> None:
        """Stop saving: the browsers tabpilot launched have closed, and a browser it only
        connected to goes on with its downloads without us."""
        saving = list(self._saving)
        for task in saving:
            task.cancel()
        await asyncio.gather(*saving, return_exceptions=True)


def _private_folder(folder: Path) -> None:
    """Make `folder` (in the temp folder every user writes to) for this user alone, or refuse one
    that someone else made or can write to: the files the agent downloads would be theirs to read,
    or to swap."""
    folder.mkdir(mode=0o700, exist_ok=True)
    if not hasattr(os, "getuid"):  # Windows: the temp folder is the user's own
        return
    st = os.lstat(folder)
    if folder.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(
            "it is not this user's own folder (another user made it, or can write to it); choose a "
            "folder of yours for downloads (downloads_dir)"
        )


def _split(name: str) -> tuple[str, str]:
    """A name's stem and extension, a double one kept whole: `x.tar.gz` is `x` and `.tar.gz`."""
    lowered = name.lower()
    for double in _DOUBLE_EXTENSIONS:
        if lowered.endswith(double) and len(name) > len(double):
            return name[: -len(double)], name[-len(double) :]
    path = Path(name)
    return path.stem, path.suffix


def _fitting(name: str, stem: str | None = None, suffix: str | None = None, ending: str = "") -> str:
    """`name` cut to fit NAME_MAX bytes with `ending` after it, from the end of its stem (so that
    ` (1)` and the extension stay), on a character boundary."""
    room = NAME_MAX - len(ending.encode())
    if len(name.encode()) <= room:
        return name
    if stem is None or suffix is None:
        stem, suffix = _split(name)
    tail = name[len(stem) :]  # ` (1).ext` or the extension alone
    keep = room - len(tail.encode())
    if keep < 1:  # an extension as long as a name: cut the whole name instead
        return name.encode()[:room].decode(errors="ignore")
    return stem.encode()[:keep].decode(errors="ignore") + tail


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
