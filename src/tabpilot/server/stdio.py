"""MCP over this process's stdin and stdout: read and written by the event loop, parsed once.

`StdioTransport.open()` claims the process's standard streams at once (fd 0 then reads the null
device and fd 1 writes to stderr, so nothing else, a child process or a stray print, touches the
wire) and starts reading requests, before the MCP SDK is imported. While the SDK loads, the first
request is answered here if it is the handshake (`handshake.Greeting`): the client's session is
ready about 0.2 s after the spawn instead of 0.8 s; the SDK still sees that request first, and
its own answer is compared with the one sent and dropped. `serve(server)` then hands
every request, in order, to the SDK's low-level server.

What this does that the SDK's stdio transport does not (besides the early handshake):
- no thread per line read or written: the loop reads and writes the pipes itself (each thread
  handoff cost a tabpilot call 0.1-0.3 ms idle, and more while 20 busy tabs kept the loop busy);
- a request the SDK's JSON-RPC model refuses (arguments nested hundreds of levels deep, a lone
  surrogate such as `"\\ud800"`) is answered, not dropped: it is handed on as the same request
  (same id and method) without its unreadable part, a tool call with `INVALID_ARGUMENTS` as its
  only argument, so the server answers it with an error that says what was wrong;
- a line that is not JSON is answered with a parse error (-32700), and JSON that is no JSON-RPC
  message with an invalid request error (-32600), as JSON-RPC 2.0 asks (the id null where none
  can be read); the SDK would log either and leave the client waiting.

Where the loop cannot wait on the streams (a regular file, the null device, or Windows), a thread
reads stdin and writes go straight to stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import selectors
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import IO, TYPE_CHECKING, Any

from .handshake import Greeting

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage

logger = logging.getLogger("tabpilot.server")

INVALID_ARGUMENTS = "__tabpilot_unreadable_arguments__"
"""The argument a rewritten tools/call carries: why its real arguments could not be read."""

_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_METHOD = re.compile(rb'"method"\s*:\s*"([A-Za-z0-9_/.$-]+)"')
_NAME = re.compile(rb'"name"\s*:\s*"([A-Za-z0-9_.-]+)"')
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
EOF_GRACE = 1.0
"""Seconds the end of stdin waits for the answers to requests read just before it."""
_LINE_LIMIT = 1 << 30
"""Bytes one request may take (as good as none: the client is the process that started us)."""


def _encoded(message: Any) -> bytes:
    """An outgoing message as its JSON line. One that cannot be written (a string that is not
    valid Unicode, which no tool answer carries: `Response` makes them well-formed) is answered as
    an internal error, or dropped if it is a notification, and logged: it never ends the server."""
    try:
        line: bytes = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        return line
    except (ValueError, UnicodeError) as exc:  # pydantic's serialization error is a ValueError
        logger.error("could not write a message to the client: %s", exc)
        request_id = getattr(message, "id", None)
        if request_id is None:
            return b""
        failed = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": -32603, "message": f"tabpilot could not write its answer: {exc}"[:500]},
        }
        return json.dumps(failed).encode()


class StdioTransport:
    """The process's stdin and stdout as an MCP wire (see the module docstring)."""

    def __init__(self, greeting: Greeting | None = None) -> None:
        self._greeting = greeting
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._answered: dict[Any, dict[str, Any]] = {}
        """Requests answered before the SDK was loaded, by id: the answer that was sent."""
        self.unanswered: dict[Any, str] = {}
        """The requests handed to the server and not answered yet: their methods, by id."""
        self._refused: set[Any] = set()
        """Requests answered that the server stops (`refuse_unanswered`): the server's own answer
        to one, if it comes after, is not sent."""
        self._write: Callable[[bytes], Any] | None = None
        self._drain: Callable[[], Any] | None = None
        self._close: Callable[[], Awaitable[None]] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._ended = asyncio.Event()
        """Set at the end of stdin (all it held is in `_lines`)."""

    async def open(self, wire: tuple[int, int] | None = None) -> None:
        """Claim stdin and stdout (or use the descriptors `wire` gives: what to read, what to write)
        and start reading, answering the handshake if it comes first."""
        wire_in, wire_out = wire if wire is not None else _claim_standard_streams()
        loop = asyncio.get_running_loop()
        reader_file: IO[bytes] = os.fdopen(wire_in, "rb", buffering=0)
        writer_file: IO[bytes] = os.fdopen(wire_out, "wb", buffering=0)
        try:
            if not _pollable(wire_out, selectors.EVENT_WRITE):
                raise ValueError("stdout is not a pipe")
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, writer_file)
            stream = asyncio.StreamWriter(transport, protocol, None, loop)
            self._write, self._drain = stream.write, stream.drain

            async def close() -> None:
                with contextlib.suppress(ConnectionError):
                    await stream.drain()
                stream.close()

            self._close = close
        except (ValueError, OSError, NotImplementedError):
            self._write = writer_file.write
        if _pollable(wire_in, selectors.EVENT_READ):
            reader = asyncio.StreamReader(limit=_LINE_LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), reader_file)
            self._reading = loop.create_task(self._read(reader))
        else:
            threading.Thread(
                target=self._read_in_thread, args=(reader_file, loop), name="tabpilot-stdin", daemon=True
            ).start()

    # -- reading -------------------------------------------------------------------------------

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                await self._take(line)
        except (ConnectionError, ValueError) as exc:  # a torn pipe or an endless line: the end
            logger.warning("stdin: %s; stopping", exc)
        self._end()

    def _read_in_thread(self, source: IO[bytes], loop: asyncio.AbstractEventLoop) -> None:
        for line in source:
            asyncio.run_coroutine_threadsafe(self._take(line), loop).result()
        loop.call_soon_threadsafe(self._end)

    def _end(self) -> None:
        self._lines.put_nowait(None)
        self._ended.set()

    async def left_unasked(self) -> bool:
        """Wait for the end of stdin; then whether the client left asking nothing: no request read
        waits for an answer (the handshake answered early, and notifications, need none)."""
        await self._ended.wait()
        return not self._waiting()

    async def _take(self, line: bytes) -> None:
        if not line.strip():
            return
        if self._greeting is not None:  # before the server runs, only the first request
            greeting, self._greeting = self._greeting, None
            early = greeting.answer(line)
            if early is not None:
                request_id, answer = early
                self._answered[request_id] = answer
                await self._send(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode())
        self._lines.put_nowait(line)

    # -- serving -------------------------------------------------------------------------------

    async def serve(self, server: Server[Any]) -> None:
        """Serve `server` until stdin ends: every request read so far, then the rest as it comes."""
        import anyio
        from mcp.shared.message import SessionMessage
        from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

        self._greeting = None  # the server answers from here on
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_client, from_server = anyio.create_memory_object_stream[SessionMessage](0)

        reading = anyio.CancelScope()
        unanswered = self.unanswered

        async def feed() -> None:
            with reading:
                async with to_server:
                    while (line := await self._lines.get()) is not None:
                        if (refused_all := batch_refusals(line)) is not None:
                            for each in refused_all:
                                await self._send(json.dumps(each, ensure_ascii=False).encode())
                            continue
                        message = parse(line)
                        if isinstance(message, Exception) and (refused := refusal(line)) is not None:
                            await self._send(json.dumps(refused, ensure_ascii=False).encode())
                            continue
                        if isinstance(message, SessionMessage) and isinstance(
                            message.message, JSONRPCRequest
                        ):
                            unanswered[message.message.id] = message.message.method
                        await to_server.send(message)
                    # The end of stdin: the SDK stops, cancelling what it has not answered yet. A
                    # client that wrote its last requests and closed stdin at once (a file of
                    # requests) still gets the answers that come within a moment.
                    with anyio.move_on_after(EOF_GRACE):
                        while unanswered:
                            await anyio.sleep(0.01)

        async def answer() -> None:
            async with from_server:
                async for sent in from_server:
                    message = sent.message
                    if isinstance(message, JSONRPCResponse | JSONRPCError):
                        unanswered.pop(message.id, None)
                        if message.id in self._refused:  # answered already: the server stops
                            continue
                        if message.id in self._answered:  # the handshake, answered early: not again
                            self._check_early(
                                message.id, message.model_dump(by_alias=True, exclude_unset=True)
                            )
                            continue
                    line = _encoded(message)
                    if line:
                        await self._send(line)

        async with anyio.create_task_group() as group:
            group.start_soon(feed)
            group.start_soon(answer)
            async with to_client:
                await server.run(from_client, to_client, server.create_initialization_options())
            reading.cancel()  # the server stopped (stdin ended, or its lifespan failed)
        # Every answer is written: let the pipe take the last of them before the process ends.
        if self._close is not None:
            await self._close()

    async def refuse_unanswered(self, said: str) -> None:
        """The server stops: answer every request read and not answered yet (still waiting to be
        handed to the server, which is still loading, or under way in it) with `said`, so that no
        client waits for an answer that never comes. A tool call gets it as a tool's error, any
        other request as a JSON-RPC error; the server's own answer after this is not sent."""
        for request_id, method in self._waiting(take=True).items():
            self._refused.add(request_id)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
            if method == "tools/call":
                reply["result"] = {
                    "content": [{"type": "text", "text": f"### Error\n{said}"}],
                    "isError": True,
                }
            else:
                reply["error"] = {"code": -32000, "message": said}
            await self._send(json.dumps(reply, ensure_ascii=False).encode())

    def _waiting(self, *, take: bool = False) -> dict[Any, str]:
        """The requests read and not answered yet, their methods by id: those still waiting to be
        handed to the server (`take`: no longer) and those under way in it."""
        waiting: dict[Any, str] = {}
        lines: list[bytes | None] = []
        while not self._lines.empty():
            lines.append(self._lines.get_nowait())
        for line in lines:
            if line is None or not take:
                self._lines.put_nowait(line)  # the end of stdin stays told
            if line is None:
                continue
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
                    waiting[message["id"]] = message["method"]
        waiting.update(self.unanswered)
        return {
            request_id: method
            for request_id, method in waiting.items()
            if request_id not in self._answered and request_id not in self._refused
        }

    def _check_early(self, request_id: Any, sdk_answer: dict[str, Any]) -> None:
        sent = self._answered.pop(request_id)
        if sdk_answer != sent:
            logger.warning(
                "the handshake answer sent before the MCP SDK was loaded differs from the SDK's own; "
                "please report this (sent: %s; the SDK's: %s)",
                json.dumps(sent)[:2000],
                json.dumps(sdk_answer)[:2000],
            )

    async def _send(self, data: bytes) -> None:
        assert self._write is not None
        self._write(data + b"\n")
        if self._drain is not None:
            with contextlib.suppress(ConnectionError):  # the client is gone: stdin ends next
                await self._drain()


