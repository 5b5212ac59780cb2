"""`tabpilot serve` over stdio, as an MCP client that launches servers runs it; the transport
(`server/stdio.py`) and the handshake it answers before the MCP SDK is loaded (`server/handshake.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types.version
import pytest
from mcp import Client

from support import section, served, text
from tabpilot import __version__
from tabpilot.demo.site import LocalSite
from tabpilot.server import TabpilotServer
from tabpilot.server.about import INSTRUCTIONS, NAME, TITLE
from tabpilot.server.handshake import HANDSHAKE_VERSIONS, MODERN_VERSIONS, Greeting
from tabpilot.server.stdio import StdioTransport, parse

GREETING = Greeting(NAME, TITLE, __version__, INSTRUCTIONS)
CLIENT = {"name": "t", "version": "1"}


def initialize(version: str, request_id: int = 1) -> bytes:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}).encode()


def discover(version: str, request_id: int = 1) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": CLIENT,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": meta}}
    ).encode()


async def test_serve_over_stdio_launches_a_browser_and_reports_new_tabs(
    browser_path: str, site: LocalSite
) -> None:
    async with Client(served("--browser-path", browser_path)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"browser_tabs", "browser_navigate", "browser_snapshot"} <= tools

        opened = await client.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
        assert not opened.is_error, text(opened)
        # What the model reads: text only, with the id the next call needs.
        assert opened.structured_content is None
        match = re.fullmatch(r"Opened tab (\d+) and activated it\.", section(opened, "Result"))
        assert match, text(opened)
        tab_id = int(match.group(1))
        assert f"- tab {tab_id}: Page a ({site.url('/page/a')}) [active]" in section(opened, "Tabs")

        snapshot = await client.call_tool("browser_snapshot", {"full": True, "tabId": tab_id})
        assert 'heading "Page a"' in section(snapshot, "Snapshot")


async def test_a_page_string_that_is_not_valid_unicode_is_answered_and_the_server_goes_on(
    browser_path: str, site: LocalSite
) -> None:
    """Half an emoji (a lone UTF-16 surrogate) in a page's title or a script's result: the answer
    could not be written as UTF-8 and the server process died, every later call "Connection
    closed". It goes out with U+FFFD in its place, in the text and the structured content."""
    site.set_content("/half", "<title>T</title><script>document.title = 'cut \\ud83d here'</script>")
    async with Client(served("--browser-path", browser_path, "--structured-content")) as client:
        opened = await client.call_tool("browser_tabs", {"action": "new", "url": site.url("/half")})
        assert not opened.is_error, text(opened)
        listed = await client.call_tool("browser_tabs", {"action": "list"})
        assert "- tab 2: cut \ufffd here (" in text(listed), text(listed)
        assert {"cut \ufffd here"} <= {t["title"] for t in listed.structured_content["result"]["tabs"]}
        said = await client.call_tool("browser_evaluate", {"function": "() => ({'k\\udc00': 'a\\ud800b'})"})
        assert said.structured_content["result"]["value"] == {"k\ufffd": "a\ufffdb"}, text(said)
        after = await client.call_tool("browser_evaluate", {"function": "() => 1 + 1"})
        assert after.structured_content["result"]["value"] == 2


