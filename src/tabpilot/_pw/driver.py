"""Playwright's driver: launching a local Chromium (over a pipe) and connecting to remote ones."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Literal

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from .._browser_path import find_browser, user_cache_dir
from .._errors import ConnectError
from .._options import BrowserOptions
from .._process import WATCH_EVERY, launch_ends, launched_browser, pid_ends
from .._profile import forget_temporary, made_temporary, remove_profile, sweep_abandoned
from .errors import Doing, driver_error, launch_error, map_playwright_errors
from .handles import (
    BrowserHandle,
    ContextHandle,
    _context_options,
    _ms,
    _prepare_context,
    _proxy,
    driver_answers,
)

DRIVER_NODE_OPTIONS = "--max-semi-space-size=1 --max-old-space-size=1024"
"""Node options for Playwright's driver, before any the user set (theirs come after and win).

- `--max-semi-space-size=1`: V8's young generation of 1 MB instead of 16 to 32. The driver builds
  short-lived objects for every request and console event of every page; with the default it
  held about 60 MB more at 20 busy tabs (246 vs 184 MB, memprobe).
- `--max-old-space-size=1024`: a heap limit of 1 GB instead of about a quarter of the machine's
  memory (4 GB on a 24 GB machine). With a limit under 2 GB, V8 lets the heap grow by a smaller
  factor between full collections (at most 2 instead of 4): at 20 busy tabs the driver held 168 MB
  instead of 168-198 (median 190; memprobe, six runs each), for the same CPU time. Its live heap
  there is about 60 MB.
"""
DRIVER_CHECK_WAIT = 5.0
"""Seconds to wait for the driver to answer, or to stop, when it may have died."""
CANCELLED_LAUNCH_WAIT = 5.0
"""Seconds a cancelled launch waits for the browser Playwright goes on launching, to close it."""
EXIT_GRACE = 1.0
"""Seconds a launch whose browser process ended waits for Playwright's own error about it."""
FAILED_LAUNCH_EXIT = 5.0
"""Seconds a browser whose launch failed (Playwright gave up on it) has to exit before its
temporary profile is removed."""
GIVEN_UP_SWEEP = 3.0
"""Seconds after a failed launch during which its temporary profile is removed again if it
comes back: the driver goes on with a launch it gave up on until its next check, and may make the
profile's directory again after its error reached us (seen under load: an empty directory left
for good, after a launch timeout of 10 ms)."""


DRIVER_MALLOC_ARENAS = "2"
"""glibc's MALLOC_ARENA_MAX for the driver, unless the user set one. Node's worker threads (V8's
compilers and collector, libuv) each get a malloc arena of their own by default, up to eight per
core, and freed memory stays in each: with two the driver held about 6 MB less at 20 busy tabs
(133 vs 139 MB, memprobe, three runs each) for the same CPU time. The browsers inherit the
variable, and Chromium allocates with its own malloc (PartitionAlloc), which does not read it."""


COMPILE_CACHE = ("tabpilot", "node-compile-cache")
"""Where Node keeps the compiled code of Playwright's driver between starts, under the user's
cache directory (`NODE_COMPILE_CACHE`, unless the user set one; Node's
`NODE_DISABLE_COMPILE_CACHE=1` turns it off). The driver loads a large bundle at every start: with
the cache it was up in 230 ms instead of 310 (medians of eight starts each), and the driver's start
is on the way to the first tool result. Node keys the cache by its version and checks each entry
against the source, so an upgraded Playwright gets entries of its own (about 1.3 MB a version)."""


def _compile_cache() -> str | None:
    """The driver's compile cache directory, made private to this user; None if there is none."""
    root = user_cache_dir()
    if root is None:
        return None
    directory = root.joinpath(*COMPILE_CACHE)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return str(directory)


PRIVATE_TEMP_PREFIX = "tp-"
"""The name of the driver's private temp dir, before mkdtemp's random part: short, because Chromium
puts a Unix socket under it (`SOCKET_PATH_LIMIT`)."""
CHROMIUM_SOCKET = "org.chromium.Chromium.XXXXXX/SingletonSocket"
"""Where Chromium puts its singleton socket under its TMPDIR (the X's are random); Chrome's own name,
`com.google.Chrome.XXXXXX`, is shorter."""
SOCKET_PATH_LIMIT = 103 if sys.platform == "darwin" else 107
"""The longest path a Unix socket can have (sun_path holds 104 bytes on macOS, 108 on Linux, with
its NUL). Chromium quits at once when its singleton socket's path is longer ("Socket path too
long")."""


