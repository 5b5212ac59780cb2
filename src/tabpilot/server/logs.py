"""The server's log: where it goes (stderr or a file, never stdout: over stdio stdout is the
protocol) and, during a tool call, to the MCP client too (`notifications/message`).

`configure(level, path)` is called once by the command line. Records of the `tabpilot` loggers
that a tool call emits are kept with the call (`during_call`) and sent to its client before the
call's result, at the levels the client opted in to (the SDK filters: at protocol 2026-07-28 the
client asks per request; older clients get every level).
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

LEVELS = ("debug", "info", "warning", "error")
LogLevel = Literal["debug", "info", "warning", "error"]
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_MCP_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "critical",
}
_call_records: contextvars.ContextVar[list[logging.LogRecord] | None] = contextvars.ContextVar(
    "tabpilot_call_records", default=None
)


class _KeepWithCall(logging.Handler):
    """Keeps the records emitted inside a tool call (its context) for that call's client."""

    def emit(self, record: logging.LogRecord) -> None:
        records = _call_records.get()
        if records is not None and len(records) < MAX_RECORDS_PER_CALL:
            records.append(record)


MAX_RECORDS_PER_CALL = 50
_keeper = _KeepWithCall(logging.DEBUG)
logging.getLogger("tabpilot").addHandler(_keeper)


class _Mask(logging.Filter):
    """Rewrites each record's message with `mask` (secret values become their placeholders)."""

    def __init__(self, mask: Callable[[str], str]) -> None:
        super().__init__()
        self._mask = mask

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = self._mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


class _LogFile(logging.FileHandler):
    """The log file: a write that fails (a full disk) is said once on stderr, not with a traceback
    per record (logging's default), and the server goes on."""

    _failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._failed:
            self._failed = True
            error = sys.exc_info()[1]
            print(
                f"tabpilot: writing the log to {self.baseFilename} failed ({error}); "
                "later failures are not reported",
                file=sys.stderr,
                flush=True,
            )


def configure(
    level: LogLevel = "warning", path: str | None = None, *, mask: Callable[[str], str] | None = None
) -> None:
    """Send tabpilot's records at `level` and above, and every other library's warnings and errors
    (the MCP SDK, the HTTP server), to `path` (appended) or stderr. Raises OSError with the reason
    if the file cannot be opened."""
    handler: logging.Handler = _LogFile(path, encoding="utf-8") if path else logging.StreamHandler(sys.stderr)
    numeric = getattr(logging, level.upper())
    handler.setFormatter(logging.Formatter(FORMAT))
    if mask is not None:
        handler.addFilter(_Mask(mask))
    handler.setLevel(numeric)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)  # also keeps the SDK from adding its own (logging.basicConfig)
    root.setLevel(max(numeric, logging.WARNING))
    # Every tabpilot record is made: a client may ask for ones the log output does not want.
    logging.getLogger("tabpilot").setLevel(logging.DEBUG)


@contextmanager
def during_call() -> Iterator[list[logging.LogRecord]]:
    """Collect the tabpilot records emitted in this context (a tool call) into the yielded list."""
    records: list[logging.LogRecord] = []
    token = _call_records.set(records)
    try:
        yield records
    finally:
        _call_records.reset(token)


MCP_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The levels of `notifications/message`, least severe first."""


def at_least(level: str, least: str) -> bool:
    """Whether a record of `level` is sent to a client that asked for `least` and above."""
    return level in MCP_LEVELS and least in MCP_LEVELS and MCP_LEVELS.index(level) >= MCP_LEVELS.index(least)


def mcp_message(record: logging.LogRecord) -> tuple[Any, str, str]:
    """A record as `(level, data, logger)` for `notifications/message`."""
    level = _MCP_LEVELS.get(record.levelno, "info")
    return level, record.getMessage(), record.name
