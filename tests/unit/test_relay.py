"""The extension's CDP relay handing a tab's iframes and workers to two kinds of client at once:
Playwright's flat page session and tabpilot's telemetry session, which is not flat (pure logic:
a fake extension link that answers every request at once). The same with a real Chromium and the
shipped extension is in tests/browser/test_extension.py."""

from __future__ import annotations

import json
from typing import Any

from tabpilot._relay import Relay
from tabpilot._relay_parts import Answer, Client, LinkError

TAB = {
    "tabId": 7,
    "targetId": "T7",
    "browserContextId": "CTX",
    "windowId": 1,
    "pinned": False,
    "url": "http://127.0.0.1/host",
    "title": "Host",
}
AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True}


class FakeLink:
    """The extension: records each request and answers it with {} at once."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def request(self, method: str, params: dict[str, Any], answer: Answer) -> None:
        self.requests.append((method, params))
        answer({}, None)

    def resumed(self) -> list[str]:
        """The child sessions the relay let run."""
        return [
            p.get("sessionId", "")
            for m, p in self.requests
            if m == "cdp" and p["method"] == "Runtime.runIfWaitingForDebugger"
        ]


class Seen:
    """A client's connection: what the relay sent it, parsed, and wrapped messages unwrapped."""

    def __init__(self, relay: Relay) -> None:
        self.messages: list[dict[str, Any]] = []
        self.client: Client = relay.add_client(lambda text: self.messages.append(json.loads(text)))
        self.relay = relay
        self._ids = iter(range(1, 1000))

    def command(self, method: str, params: dict[str, Any], session: str | None = None) -> int:
        command_id = next(self._ids)
        message: dict[str, Any] = {"id": command_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self.relay.client_message(self.client, json.dumps(message))
        return command_id

    def result(self, command_id: int) -> dict[str, Any]:
        (answer,) = [m for m in self.messages if m.get("id") == command_id]
        return dict(answer["result"])

    def inside(self, outer: str, *sessions: str) -> list[dict[str, Any]]:
        """The messages of the last of `sessions`, each wrapped in events of the one before it
        (sessions that are not flat), the first in events of the flat session `outer`."""
        messages = [m for m in self.messages if m.get("sessionId") == outer]
        for session in sessions:
            messages = [
                json.loads(m["params"]["message"])
                for m in messages
                if m.get("method") == "Target.receivedMessageFromTarget"
                and m["params"]["sessionId"] == session
            ]
        return messages


def relay_with_tab() -> tuple[Relay, FakeLink]:
    """A relay whose extension has one tab in scope (TAB)."""
    link = FakeLink()
    relay = Relay(link)
    relay.hello([TAB], user_agent="Mozilla/5.0 HeadlessChrome/156.0.0.0")
    return relay, link


def playwright_page(seen: Seen) -> str:
    """Playwright's part: auto-attach at the root, then on the flat page session it got (its id)."""
    seen.command("Target.setAutoAttach", {**AUTO_ATTACH, "flatten": True})
    (page,) = [
        str(m["params"]["sessionId"]) for m in seen.messages if m.get("method") == "Target.attachedToTarget"
    ]
    seen.command("Target.setAutoAttach", {**AUTO_ATTACH, "flatten": True}, session=page)
    return page


def telemetry_page(seen: Seen, auto_attach: dict[str, Any]) -> tuple[str, str]:
    """tabpilot's part: a browser session, a page session through it that is not flat, and that
    session's `Target.setAutoAttach` with `auto_attach`; (browser session, page session)."""
    browser = seen.result(seen.command("Target.attachToBrowserTarget", {}))["sessionId"]
    telemetry = seen.result(
        seen.command("Target.attachToTarget", {"targetId": "T7", "flatten": False}, session=browser)
    )["sessionId"]
    ask = {"id": 1, "method": "Target.setAutoAttach", "params": auto_attach}
    seen.command(
        "Target.sendMessageToTarget", {"sessionId": telemetry, "message": json.dumps(ask)}, session=browser
    )
    return browser, telemetry


def setup() -> tuple[Relay, FakeLink, Seen, str, str, str]:
    """Playwright's flat page session (auto-attaching) and, through a browser session, tabpilot's
    page session that is not flat and auto-attaches to iframes and workers."""
    relay, link = relay_with_tab()
    seen = Seen(relay)
    page = playwright_page(seen)
    kinds = [{"type": "iframe"}, {"type": "worker"}]
    browser, telemetry = telemetry_page(seen, {**AUTO_ATTACH, "flatten": False, "filter": kinds})
    return relay, link, seen, page, browser, telemetry


def child_starts(relay: Relay, session_id: str, kind: str = "iframe") -> None:
    params = {
        "sessionId": session_id,
        "targetInfo": {"targetId": f"target-{session_id}", "type": kind, "url": "http://localhost/mid"},
        "waitingForDebugger": True,
    }
    relay.debugger_event(7, None, "Target.attachedToTarget", params)


def to_child(seen: Seen, browser: str, telemetry: str, child: str, command_id: int, method: str) -> None:
    """A command of tabpilot's child session: inside the page session's, inside the browser's."""
    inner = {"id": command_id, "method": method, "params": {}}
    outer = {
        "id": 100 + command_id,
        "method": "Target.sendMessageToTarget",
        "params": {"sessionId": child, "message": json.dumps(inner)},
    }
    seen.command(
        "Target.sendMessageToTarget", {"sessionId": telemetry, "message": json.dumps(outer)}, session=browser
    )


def test_a_child_runs_only_once_both_clients_told_it_waits_let_it() -> None:
    relay, link, seen, page, browser, telemetry = setup()
    # Only Playwright's auto-attach reached the extension: tabpilot's is served by the relay.
    assert [p["method"] for m, p in link.requests if m == "cdp"] == ["Target.setAutoAttach"]
    child_starts(relay, "C1")

    # Playwright hears of the iframe on its flat session, tabpilot inside its own session's messages.
    flat = [
        m
        for m in seen.messages
        if m.get("sessionId") == page and m.get("method") == "Target.attachedToTarget"
    ]
    assert [m["params"]["sessionId"] for m in flat] == ["C1"]
    (told,) = [m for m in seen.inside(browser, telemetry) if m.get("method") == "Target.attachedToTarget"]
    assert told["params"]["sessionId"] == "C1" and told["params"]["waitingForDebugger"] is True

    # Playwright lets it run first: answered, but it waits for tabpilot's set-up.
    answered = seen.command("Runtime.runIfWaitingForDebugger", {}, session="C1")
    assert seen.result(answered) == {} and link.resumed() == []
    to_child(seen, browser, telemetry, "C1", 1, "Network.enable")
    to_child(seen, browser, telemetry, "C1", 2, "Runtime.runIfWaitingForDebugger")
    assert link.resumed() == ["C1"]
    # tabpilot's commands went to the child's session; their answers come back to tabpilot wrapped.
    assert ("cdp", {"tabId": 7, "method": "Network.enable", "params": {}, "sessionId": "C1"}) in link.requests
    answers = [m for m in seen.inside(browser, telemetry, "C1") if "id" in m]
    assert answers == [{"id": 1, "result": {}}, {"id": 2, "result": {}}]


def test_a_childs_events_reach_both_clients_and_its_end_reaches_both() -> None:
    relay, _, seen, _, browser, telemetry = setup()
    child_starts(relay, "C1", kind="worker")
    relay.debugger_event(7, "C1", "Runtime.consoleAPICalled", {"type": "log", "args": []})
    flat = [m for m in seen.messages if m.get("sessionId") == "C1"]
    assert [m["method"] for m in flat] == ["Runtime.consoleAPICalled"]
    assert [m["method"] for m in seen.inside(browser, telemetry, "C1")] == ["Runtime.consoleAPICalled"]

    relay.debugger_event(7, None, "Target.detachedFromTarget", {"sessionId": "C1"})
    gone = [m for m in seen.inside(browser, telemetry) if m.get("method") == "Target.detachedFromTarget"]
    assert [m["params"] for m in gone] == [{"sessionId": "C1", "targetId": "target-C1"}]
    # Later commands of tabpilot's to it are refused, as Chromium refuses them.
    to_child(seen, browser, telemetry, "C1", 3, "Network.enable")
    refused = [m for m in seen.inside(browser, telemetry) if m.get("id") == 103]
    assert refused and refused[0]["error"]["message"] == "No session with given id"


def test_a_child_of_a_type_tabpilot_did_not_ask_for_is_playwrights_alone() -> None:
    relay, link, seen, _, browser, telemetry = setup()
    child_starts(relay, "SW", kind="service_worker")
    assert not [m for m in seen.inside(browser, telemetry) if m.get("method") == "Target.attachedToTarget"]
    seen.command("Runtime.runIfWaitingForDebugger", {}, session="SW")
    assert link.resumed() == ["SW"]


def test_a_child_waiting_for_a_session_that_goes_runs_at_once() -> None:
    relay, link, seen, _, browser, telemetry = setup()
    child_starts(relay, "C2")
    seen.command("Runtime.runIfWaitingForDebugger", {}, session="C2")
    assert link.resumed() == []
    seen.command("Target.detachFromTarget", {"sessionId": telemetry}, session=browser)
    assert link.resumed() == ["C2"]


def test_children_there_already_are_announced_to_a_session_that_asks_later() -> None:
    relay, link = relay_with_tab()
    seen = Seen(relay)
    playwright_page(seen)
    child_starts(relay, "C3")
    seen.command("Runtime.runIfWaitingForDebugger", {}, session="C3")
    assert link.resumed() == ["C3"]

    browser, telemetry = telemetry_page(seen, {**AUTO_ATTACH, "flatten": False})
    (told,) = [m for m in seen.inside(browser, telemetry) if m.get("method") == "Target.attachedToTarget"]
    assert told["params"]["sessionId"] == "C3" and told["params"]["waitingForDebugger"] is False
    # Already running: its let-run is answered without reaching the extension again.
    to_child(seen, browser, telemetry, "C3", 2, "Runtime.runIfWaitingForDebugger")
    assert link.resumed() == ["C3"]


def test_a_download_of_a_tab_reaches_the_clients_that_asked_for_download_events() -> None:
    relay, link = relay_with_tab()
    asking, silent = Seen(relay), Seen(relay)
    asking.command("Browser.setDownloadBehavior", {"behavior": "allowAndName", "eventsEnabled": True})
    silent.command("Browser.setDownloadBehavior", {"behavior": "allowAndName"})
    # The user's downloads stay where Chrome puts them: nothing goes to the extension.
    assert link.requests == []
    began = {"frameId": "T7", "guid": "g1", "url": "http://127.0.0.1/f.txt", "suggestedFilename": "f.txt"}
    relay.debugger_event(7, None, "Page.downloadWillBegin", began)
    relay.debugger_event(7, None, "Page.downloadProgress", {"guid": "g1", "state": "completed"})
    told = [m for m in asking.messages if m.get("method", "").startswith("Browser.download")]
    assert told == [
        {"method": "Browser.downloadWillBegin", "params": began},
        {"method": "Browser.downloadProgress", "params": {"guid": "g1", "state": "completed"}},
    ]
    assert not [m for m in silent.messages if m.get("method", "").startswith("Browser.download")]


class ClosingLink(FakeLink):
    """The extension, for a tab its user has just closed: Chrome's debugger (or the extension,
    for a tab it let go of) refuses every command to it."""

    def __init__(self, refusal: str) -> None:
        super().__init__()
        self.refusal = refusal

    def request(self, method: str, params: dict[str, Any], answer: Answer) -> None:
        self.requests.append((method, params))
        if method == "cdp":
            answer(None, LinkError(self.refusal))
        else:
            answer({}, None)


def test_a_command_to_a_tab_that_closed_meanwhile_fails_as_a_closed_target() -> None:
    refusals = [
        "No tab with given id 7.",
        "Debugger is not attached to the tab with id: 7.",
        "Detached while handling command.",
        "tab 7 is not shared with tabpilot",
    ]
    for refusal in refusals:
        link = ClosingLink(refusal)
        relay = Relay(link)
        relay.hello([TAB], user_agent="Mozilla/5.0 HeadlessChrome/156.0.0.0")
        seen = Seen(relay)
        page = playwright_page(seen)
        asked = seen.command("Page.getLayoutMetrics", {}, session=page)
        (answer,) = [m for m in seen.messages if m.get("id") == asked]
        # Playwright (and tabpilot's error words) know a closed target by these words.
        assert answer["error"]["message"] == f"Target closed ({refusal})", answer
    # Any other refusal is passed on as it is.
    link = ClosingLink("Cannot navigate to invalid URL")
    relay = Relay(link)
    relay.hello([TAB], user_agent="Mozilla/5.0 HeadlessChrome/156.0.0.0")
    seen = Seen(relay)
    page = playwright_page(seen)
    asked = seen.command("Page.navigate", {"url": "x"}, session=page)
    (answer,) = [m for m in seen.messages if m.get("id") == asked]
    assert answer["error"]["message"] == "Cannot navigate to invalid URL"
