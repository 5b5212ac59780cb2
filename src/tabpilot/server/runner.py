"""Running the server until it should stop, and stopping it cleanly.

Stdio stops at the end of stdin (the lifespan then closes every session's browser). It also stops
on SIGINT (Ctrl-C), SIGTERM or SIGHUP: the SDK reads stdin in a worker thread that no cancellation
reaches while the client keeps stdin open, so a signal does not wait for the transport: it closes
the browsers itself (bounded), then ends the process. Either way no browser process and no
temporary profile outlive the server. A second signal while stopping exits at once. No traceback.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

logger = logging.getLogger("tabpilot.server")

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
EXIT_INTERRUPTED = 130


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
                    # The user insists: leave now (Playwright's driver closes the browsers it
                    # launched when this process's end closes its pipe).
                    logger.warning("%s again while stopping: exiting at once", signal.Signals(again).name)
                    os._exit(EXIT_INTERRUPTED)

            group.start_soon(insist)
            with anyio.move_on_after(timeout, shield=True):
                await close()
            sys.stderr.flush()
            os._exit(0)


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