def test_requests_the_sdk_cannot_read_still_get_an_error_reply(browser_path: str) -> None:
    """Nested too deeply or holding a lone surrogate: the SDK's stdio transport would drop these
    without a reply; arguments that are a list it refuses with a bare "Invalid request
    parameters"; a line that is not JSON, or JSON that is no JSON-RPC message, it logs and leaves
    unanswered. The server answers each with an error that says why and keeps serving."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    replies: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        for line in server.stdout or ():
            replies.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()

    def ask(line: str) -> dict[str, Any]:
        assert server.stdin is not None
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()
        return replies.get(timeout=30)

    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert (
            ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))["id"] == 1
        )
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"browser_evaluate","arguments":%s}}'
        deep = ask(call % (2, '{"function":' + "[" * 300 + "]" * 300 + "}"))
        surrogate = ask(call % (3, '{"function":"() => \\"\\ud800\\""}'))
        for reply, expected_id, reason in ((deep, 2, "nested too deeply"), (surrogate, 3, "lone surrogate")):
            assert reply["id"] == expected_id and reply["result"]["isError"], reply
            said = reply["result"]["content"][0]["text"]
            assert "could not be read" in said and reason in said and "Nothing was done" in said, said
        # Arguments that are no object are answered the same way, saying what they must be.
        listed_args = ask(call % (4, "[]"))
        assert listed_args["id"] == 4 and listed_args["result"]["isError"], listed_args
        said = listed_args["result"]["content"][0]["text"]
        assert "could not be read: they are a list, not an object" in said and "Nothing was done" in said
        # A line that is not JSON, and JSON that is no request: errors with the id null (none
        # can be read), as JSON-RPC 2.0 answers them.
        for line, code in (("{not json", -32700), ('{"jsonrpc":"2.0","method":5}', -32600), ("[]", -32600)):
            refused = ask(line)
            assert refused["id"] is None and refused["error"]["code"] == code, refused
            assert "send one JSON-RPC 2.0 message per line" in refused["error"]["message"], refused
        # A batch (MCP has none since 2025-06-18): each of its requests is refused by its id. Its
        # first was run and the others never answered (the client waited for them).
        evaluate = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"browser_tabs","arguments":{"action":"new"}}}'
        batched = [ask(f'[{evaluate % 6}, {evaluate % 7}, {{"jsonrpc":"2.0","method":"notifications/x"}}]')]
        batched.append(replies.get(timeout=30))
        assert [r["id"] for r in batched] == [6, 7], batched
        for refused in batched:
            assert refused["error"]["code"] == -32600, refused
            assert "JSON-RPC batch" in refused["error"]["message"], refused
        listed = ask('{"jsonrpc":"2.0","id":5,"method":"tools/list"}')
        assert listed["id"] == 5 and listed["result"]["tools"]  # still serving
        tabs = ask(call.replace("browser_evaluate", "browser_tabs") % (8, '{"action":"list"}'))
        said = tabs["result"]["content"][0]["text"]
        assert "1 open tab" in said and "tab 2" not in said, said  # the batch opened no tab
    finally:
        server.stdin.close()
        assert server.wait(timeout=10) == 0  # the end of stdin still stops it


# -- the handshake answered before the SDK is loaded ------------------------------------------------


def test_the_early_handshake_knows_the_protocol_versions_of_the_sdk() -> None:
    assert HANDSHAKE_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
    assert MODERN_VERSIONS == mcp_types.version.MODERN_PROTOCOL_VERSIONS


async def sdk_answer(server: TabpilotServer, line: bytes) -> dict[str, Any]:
    """What the SDK's own server answers to `line`, as a dict of the JSON it would send."""
    from mcp.shared.message import SessionMessage

    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](1)
    async with anyio.create_task_group() as group:
        group.start_soon(server.run, from_client, to_client, server.create_initialization_options())
        await to_server.send(parse(line))
        answer = await from_server.receive()
        await to_server.aclose()
    return answer.message.model_dump(by_alias=True, exclude_unset=True)


@pytest.mark.parametrize(
    "line",
    [
        *(initialize(v) for v in HANDSHAKE_VERSIONS),
        initialize("1999-01-01"),  # unknown: the SDK offers its latest
        *(discover(v) for v in MODERN_VERSIONS),
    ],
    ids=[*HANDSHAKE_VERSIONS, "unknown", *(f"discover-{v}" for v in MODERN_VERSIONS)],
)
async def test_the_early_handshake_answer_is_the_sdks_own(
    make_server: Callable[..., TabpilotServer], line: bytes
) -> None:
    early = GREETING.answer(line)
    assert early is not None
    assert early[1] == await sdk_answer(make_server(), line)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","method":"initialize","params":{}}',  # a notification: nothing to answer
        b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}',
        discover("2099-01-01"),
        b'{"jsonrpc":"2.0","id":1,"method":"initialize"',
    ],
    ids=[
        "not a handshake",
        "notification",
        "bool id",
        "no client info",
        "no envelope",
        "unknown modern",
        "torn",
    ],
)
def test_anything_but_a_whole_handshake_is_left_to_the_sdk(line: bytes) -> None:
    assert GREETING.answer(line) is None


class Wire:
    """A StdioTransport on two pipes, as a client sees it: lines written to it, answers read."""

    def __init__(self) -> None:
        self.to_server = os.pipe()
        self.to_client = os.pipe()
        self.transport = StdioTransport(GREETING)
        self._reader = asyncio.StreamReader()

    async def open(self) -> None:
        await self.transport.open((self.to_server[0], self.to_client[1]))
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(self._reader), os.fdopen(self.to_client[0], "rb", 0)
        )

    def send(self, line: bytes) -> None:
        os.write(self.to_server[1], line + b"\n")

    async def answer(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self._reader.readline(), 30)
        assert line, "the transport closed stdout"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        os.close(self.to_server[1])


