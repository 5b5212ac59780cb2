"""`tabpilot demo`: the scripted multi-tab session a newcomer runs, end to end over stdio."""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from tabpilot.demo.story import Session, Transcript


def processes_in_session(sid: int) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == sid:
                    found.append(
                        (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    )
            except OSError:  # gone meanwhile
                pass
    return found


@pytest.mark.timeout(330)  # the demo's own limit is 300 s
@pytest.mark.parametrize("through", [[], ["--extension"]], ids=["launched", "extension"])
def test_the_demo_passes_every_step_and_its_transcript_names_the_tabs_it_saw(
    browser_path: str, through: list[str]
) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "demo", "--browser-path", browser_path, *through],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so whatever it started can be found afterwards
    )
    try:
        transcript, errors = demo.communicate(timeout=320)
    finally:
        demo.kill()
    assert demo.returncode == 0, transcript + errors
    assert re.search(r"^(\d+)/\1 steps passed in [\d.]+ s$", transcript, re.MULTILINE), transcript

    # The id of the tab the click opened comes from the click's response, and later calls use it.
    link = re.search(r"tab (\d+) opened \(link\) by tab (\d+)", transcript)
    assert link, transcript
    new_tab, start_tab = link.groups()
    assert f"It opened tab {new_tab}, which did not become the active tab" in transcript
    assert f"browser_snapshot(tabId={new_tab})" in transcript
    assert f'browser_tabs(action="close", tabId={new_tab})' in transcript

    popup = re.search(rf"tab (\d+) opened \(popup\) by tab {start_tab}", transcript)
    assert popup, transcript
    assert f"popup tab {popup.group(1)} closed itself (tab_closed by page)" in transcript
    assert "Signed in as ada" in transcript

    # Neither the server nor its Chromium outlives the demo (the last of them may still be exiting).
    deadline = time.monotonic() + 10
    while processes_in_session(demo.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_in_session(demo.pid) == []


@pytest.mark.parametrize("read", [1, 6], ids=["before the session", "during a step"])
def test_a_reader_that_leaves_early_stops_the_demo_without_a_traceback(browser_path: str, read: int) -> None:
    # `tabpilot demo | head -n 6` ended in two pages of traceback (BrokenPipeError).
    demo = subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "demo", "--browser-path", browser_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert demo.stdout is not None and demo.stderr is not None
    try:
        lines = [demo.stdout.readline() for _ in range(read)]
        demo.stdout.close()  # as `head` does
        errors = demo.stderr.read().decode()
        demo.wait(timeout=60)
    finally:
        demo.kill()
    assert lines[0].startswith(b"tabpilot demo: local site at"), lines
    assert demo.returncode == 1, errors
    assert errors == ""
    deadline = time.monotonic() + 10
    while processes_in_session(demo.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_in_session(demo.pid) == []


def test_the_demos_server_gets_the_users_environment() -> None:
    # It got the few variables the MCP SDK passes on: a browser named in TABPILOT_BROWSER was
    # ignored (the demo passed with another), and --headed had no DISPLAY.
    demo = subprocess.run(
        [sys.executable, "-m", "tabpilot", "demo"],
        env={**os.environ, "TABPILOT_BROWSER": "/no/such/chrome"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode != 0, demo.stdout
    assert "/no/such/chrome" in demo.stdout + demo.stderr, demo.stdout + demo.stderr
    assert "the server did not start (" in demo.stdout, demo.stdout  # not a task group's words


def test_an_empty_browser_path_is_refused_by_the_demo_as_by_the_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It was taken as not given: the demo ran with the browser it found.
    from tabpilot import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["demo", "--browser-path", ""])
    assert exited.value.code == 2
    assert "tabpilot demo: error: --browser-path: a value is empty" in capsys.readouterr().err


class CannedClient:
    """Answers tool calls with fixed results: enough to drive the step checks without a browser."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        data = self.answers[name]
        return CallToolResult(
            content=[TextContent(type="text", text="### Result\nDone.")], structured_content=data
        )


async def test_a_step_whose_response_lacks_what_it_needs_fails_and_is_named() -> None:
    client = CannedClient(
        {
            "browser_tabs": {"result": {"tabs": [{"id": 1}], "activeTabId": 1}},
            "browser_navigate": {"result": {"tabId": 1}},
            "browser_snapshot": {"result": {"tabId": 1}, "snapshot": '- heading "Home" [level=1] [ref=1e2]'},
        }
    )
    out = io.StringIO()
    site = SimpleNamespace(url=lambda path: "http://127.0.0.1:9" + path)
    session = Session(client, site, Transcript(out), server_log=str)  # type: ignore[arg-type]

    passed = await session.run()

    assert passed == 1
    assert (
        "step 2 failed (Open the start page and find its links): no link 'Open A in new tab'"
        in out.getvalue()
    )
    assert "[3/" not in out.getvalue()  # nothing runs after a failed step


@pytest.mark.parametrize("given", ["busy", "abc", "70000"])
def test_the_local_site_refuses_a_port_it_cannot_use_in_one_line(given: str) -> None:
    # `python -m tabpilot.demo.site PORT` (README, Development) ended in a traceback.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1]) if given == "busy" else given
        site = subprocess.run(
            [sys.executable, "-m", "tabpilot.demo.site", port], capture_output=True, text=True, timeout=60
        )
    assert site.returncode == 2 and site.stdout == "", site
    assert "Traceback" not in site.stderr, site.stderr
    if given == "busy":
        assert site.stderr == (
            f"python -m tabpilot.demo.site: error: cannot listen on 127.0.0.1:{port}: it is in use; give "
            "another PORT, or none for a free one\n"
        )
    else:
        assert (
            f"argument PORT: {given!r} is not a port number (0-65535; 0 or none: a free one)" in site.stderr
        )