def parse(line: bytes) -> SessionMessage | Exception:
    """One line read from the client, as the SDK takes it (see `unreadable`)."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # what the SDK's own transport would drop
        rewritten = unreadable(line, exc)
        if rewritten is None:
            return exc  # nothing to answer: the SDK logs it
        return SessionMessage(jsonrpc_message_adapter.validate_python(rewritten, by_name=False))


def unreadable(line: bytes, error: Exception) -> dict[str, Any] | None:
    """The answerable request that a line the SDK cannot read becomes (None: no id to answer)."""
    request = _request_parts(line)
    if request is None:
        return None
    request_id, method, tool = request
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if method == "tools/call" and tool is not None:
        message["params"] = {"name": tool, "arguments": {INVALID_ARGUMENTS: _reason(line, error)}}
    return message


def refusal(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error that answers a line the SDK cannot read and `unreadable` cannot make a
    request of; None for what looks like the client's answer to a request of the server's, which
    is never answered."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _error(None, PARSE_ERROR, f"Parse error: the line could not be read as JSON ({reason[:200]})")
    if isinstance(value, dict) and ("result" in value or "error" in value):
        return None
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return _error(request_id, INVALID_REQUEST, "Invalid Request: the line is not a JSON-RPC 2.0 request")


def batch_refusals(line: bytes) -> list[dict[str, Any]] | None:
    """The errors answering a JSON-RPC batch (a list), one per request in it with an id (one with
    no id when it holds none), so a client waits for none of them; None for any other line. (Read
    as one request, only its first was run and the others were never answered.)"""
    if not line.lstrip().startswith(b"["):
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None  # answered as a line that is not JSON
    if not isinstance(value, list):
        return None
    ids = [
        item["id"]
        for item in value
        if isinstance(item, dict)
        and isinstance(item.get("method"), str)
        and isinstance(item.get("id"), int | str)
        and not isinstance(item.get("id"), bool)
    ]
    said = "Invalid Request: a JSON-RPC batch, which MCP does not take (it dropped batches in its 2025-06-18 version)"
    return [_error(request_id, INVALID_REQUEST, said) for request_id in ids or [None]]


def _error(request_id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message + "; send one JSON-RPC 2.0 message per line."},
    }


def _reason(line: bytes, error: Exception) -> str:
    from pydantic import ValidationError

    said = str(error).lower()
    if "surrogate" in said or ("hex escape" in said and _SURROGATE.search(line)):
        return "it holds a lone surrogate (such as \\ud800), which is not valid Unicode text"
    if "recursion" in said or "depth" in said:
        return "it is nested too deeply"
    errors = error.errors() if isinstance(error, ValidationError) else []
    what = str(errors[0].get("msg", "")) if errors else type(error).__name__
    return f"it is not valid JSON-RPC ({what[:200]})"


def _request_parts(line: bytes) -> tuple[int | str, str, str | None] | None:
    """The id, method and tool name of a request, read leniently (the line may not parse)."""
    found_id, method, name = _ID.search(line), _METHOD.search(line), _NAME.search(line)
    if found_id is None or method is None:
        return None
    try:
        request_id: int | str = json.loads(found_id.group(1))
    except ValueError:
        return None
    tool = name.group(1).decode() if name is not None else None
    return request_id, method.group(1).decode(), tool


def _claim_standard_streams() -> tuple[int, int]:
    """Private copies of fd 0 and fd 1 for the wire; fd 0 then reads the null device and fd 1
    writes to stderr (what a child process or a stray print writes cannot tear a message)."""
    sys.stdout.flush()
    wire_in, wire_out = _private_copy(0), _private_copy(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _pollable(fd: int, events: int) -> bool:
    """Whether the event loop can wait on `fd`: pipes, sockets and terminals, not regular files or
    the null device, and on Windows not the handles a parent passes (not opened for overlapped I/O)."""
    if sys.platform == "win32":
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, events)
        except (OSError, ValueError):
            return False
    return True


def _private_copy(fd: int) -> int:
    """A copy of `fd` above the standard range, not inherited by child processes."""
    if sys.platform == "win32":
        copy = os.dup(fd)  # not inheritable by default
    else:
        import fcntl

        copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    return copy