@contextlib.asynccontextmanager
async def wire() -> AsyncIterator[Wire]:
    w = Wire()
    await w.open()
    try:
        yield w
    finally:
        with contextlib.suppress(OSError):
            w.close()


async def test_the_handshake_is_answered_before_the_server_runs_and_only_once(
    make_server: Callable[..., TabpilotServer], caplog: pytest.LogCaptureFixture
) -> None:
    async with wire() as w:
        w.send(initialize("2025-06-18"))
        hello = await w.answer()  # no server yet: the transport answered
        assert hello["id"] == 1 and hello["result"]["protocolVersion"] == "2025-06-18"
        w.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        w.send(
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"browser_tabs","arguments":{"action":"list"}}}'
        )
        serving = asyncio.ensure_future(w.transport.serve(make_server()))
        listed = await w.answer()  # the SDK answered the replayed handshake too, and was not heard
        assert listed["id"] == 2 and "open tab" in listed["result"]["content"][0]["text"], listed
        w.close()
        await asyncio.wait_for(serving, 30)  # the end of stdin ends serving
    assert "differs from the SDK's own" not in caplog.text


async def test_a_request_after_the_first_waits_for_the_server(
    make_server: Callable[..., TabpilotServer],
) -> None:
    """Only the handshake is answered early: a client that skips it is answered by the SDK, in order."""
    async with wire() as w:
        w.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
        early = asyncio.ensure_future(w.answer())
        await asyncio.sleep(0.2)
        assert not early.done()
        serving = asyncio.ensure_future(w.transport.serve(make_server()))
        refused = await early
        assert refused["id"] == 7 and "error" in refused  # not initialized: the SDK's own answer
        w.close()
        await asyncio.wait_for(serving, 30)


def test_serve_reads_requests_from_a_file(browser_path: str, tmp_path: Path) -> None:
    """stdin a regular file (which the event loop cannot watch): read by a thread instead."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        initialize("2025-11-25")
        + b'\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    )
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser_path],
            stdin=stdin,
            capture_output=True,
            timeout=60,
        )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2], done.stderr.decode()
    assert {t["name"] for t in answers[1]["result"]["tools"]} >= {"browser_tabs", "browser_snapshot"}
    assert done.returncode == 0


def test_serve_with_no_input_stops_at_once(browser_path: str) -> None:
    """stdin the null device (which no event loop can wait on): the end of input, a clean stop."""
    done = subprocess.run(
        [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser_path],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == b"", done.stderr.decode()
    assert b"Traceback" not in done.stderr, done.stderr.decode()


def test_serve_keeps_stray_output_off_the_wire() -> None:
    """What the process or a child writes to fd 1 while serving goes to stderr, not into the protocol."""
    script = (
        "import asyncio, os, sys\n"
        "from tabpilot.server.stdio import StdioTransport\n"
        "async def main():\n"
        "    await StdioTransport().open()\n"
        "    print('stray print', flush=True)\n"
        "    os.system('echo stray child')\n"
        "    sys.stdout.flush()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    assert b"stray print" in done.stderr and b"stray child" in done.stderr


def test_handshake_log_names_a_mismatch(caplog: pytest.LogCaptureFixture) -> None:
    """Were the SDK to answer the handshake otherwise than what was sent early, the log says so."""
    transport = StdioTransport()
    transport._answered[1] = {"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}
    with caplog.at_level(logging.WARNING, logger="tabpilot.server"):
        transport._check_early(1, {"jsonrpc": "2.0", "id": 1, "result": {"a": 2}})
    assert "differs from the SDK's own" in caplog.text


def test_a_message_that_cannot_be_written_is_answered_as_an_internal_error() -> None:
    """The last guard: an answer no JSON line can carry is an error answer to its request (a
    notification is dropped), never an exception that ends the server."""
    from mcp.types import JSONRPCNotification, JSONRPCResponse

    from tabpilot.server.stdio import _encoded

    broken = JSONRPCResponse(jsonrpc="2.0", id=7, result={"text": "a\ud800b"})
    answer = json.loads(_encoded(broken))
    assert answer["id"] == 7 and answer["error"]["code"] == -32603, answer
    assert answer["error"]["message"].startswith("tabpilot could not write its answer: ")
    notice = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": "\udc00"})
    assert _encoded(notice) == b""
    fine = JSONRPCResponse(jsonrpc="2.0", id=8, result={"text": "ok"})
    assert json.loads(_encoded(fine))["result"] == {"text": "ok"}
