"""MCP servers in subprocesses, driven over stdio by the SDK's own client, exactly as an agent would.

`McpProcess` wraps `mcp.Client` with the server's pid (for /proc memory readings) and a stderr
log file (so server logs do not tear the progress line; the tail is shown when a call fails).
It starts any command: `python -m tabpilot serve`, the trivial server, or a peer's `node` server.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO, cast

import procmem
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

BENCH_DIR = Path(__file__).resolve().parent


class BenchError(RuntimeError):
    """A tool call the benchmark relies on failed: the figures after it would mean nothing."""


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def structured_of(result: CallToolResult) -> dict[str, Any]:
    data = result.structured_content
    return data if isinstance(data, dict) else {}


class McpProcess:
    """One MCP server over stdio: `command` (this Python by default) with `args`.

    `needles` are arguments of the server's command line that find its pid among this process's
    children; `env` is added to ours. The server and its browser get a temp dir of their own
    (TMPDIR), removed after it: a browser killed as its server stops leaves files there.
    """

    def __init__(
        self,
        args: list[str],
        *,
        needles: tuple[str, ...],
        command: str = sys.executable,
        env: dict[str, str] | None = None,
    ) -> None:
        self._tmp = tempfile.mkdtemp(prefix="tabpilot-bench-")
        # The SDK passes a server only a few variables unless told: pass ours (PYTHONPATH, MALLOC_*).
        self.params = StdioServerParameters(
            command=command, args=args, env={**os.environ, "TMPDIR": self._tmp, **(env or {})}
        )
        self.needles = needles
        self.pid: int | None = None
        self._stack = AsyncExitStack()
        self._errlog = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in __aexit__)
            "w+", prefix="tabpilot-bench-", suffix=".log", delete=False
        )
        self.client: Client | None = None

    async def __aenter__(self) -> McpProcess:
        before = set(procmem.children(os.getpid()))
        # A NamedTemporaryFile wraps a text file; the SDK only needs its fileno().
        errlog = cast(TextIO, self._errlog)
        client = Client(stdio_client(self.params, errlog=errlog), read_timeout_seconds=120)
        try:
            self.client = await self._stack.enter_async_context(client)
        except BaseException:
            await self._stack.aclose()
            raise BenchError(
                f"{self.params.command} {' '.join(self.params.args)} did not start:\n{self.stderr_tail()}"
            ) from None
        # The stdio transport starts the server as a direct child of this process. A server that
        # rewrites its command line (Chrome DevTools MCP sets its process title) is the child
        # that was not there before.
        self.pid = procmem.find_child(os.getpid(), *self.needles) if self.needles else None
        if self.pid is None:
            fresh = [p for p in procmem.children(os.getpid()) if p not in before]
            self.pid = max(fresh) if len(fresh) == 1 else None
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self._stack.aclose()
        finally:
            self._errlog.close()
            os.unlink(self._errlog.name)
            shutil.rmtree(self._tmp, ignore_errors=True)

    def stderr_tail(self, lines: int = 30) -> str:
        self._errlog.flush()
        try:
            return "\n".join(Path(self._errlog.name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def raw(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        assert self.client is not None
        return await self.client.call_tool(tool, args)

    async def call(self, tool: str, **args: Any) -> CallToolResult:
        """Call a tool that must succeed."""
        try:
            result = await self.raw(tool, args)
        except Exception as exc:
            raise BenchError(f"{tool}({args}) raised {exc!r}\nserver stderr:\n{self.stderr_tail()}") from exc
        if result.is_error:
            raise BenchError(f"{tool}({args}) returned an error:\n{text_of(result)}")
        return result


def bare_server() -> McpProcess:
    """The smallest MCP server (bench/bare_server.py): the SDK's own cost per round trip."""
    script = str(BENCH_DIR / "bare_server.py")
    return McpProcess([script], needles=(script,))


def tabpilot_server(*extra: str) -> McpProcess:
    """`tabpilot serve` with structured content on: these benches read ids from it (the peer
    comparison runs the defaults and reads the text)."""
    return McpProcess(
        ["-m", "tabpilot", "serve", "--structured-content", *extra], needles=("tabpilot", "serve")
    )