def socket_fits(temp_dir: str) -> bool:
    """Whether Chromium, given `temp_dir` as its TMPDIR, can make its singleton socket there."""
    return len(os.path.join(temp_dir, CHROMIUM_SOCKET)) <= SOCKET_PATH_LIMIT


_SOCKET_TOO_LONG = re.compile(r"Socket path too long: (\S+)/SingletonSocket")


def _remove_socket_dirs(said: str) -> None:
    """Remove the directories a Chromium that quit over its socket's path made for that socket in
    the user's TMPDIR (named in its last words); only while empty."""
    for match in _SOCKET_TOO_LONG.finditer(said):
        with contextlib.suppress(OSError):
            os.rmdir(match.group(1))


def _private_temp_dir() -> str | None:
    """A new private temp dir for the driver and its browsers, in the user's temp dir; None when a
    socket path under it would be too long for Chromium (the user's TMPDIR is long), where the
    user's temp dir serves as it is, as it would without tabpilot."""
    made = tempfile.mkdtemp(prefix=PRIVATE_TEMP_PREFIX)
    if socket_fits(made):
        return made_temporary(made, profile=False)
    os.rmdir(made)
    return None


@contextlib.contextmanager
def _driver_environment(temp_dir: str | None) -> Any:
    """The driver's environment while Playwright starts it (it copies os.environ then):
    NODE_OPTIONS, MALLOC_ARENA_MAX, NODE_COMPILE_CACHE, and `temp_dir` (if any) as its TMPDIR,
    which the browsers it launches inherit."""
    users = os.environ.get("NODE_OPTIONS")
    changed = {
        "NODE_OPTIONS": f"{DRIVER_NODE_OPTIONS} {users}" if users else DRIVER_NODE_OPTIONS,
        "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX") or DRIVER_MALLOC_ARENAS,
    }
    if temp_dir is not None:
        changed["TMPDIR"] = temp_dir
    cache = os.environ.get("NODE_COMPILE_CACHE") or _compile_cache()
    if cache is not None:
        changed["NODE_COMPILE_CACHE"] = cache
    before = {name: os.environ.get(name) for name in changed}
    os.environ.update(changed)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


@dataclass(frozen=True, slots=True)
class Launched:
    """A local browser: its default context, and the temporary profile to delete after it (if any)."""

    browser: BrowserHandle
    context: ContextHandle
    temp_profile: str | None
    user_data_dir: str | None


