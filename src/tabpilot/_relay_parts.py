"""The records of the CDP relay (`tabpilot._relay`): the extension's link, the tabs it relays, the
clients and their sessions, and where the answer to one command goes."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

JsonDict = dict[str, Any]
WINDOW_OPENS_KEPT = 20


class LinkError(Exception):
    """The extension answered a request with an error, or is not connected."""

    def __init__(self, message: str, code: int = -32000, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


Answer = Callable[[Any, "LinkError | None"], None]
"""Called with (result, None) or (None, error) the moment the extension's answer arrives."""


def ignored(_result: Any, _error: LinkError | None) -> None:
    """An answer nobody waits for."""


class Link(Protocol):
    """The connection to the extension."""

    def request(self, method: str, params: JsonDict, answer: Answer) -> None:
        """Send a request at once (in call order). `answer` is called when its answer arrives, in
        the order of the extension's messages: before the events that came after it, after those
        that came before (CDP clients rely on that order). Raises LinkError if it cannot be sent."""
        ...


@dataclass(eq=False)
class TabRecord:
    """A tab in scope, as the extension describes it."""

    chrome_id: int
    target_id: str
    context_id: str
    window_id: int | None
    pinned: bool
    url: str
    title: str
    opener_chrome_id: int | None
    can_access_opener: bool = False
    shared: bool = True
    """The user's own tab, shared with the agent (not one the agent or its tabs opened)."""
    attached: bool = True
    """False while the extension attaches its debugger (the target is known; Playwright hears of
    it once attached)."""
    sessions: list[Session] = field(default_factory=list)
    contexts: dict[int, JsonDict] = field(default_factory=dict)
    """The execution contexts of its main session, from Runtime events (to replay)."""
    enabled: dict[str, set[str]] = field(default_factory=dict)
    """Domain -> ids of the sessions that enabled it."""
    runtime: Literal["off", "enabling", "on"] = "off"
    """Whether a session's Runtime.enable went to the tab, and was answered."""
    window_opens: deque[tuple[str, bool]] = field(default_factory=lambda: deque(maxlen=WINDOW_OPENS_KEPT))
    """(url, noopener) of the windows this tab's pages opened lately (who may reach their opener)."""
    children: dict[str, ChildRecord] = field(default_factory=dict)
    """Its cross-site iframes and workers that Chromium attached to the tab's attachment, by the
    session id Chromium gave each."""


@dataclass(eq=False)
class ChildRecord:
    """A child target of a tab (a cross-site iframe, a worker), auto-attached to the tab's one
    attachment under a session id of its own. Flat clients (Playwright's) talk to that session
    directly (`Client.children`); a tab session that is not flat and auto-attaches (tabpilot's
    telemetry) hears of it, and talks to it, wrapped in its own messages."""

    session_id: str
    target_info: JsonDict
    waiting: bool
    """Paused at its start until every client told so lets it run (as Chromium does)."""
    sessions: list[Session] = field(default_factory=list)
    """The tab sessions, not flat, that were told of it."""
    held: set[Client | Session] = field(default_factory=set)
    """Who was told it waits and has not let it run yet: a flat client, or a session."""
    parent: ChildRecord | None = None
    """The child it is a child of (a cross-site iframe's own), None for the tab's own."""
    watchers: dict[Session, frozenset[str]] = field(default_factory=dict)
    """Sessions, not flat, that auto-attach to its own children, with the types they asked for
    (none: every type)."""

    def wrapped(self, message: JsonDict) -> JsonDict:
        """A message of this child as an event of a session that is not flat (inside its parent's
        messages, for a child's child)."""
        event = {
            "method": "Target.receivedMessageFromTarget",
            "params": {
                "sessionId": self.session_id,
                "message": json.dumps(message),
                "targetId": self.target_info.get("targetId", ""),
            },
        }
        return event if self.parent is None else self.parent.wrapped(event)


@dataclass(eq=False)
class Session:
    """A client's session: to a tab, or (`tab` None) to the browser."""

    id: str
    client: Client
    tab: TabRecord | None
    parent: Session | None
    """The browser session it was attached through (None: the client's root)."""
    flat: bool = True
    auto_attach: bool = False
    child_types: frozenset[str] = frozenset()
    """For a session that is not flat and auto-attaches: the child target types it asked for
    (empty: every type)."""
    discover: bool = False
    download_events: bool = False
    """A browser session that asked for the events of downloads (Browser.setDownloadBehavior)."""
    bindings: set[str] = field(default_factory=set)
    """Names it added with Runtime.addBinding: only it hears of their calls, as in Chromium."""


