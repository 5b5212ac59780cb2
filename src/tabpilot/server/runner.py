"""Running the server until it should stop, and stopping it cleanly.

Stdio stops at the end of stdin (the lifespan then closes every session's browser; while the
server still loads, with no request left to answer, the browser is closed at once, without waiting
for the SDK: `_loaded`). It also stops
on SIGINT (Ctrl-C), SIGTERM or SIGHUP, without waiting for the transport (stdin read from a file
is read by a thread no cancellation reaches): it cuts the calls under way short, each answered that
the server stops (up to `ANSWER_GRACE` for those answers), closes the browsers itself (bounded),
then ends the process (status 130 after SIGINT, 0 after SIGHUP, as stopped by SIGTERM after
SIGTERM: as the HTTP server ends). Either way no browser process and no
temporary profile outlive the server. A second signal while stopping exits at once, the browsers on
temporary profiles killed and those profiles removed first (`exit_as_stopped_by`). No traceback.

`serve_stdio` claims stdin and stdout and starts reading them first (the handshake is answered
from there while the SDK loads: `stdio.StdioTransport`), then starts the browser, and builds the
server (importing the MCP SDK, most of the start-up time) in a worker thread meanwhile, so the
first tool call finds the browser sooner. Either way the collector rests while the server loads
(`loading`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from .. import __version__, clean_up_at_exit
from .about import NAME, TITLE, instructions
from .config import SHUTDOWN_TIMEOUT, ServerConfig
from .handshake import Greeting
from .state import NOT_RUN, ServerState
from .stdio import StdioTransport

if TYPE_CHECKING:
    from .app import TabpilotServer

logger = logging.getLogger("tabpilot.server")

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
EXIT_INTERRUPTED = 130
ANSWER_GRACE = 1.0
"""Seconds a stop signal over stdio waits for the answers of the calls it cut short."""


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Start-up: no collections while the server loads, then what it loaded is frozen.

    Loading the MCP SDK and building the tools' schemas creates about 115,000 objects that live as
    long as the process; collecting while they come in walks them again and again, about a fifth
    of start-up (over stdio the session was ready in 592 ms instead of 781, medians of ten
    spawns). The few cycles start-up leaves behind (under 1 MB) stay: collecting them costs
    50-100 ms. Frozen, the rest is not walked by later collections either (tens of ms each, as
    pauses in tool calls, once telemetry holds many entries).
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


async def _stop_on_signals(
    close: Callable[[], Awaitable[None]], timeout: float, task_status: anyio.abc.TaskStatus[None]
) -> None:
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            logger.info("%s: stopping", signal.Signals(signum).name)
            break
        else:
            return
        async with anyio.create_task_group() as group:

            async def insist() -> None:
                async for again in signals:
                    # The user insists: leave now (the browsers on temporary profiles are
                    # killed and their profiles removed; Playwright's driver closes the others
                    # when this process's end closes its pipe).
                    logger.warning("%s again while stopping: exiting at once", signal.Signals(again).name)
                    sys.stderr.flush()
                    exit_as_stopped_by(again)  # as stopped by it: a second SIGTERM is no Ctrl-C

            group.start_soon(insist)
            with anyio.move_on_after(timeout, shield=True):
                await close()
            sys.stderr.flush()
            exit_as_stopped_by(signum)


def exit_as_stopped_by(signum: int) -> None:
    """End the process as stopped by `signum`, over stdio and HTTP alike: SIGTERM ends it as
    stopped by SIGTERM (status 143 in a shell, what a supervisor that sent it expects), SIGINT
    with 130, SIGHUP with 0. A browser still running on a temporary profile (a second signal cut
    the clean stop short, or it ran out of time) is killed first and the profile removed."""
    clean_up_at_exit()
    if signum == getattr(signal, "SIGTERM", None) and hasattr(os, "kill"):
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(EXIT_INTERRUPTED if signum == signal.SIGINT else 0)


def run_until_stopped(
    serve: Callable[[], Awaitable[None]], close: Callable[[], Awaitable[None]], *, timeout: float
) -> int:
    """Run `serve()` until it returns, or until a stop signal: then `close()` (bounded by `timeout`)
    and end the process. The process's exit code."""

    async def main() -> None:
        async with anyio.create_task_group() as group:
            await group.start(_stop_on_signals, close, timeout)
            await serve()
            group.cancel_scope.cancel()

    try:
        anyio.run(main)
    except KeyboardInterrupt:  # a Ctrl-C before the signal receiver was in place (start-up)
        return EXIT_INTERRUPTED
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        return EXIT_INTERRUPTED
    finally:
        sys.stderr.flush()
    return 0


async def _loaded(
    build: Callable[[ServerState], TabpilotServer], state: ServerState, wire: StdioTransport
) -> TabpilotServer | None:
    """`build(state)`, run in a thread; None if stdin ends first with no request left to answer
    (the client went while the browser started, as a client that gives up on a slow start does):
    the SDK still loading is not waited for. Its thread is a daemon's, which the process does
    not wait for either: ending, it stops no more than half-way through an import."""
    loop = asyncio.get_running_loop()
    built: asyncio.Future[TabpilotServer] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not built.done():  # else given up on
            outcome()

    def run() -> None:
        try:
            server = build(state)
        except BaseException as exc:
            outcome = functools.partial(built.set_exception, exc)
        else:
            outcome = functools.partial(built.set_result, server)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits for it
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name="tabpilot-load", daemon=True).start()
    left = loop.create_task(wire.left_unasked())
    try:
        either: list[asyncio.Future[Any]] = [built, left]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not built.done() and left.result():
            built.cancel()  # what the thread ends with is dropped (`settle`)
            return None
        return await built
    finally:
        left.cancel()


def serve_stdio(config: ServerConfig, build: Callable[[ServerState], TabpilotServer]) -> int:
    """Serve one client over stdio until the end of stdin or a stop signal; the exit code.

    The state, and with it the browser, starts at once; `build` makes the server for it in a
    worker thread meanwhile (it imports the SDK). The config was checked when it was made
    (`ServerConfig`): nothing refuses it here, after the browser has started.
    """
    states: list[ServerState] = []
    wire = StdioTransport(Greeting(NAME, TITLE, __version__, instructions(config.tools, config.caps)))

    async def serve() -> None:
        await wire.open()
        state = ServerState(config)
        states.append(state)
        try:
            with loading():
                state.warm_up()
                server = await _loaded(build, state, wire)
        except BaseException:
            with anyio.move_on_after(SHUTDOWN_TIMEOUT, shield=True):
                await state.close()
            raise
        if server is None:  # the client left while the server loaded, asking nothing
            logger.info("stdin ended while the server was starting: stopping")
            with anyio.move_on_after(SHUTDOWN_TIMEOUT, shield=True):
                await state.close()
            return
        await wire.serve(server)

    async def close() -> None:
        # The calls under way are cut short and answered that the server stops (the client would
        # otherwise wait for answers that never come), then the browsers close.
        for state in states:
            state.stop_calls()
        with anyio.move_on_after(ANSWER_GRACE):
            while wire.unanswered:
                await anyio.sleep(0.01)
        # What the server had not started (it was loading, or the stop came first) is answered too.
        await wire.refuse_unanswered(NOT_RUN)
        for state in states:
            await state.close()

    return run_until_stopped(serve, close, timeout=SHUTDOWN_TIMEOUT)