class Driver:
    """Playwright's driver process, shared by every browser tabpilot launches or connects to."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._starting: asyncio.Lock | None = None
        self._closing: set[asyncio.Future[None]] = set()
        self._sweeping: dict[asyncio.Future[None], str] = {}
        """The temporary profiles of failed launches being watched (`_sweep`), by their watch."""
        self._temp_dirs: list[str] = []
        """The private temp dirs of the drivers this one started, removed once they stopped.
        Playwright makes a `playwright-artifacts-*` folder in its temp dir for every browser
        (downloads go there) and removes it when the browser closes, but not always when the
        browser was killed as the driver stops, nor when the driver itself was killed; Chromium
        puts the directory of its singleton socket there too. A driver started where a private dir
        would make that socket's path too long has none (`_private_temp_dir`)."""
        self._abandoned: asyncio.Future[list[str]] | None = None
        """The sweep of what killed tabpilot processes left in the temp dir (`sweep_abandoned`),
        once, in a thread, as the first driver starts."""

    async def __aenter__(self) -> Driver:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._playwright is None:
                users = os.environ.get("NODE_OPTIONS")
                # Made before TMPDIR changes, so it is where the user's temp files go.
                temp_dir = _private_temp_dir()
                if temp_dir is not None:
                    self._temp_dirs.append(temp_dir)
                if self._abandoned is None:  # off the way of the launch: nothing waits for it
                    self._abandoned = asyncio.get_running_loop().run_in_executor(None, sweep_abandoned)
                try:
                    with _driver_environment(temp_dir):
                        self._playwright = await async_playwright().start()
                except Exception as exc:
                    raise driver_error(exc, users) from exc

    @property
    def running(self) -> bool:
        """Whether a driver process was started and not stopped since."""
        return self._playwright is not None

    async def stop(self) -> None:
        """Stop the driver (Playwright waits for it to exit), then remove the temp dirs of this
        one and of any it replaced. Stop the browsers first: they put files there."""
        if self._closing:  # browsers of launches cut short, being closed
            await asyncio.wait(set(self._closing), timeout=CANCELLED_LAUNCH_WAIT + DRIVER_CHECK_WAIT)
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()
        sweeping, self._sweeping = self._sweeping, {}
        for watch, profile in sweeping.items():  # the driver is gone: nothing makes them again
            watch.cancel()
            remove_profile(profile)
        temp_dirs, self._temp_dirs = self._temp_dirs, []
        for temp_dir in temp_dirs:
            shutil.rmtree(temp_dir, ignore_errors=True)
            forget_temporary(temp_dir)
        if self._abandoned is not None:
            with contextlib.suppress(Exception):  # its thread does not outlive the driver
                await self._abandoned

    async def _chromium(self) -> Any:
        await self.start()
        assert self._playwright is not None
        return self._playwright.chromium

    async def _restarted(self, used: Playwright | None) -> bool:
        """After a launch or connect through `used` failed: if that driver no longer answers
        (killed, or out of memory: every browser it drove went with it), start a new one. True if
        a new one runs now (another call may have started it), and the call is worth making again."""
        if used is None:
            return False
        if self._playwright is not used:
            return self._playwright is not None
        if await driver_answers(used, DRIVER_CHECK_WAIT):
            return False
        if self._playwright is used:
            self._playwright = None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(used.stop(), DRIVER_CHECK_WAIT)
        await self.start()
        return True

    async def launch(self, options: BrowserOptions, *, timeout: float = 30.0) -> Launched:
        """Start a local Chromium over a pipe (no TCP port) with a persistent profile: `user_data_dir`,
        or a fresh temporary one that the caller deletes after the browser is closed."""
        used = self._playwright
        try:
            return await self._launch(options, timeout)
        except (ConnectError, PlaywrightError):
            if not await self._restarted(used):
                raise
        return await self._launch(options, timeout)

    async def _launch(self, options: BrowserOptions, timeout: float) -> Launched:
        executable = find_browser(options.browser_path)
        # The driver first: a start cut short (a stop during start-up) must leave no profile behind.
        chromium = await self._chromium()
        temp = None
        if options.user_data_dir is None:
            temp = profile = made_temporary(tempfile.mkdtemp(prefix="tabpilot-profile-"), profile=True)
        else:
            profile = options.user_data_dir
        launching = asyncio.ensure_future(
            chromium.launch_persistent_context(
                profile,
                executable_path=executable,
                headless=options.headless,
                args=list(options.browser_args),
                proxy=_proxy(options),
                timeout=_ms(timeout),
                # A terminal's Ctrl-C reaches the driver too (same process group): it would close
                # the browser itself while tabpilot stops it, which then read as a browser that quit.
                handle_sigint=False,
                **_context_options(options),
            )
        )
        try:
            context: BrowserContext = await self._launched(launching, profile, executable)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                # The driver goes on launching: let it, close that browser, then remove its
                # profile (else the browser writes it again). In a task of its own, which a
                # cancellation that strikes every await of this one (anyio's) cannot cut short;
                # `stop` waits for it.
                closing = asyncio.ensure_future(self._close_cancelled(launching, temp))
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
                with contextlib.suppress(BaseException):
                    await asyncio.shield(closing)
                raise
            if not launching.done():
                # The browser ended: Playwright gives up at its timeout. Nothing to wait for.
                launching.add_done_callback(self._close_late)
            if temp is not None:
                # A browser Playwright gave up on (its launch timed out) is still exiting, and
                # would write the profile again: removed once it has gone.
                pid = launched_browser(temp)
                if pid is not None:
                    await pid_ends(pid, within=FAILED_LAUNCH_EXIT, every=WATCH_EVERY)
                remove_profile(temp, for_good=False)
                watch = asyncio.ensure_future(self._sweep(temp))
                self._sweeping[watch] = temp
                watch.add_done_callback(lambda done: self._sweeping.pop(done, None))
            if isinstance(exc, PlaywrightError):
                _remove_socket_dirs(str(exc))
                raise launch_error(exc, executable, profile if temp is None else None) from exc
            raise
        try:
            await _prepare_context(context, options, storage=True)
        except BaseException:
            with contextlib.suppress(Exception):
                await context.close()
            if temp is not None:
                remove_profile(temp)
            raise
        assert context.browser is not None and self._playwright is not None
        browser = BrowserHandle(context.browser, self._playwright)
        return Launched(browser, ContextHandle(context, browser), temp, None if temp else profile)

    @staticmethod
    async def _sweep(profile: str) -> None:
        """Remove the temporary profile of a failed launch again whenever it comes back within
        GIVEN_UP_SWEEP seconds (the driver's launch went on a while), once the browser it may have
        started after all has gone; then for good."""
        loop = asyncio.get_running_loop()
        until = loop.time() + GIVEN_UP_SWEEP
        while loop.time() < until:
            await asyncio.sleep(WATCH_EVERY)
            pid = launched_browser(profile)
            if pid is not None:
                await pid_ends(pid, within=FAILED_LAUNCH_EXIT, every=WATCH_EVERY)
            if os.path.exists(profile):
                remove_profile(profile, for_good=False)
        remove_profile(profile)

    @staticmethod
    async def _close_cancelled(launching: asyncio.Future[BrowserContext], temp: str | None) -> None:
        """Close the browser of a launch cut short once it is up (bounded), then remove its
        temporary profile."""
        with contextlib.suppress(BaseException):
            await (await asyncio.wait_for(launching, CANCELLED_LAUNCH_WAIT)).close()
        if temp is not None:
            remove_profile(temp)

    def _close_late(self, launching: asyncio.Future[BrowserContext]) -> None:
        """A launch given up on (its browser ended) that gives a context after all: close it."""
        if launching.cancelled() or launching.exception() is not None:
            return
        closing = asyncio.ensure_future(launching.result().close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    @staticmethod
    async def _launched(
        launching: asyncio.Future[BrowserContext], profile: str, executable: str
    ) -> BrowserContext:
        """The context `launching` gives, unless the browser's process ends first: Playwright
        notices a browser that ends while it sets up the first page only at its launch timeout
        (30 s by default), so the process is watched meanwhile. Playwright's own error, when it
        has one within `EXIT_GRACE`, says more (the browser's last words, its exit code)."""
        ended = asyncio.ensure_future(launch_ends(profile))
        try:
            either: set[asyncio.Future[Any]] = {launching, ended}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if not launching.done():
                await asyncio.wait({launching}, timeout=EXIT_GRACE)
            if launching.done():
                return launching.result()
        finally:
            ended.cancel()
        raise ConnectError(
            f"Chromium ({executable}) failed to start: its process (pid {ended.result()}) ended while "
            "it was starting (it was killed, crashed or quit).",
            "Try again: a launch starts a new browser. If it keeps happening, check that the browser "
            "runs on this machine (run it by hand to see why not).",
        )

    async def _connect(
        self, endpoint: str, protocol: Literal["cdp", "playwright"], options: BrowserOptions, timeout: float
    ) -> BrowserHandle:
        used = self._playwright
        try:
            return await self._connect_once(endpoint, protocol, options, timeout)
        except (ConnectError, PlaywrightError):
            if not await self._restarted(used):
                raise
        return await self._connect_once(endpoint, protocol, options, timeout)

    async def _connect_once(
        self, endpoint: str, protocol: Literal["cdp", "playwright"], options: BrowserOptions, timeout: float
    ) -> BrowserHandle:
        chromium = await self._chromium()
        assert self._playwright is not None
        playwright = self._playwright
        connect = chromium.connect_over_cdp if protocol == "cdp" else chromium.connect
        headers = dict(options.cdp_headers) or None
        with map_playwright_errors(Doing.connecting(endpoint, protocol, timeout)):
            # Playwright's own timeout covers the handshake; the outer one guarantees nothing hangs.
            browser: Browser = await asyncio.wait_for(
                connect(endpoint, timeout=_ms(timeout), headers=headers), timeout + 5
            )
        return BrowserHandle(browser, playwright)

    async def connect_cdp(
        self, endpoint: str, options: BrowserOptions, *, timeout: float
    ) -> tuple[BrowserHandle, ContextHandle]:
        handle = await self._connect(endpoint, "cdp", options, timeout)
        contexts = handle.contexts
        return handle, contexts[0] if contexts else await handle.new_context(options)

    async def connect_server(
        self, endpoint: str, options: BrowserOptions, *, timeout: float
    ) -> tuple[BrowserHandle, ContextHandle]:
        handle = await self._connect(endpoint, "playwright", options, timeout)
        try:
            with map_playwright_errors(Doing.connecting(endpoint, "context", timeout)):
                context = await asyncio.wait_for(handle.new_context(options), timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(handle.close(), 5)
            raise
        return handle, context