class Client:
    """One CDP client connection (Playwright's), with the sessions it opened."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self.send_text = send
        self.auto_attach = False
        self.discover = False
        self.download_events = False
        """It asked for the events of downloads (Browser.setDownloadBehavior)."""
        self.sessions: dict[str, Session] = {}
        self.children: dict[str, TabRecord] = {}
        """Chromium's child sessions (iframes, workers) this client heard of, with their tab."""

    def send(self, message: JsonDict) -> None:
        self.send_text(json.dumps(message))


def error_body(code: int, message: str) -> JsonDict:
    return {"code": code, "message": message}


def send_to(session: Session, message: JsonDict) -> None:
    """A message (answer or event) to a session: in place for a flat one, wrapped in its
    browser session's `Target.receivedMessageFromTarget` for one that is not."""
    if session.flat:
        session.client.send({**message, "sessionId": session.id})
        return
    assert session.parent is not None and session.tab is not None
    session.client.send(
        {
            "method": "Target.receivedMessageFromTarget",
            "params": {
                "sessionId": session.id,
                "message": json.dumps(message),
                "targetId": session.tab.target_id,
            },
            "sessionId": session.parent.id,
        }
    )


class Reply:
    """Where the answer to one command goes: a client's root, a browser session, a tab session
    (flat or not) or a child session."""

    def __init__(
        self,
        client: Client,
        command_id: Any,
        *,
        via: Session | None = None,
        session: Session | None = None,
        session_id: str | None = None,
    ) -> None:
        self.client = client
        self.command_id = command_id
        self._via = via
        self._session = session
        self._session_id = session_id

    def settle(self, result: Any, error: LinkError | None) -> None:
        """The extension's answer (an `Answer`)."""
        if error is not None:
            self.error(error.code, str(error), error.data)
        else:
            self.result(result)

    def result(self, result: Any) -> None:
        self._deliver({"id": self.command_id, "result": result if result is not None else {}})

    def error(self, code: int, message: str, data: Any = None) -> None:
        error = error_body(code, message)
        if data is not None:
            error["data"] = data
        self._deliver({"id": self.command_id, "error": error})

    def _deliver(self, message: JsonDict) -> None:
        if self._session is not None:
            if self._session.id in self._session.client.sessions:  # not detached meanwhile
                send_to(self._session, message)
            return
        session_id = self._session_id or (self._via.id if self._via is not None else None)
        if session_id is not None:
            message["sessionId"] = session_id
        self.client.send(message)


@dataclass(frozen=True, slots=True)
class Command:
    """A browser-level command as its handler gets it: the client, the session it came on (None:
    the client's root), its parameters, and where its answer goes."""

    client: Client
    session: Session | None
    params: JsonDict
    reply: Reply


def window_of(tab: TabRecord) -> JsonDict:
    return {"windowId": tab.window_id, "bounds": {"windowState": "normal"}}


def may_reach_opener(opener: TabRecord, record: JsonDict) -> bool:
    """Whether a tab opened by `opener` keeps a handle on it (window.open) or not (a noopener
    link), from the `Page.windowOpen` the opener reported for its URL."""
    url = str(record.get("url") or "")
    for index, (opened, noopener) in enumerate(reversed(opener.window_opens)):
        if opened == url or not url:
            del opener.window_opens[len(opener.window_opens) - 1 - index]
            return not noopener
    return False


def browser_info(target_id: str) -> JsonDict:
    """The target info of the browser itself."""
    return {
        "targetId": target_id,
        "type": "browser",
        "title": "",
        "url": "",
        "attached": True,
        "canAccessOpener": False,
    }


def browser_version(user_agent: str) -> JsonDict:
    """`Browser.getVersion` of the browser with this user agent (Playwright reads its version and
    whether it is headless from it)."""
    version = next((p for p in user_agent.split() if p.startswith(("Chrome/", "HeadlessChrome/"))), "")
    return {
        "protocolVersion": "1.3",
        "product": version.replace("HeadlessChrome/", "Chrome/") or "Chrome",
        "revision": "",
        "userAgent": user_agent,
        "jsVersion": "",
    }


def renew_contexts(tab: TabRecord) -> None:
    """A tab kept across a reconnect: the answers to the commands it had under way were lost
    (they failed), and a CDP client may have cached such a failure for an execution context
    (Playwright keeps the failed set-up of its helper script: every later call in that
    context would fail or wait). Each context is announced again, destroyed then created
    with the same id (the page's objects stay valid), so the clients start it afresh."""
    sessions = [s for s in tab.sessions if s.id in tab.enabled.get("Runtime", ())]
    for context in list(tab.contexts.values()):
        gone = {
            "executionContextId": context.get("id"),
            "executionContextUniqueId": context.get("uniqueId"),
        }
        for session in sessions:
            send_to(session, {"method": "Runtime.executionContextDestroyed", "params": gone})
            send_to(session, {"method": "Runtime.executionContextCreated", "params": {"context": context}})
