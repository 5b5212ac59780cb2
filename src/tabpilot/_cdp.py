"""Sessions to page targets through one browser-level CDP session.

A page's own CDP session (`context.new_cdp_session(page)`) can only be opened once Playwright
reports the page, after a popup has started loading: its first request is gone by then. A
browser-level session sees the target the moment Chromium creates it (`Target.targetCreated`),
and `Target.attachToTarget` (not flattened) gives a session to it, whose messages travel inside
the browser session's (`Target.sendMessageToTarget` / `Target.receivedMessageFromTarget`). That is
the route telemetry takes. `attach` returns at once and commands sent before Chromium named the
session go by target id, so the attach and the first commands leave together: the page, which
Playwright holds only while it sets it up, has not started loading when they arrive.

A cross-site iframe runs in a target of its own (site isolation), whose console and network
the page's session never hears of. `TargetSession.attach_children` has the page's session attach
to each such target as it starts (`Target.setAutoAttach`, not flattened): the child's messages
travel inside the page session's, as the page session's travel inside the browser session's.
The page's dedicated workers are attached the same way: their console lines, errors and requests
are the tab's. (A new worker waits for the sessions attached to it, but Chromium lets it run as
soon as one says so, and Playwright's own session says so at once: the worker's script and its
very first requests can be over before its session's commands arrive; `_telemetry._feed` settles
the script's row and counts those requests as dropped.) A cross-site iframe's own cross-site
iframes and workers are attached the same way, through its session (`attach_children` on it):
an iframe's document starts in the target that holds it and ends in its own, so an iframe left
unattached stayed pending for ever. Shared and service workers are no page's children (they
serve many tabs): a shared worker is attached from the browser's session (`TargetSessions.attach`,
by the tab tracker, for the tab that started it).

Messages from a target are handed on as raw JSON text: a consumer can count and drop what it
cannot keep before paying for parsing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

CHILD_TYPES = ("iframe", "worker")
"""The targets a page's session attaches to as they start: cross-site iframes, dedicated workers."""
WORKER_TYPES = ("worker", "shared_worker")
"""The kinds of target sessions that are workers: a page's dedicated ones, and shared ones."""

EventHandler = Callable[[str, str], None]
"""`handler(method, raw_json)` for one event of a target."""

_EVENT_START = '{"method":'


def event_method(raw: str) -> str:
    """The method of a target's raw event message ('' if it has none), read without parsing it:
    Chromium writes the method first (`{"method":"Page.windowOpen",...`), the extension's relay
    the same with a space after the colon. Any other shape is parsed."""
    if raw.startswith(_EVENT_START):
        start = len(_EVENT_START)
        if raw.startswith(' "', start):
            start += 1
        end = raw.find('"', start + 1)
        if raw.startswith('"', start) and end > start:
            return raw[start + 1 : end]
    try:
        message = json.loads(raw)
    except ValueError:
        return ""
    return str(message.get("method", "")) if isinstance(message, dict) else ""


class Session(Protocol):
    """What is needed of a CDP session: `tabpilot._pw.CdpSession` is one."""

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> Callable[[], None]: ...


class CdpCommandError(Exception):
    """A command sent to a target failed (the target's own protocol error)."""


class TargetSession:
    """One page target's session: `send` commands, `on_events` for its events as raw JSON."""

    def __init__(
        self,
        owner: TargetSessions,
        target_id: str,
        *,
        parent: TargetSession | None = None,
        kind: str = "page",
    ) -> None:
        self._owner = owner
        self.session_id: str | None = None
        """Chromium's id of the session, once the attach is answered."""
        self.target_id = target_id
        self.parent = parent
        """The session of the page whose cross-site iframe or worker this target is (None: a page's own)."""
        self.kind = kind
        """The target's type: "page", one of CHILD_TYPES, or "shared_worker"."""
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[str, list[EventHandler]] = {}
        self._on_close: list[Callable[[], None]] = []
        self.closed = False
        self.handler_errors = 0
        self._enabled: dict[str, Awaitable[dict[str, Any]]] = {}

    def on_events(self, methods: Iterable[str], handler: EventHandler) -> Callable[[], None]:
        """Call `handler(method, raw_json)` for each event of the target whose method is one of
        `methods` (the method is read once per event, the rest is not parsed); returns the disposer."""
        methods = tuple(dict.fromkeys(methods))
        for method in methods:
            self._handlers.setdefault(method, []).append(handler)

        def dispose() -> None:
            for method in methods:
                handlers = self._handlers.get(method, [])
                if handler in handlers:
                    handlers.remove(handler)

        return dispose

    def on_close(self, handler: Callable[[], None]) -> None:
        """Call `handler()` once the session is closed: after the last message the target sent."""
        if self.closed:
            handler()
        else:
            self._on_close.append(handler)

    def send(self, method: str, params: dict[str, Any] | None = None) -> Awaitable[dict[str, Any]]:
        """Send a command; the result arrives as the target's answer (await it, or not)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_exception(CdpCommandError(f"{method}: the target's session is closed"))
            future.exception()  # retrieved: a command sent without waiting must not be logged
            return future
        message_id = next(self._ids)
        self._waiting[message_id] = future
        message = json.dumps({"id": message_id, "method": method, "params": params or {}})
        self._owner._forward(self, message, future)
        return future

    def enable(self, domain: str) -> Awaitable[dict[str, Any]]:
        """Send `<domain>.enable` once: every user of the session that needs the domain calls this,
        and a later call gets the first one's answer (a second enable would cross the wire for
        nothing)."""
        enabled = self._enabled.get(domain)
        if enabled is None:
            enabled = self._enabled[domain] = self.send(f"{domain}.enable")
        return enabled

    async def settled(self, timeout: float = 2.0) -> None:
        """Wait (bounded) until every command sent so far is answered."""
        waiting = [f for f in self._waiting.values() if not f.done()]
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)

    def _receive(self, raw: str) -> None:
        if raw.startswith('{"id"') or '"method"' not in raw[:40]:
            message = json.loads(raw)
            future = self._waiting.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(
                        CdpCommandError(str(message["error"].get("message", message["error"])))
                    )
                    future.exception()  # retrieved: a command sent without waiting must not be logged
                else:
                    future.set_result(message.get("result", {}))
            if "method" not in message:
                return
        method = event_method(raw)
        handlers = self._handlers.get(method)
        if not handlers:
            return  # most events: nobody asked for them
        for handler in list(handlers):
            try:
                handler(method, raw)
            except Exception:  # a consumer's bug must not break the browser connection's dispatch
                self.handler_errors += 1

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for handler in self._on_close:
            try:
                handler()
            except Exception:
                self.handler_errors += 1
        self._on_close.clear()
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(CdpCommandError("the target went away"))
                future.exception()  # retrieved: a caller that stopped waiting must not be logged
        self._handlers.clear()

    async def detach(self) -> None:
        await self._owner.detach(self)

    def attach_children(self, on_child: Callable[[TargetSession], None]) -> None:
        """Attach to every cross-site iframe and dedicated worker of this page (or iframe) as it
        starts: `on_child(session)` for each (its `parent` is this session). A child's session
        closes when its iframe or worker goes, and with this one."""
        children = TargetSessions(_Through(self), on_child=on_child)
        self.on_close(children.close)
        # The iframe or worker is held at its start until on_child has sent its commands, or until
        # another session (Playwright's) lets it go first: its console lines come anyway (Runtime
        # replays them), its first requests only if the commands won (see the module docstring).
        self.send(
            "Target.setAutoAttach",
            {
                "autoAttach": True,
                "waitForDebuggerOnStart": True,
                "flatten": False,
                "filter": [{"type": kind} for kind in CHILD_TYPES],
            },
        )


class _Through:
    """A target session seen as the root of its children's sessions (`Session`)."""

    def __init__(self, session: TargetSession) -> None:
        self.session = session

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.session.send(method, params)

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        def parsed(_method: str, raw: str) -> None:
            handler(json.loads(raw).get("params") or {})

        return self.session.on_events((event,), parsed)


class TargetSessions:
    """The target sessions of one browser-level CDP session."""

    def __init__(self, root: Session, *, on_child: Callable[[TargetSession], None] | None = None) -> None:
        self._root = root
        self._on_child = on_child
        """For the sessions of a target's children (`TargetSession.attach_children`)."""
        self._sessions: dict[str, TargetSession] = {}
        self._by_target: dict[str, TargetSession] = {}
        self._disposers = [
            root.on("Target.attachedToTarget", self._on_attached),
            root.on("Target.receivedMessageFromTarget", self._on_message),
            root.on("Target.detachedFromTarget", self._on_detached),
        ]
        self._sending: set[asyncio.Task[Any]] = set()

    def attach(self, target_id: str, *, kind: str = "page") -> TargetSession:
        """A session to the target (of type `kind`), usable at once (the attach completes in the
        background)."""
        session = TargetSession(self, target_id, kind=kind)
        self._by_target[target_id] = session
        attaching = asyncio.ensure_future(
            self._root.send("Target.attachToTarget", {"targetId": target_id, "flatten": False})
        )
        self._sending.add(attaching)

        def attached(done: asyncio.Future[dict[str, Any]]) -> None:
            self._sending.discard(attaching)
            if done.cancelled() or done.exception() is not None:
                self._forget(session)  # the target went away first
            else:
                self._named(session, done.result()["sessionId"])

        attaching.add_done_callback(attached)
        return session

    def _named(self, session: TargetSession, session_id: str) -> None:
        if session.session_id is None and not session.closed:
            session.session_id = session_id
            self._sessions[session_id] = session

    def _forget(self, session: TargetSession) -> None:
        if session.session_id is not None:
            self._sessions.pop(session.session_id, None)
        if self._by_target.get(session.target_id) is session:
            del self._by_target[session.target_id]
        session._close()

    async def detach(self, session: TargetSession) -> None:
        session_id = session.session_id
        self._forget(session)
        if session_id is not None:
            with contextlib.suppress(Exception):
                await self._root.send("Target.detachFromTarget", {"sessionId": session_id})

    def _forward(self, session: TargetSession, message: str, answer: asyncio.Future[dict[str, Any]]) -> None:
        # Before Chromium named the session, the target id finds it (this root has one per target).
        to = {"sessionId": session.session_id} if session.session_id else {"targetId": session.target_id}
        task = asyncio.ensure_future(
            self._root.send("Target.sendMessageToTarget", {**to, "message": message})
        )
        self._sending.add(task)

        def sent(done: asyncio.Task[Any]) -> None:
            self._sending.discard(done)
            if done.cancelled() or done.exception() is None:
                return
            if not answer.done():  # the browser refused to pass it on: the target is gone
                answer.set_exception(CdpCommandError(str(done.exception())))
                answer.exception()

        task.add_done_callback(sent)

    def _on_attached(self, event: dict[str, Any]) -> None:
        # Comes before the attach's answer: from here on the session's messages can be routed.
        info = event.get("targetInfo") or {}
        session = self._by_target.get(info.get("targetId", ""))
        if session is not None and not event.get("waitingForDebugger"):
            self._named(session, event.get("sessionId", ""))
        elif session is None and self._on_child is not None and info.get("type") in CHILD_TYPES:
            self._adopt(info["targetId"], str(event.get("sessionId", "")), info["type"])

    def _adopt(self, target_id: str, session_id: str, kind: str) -> None:
        """A child target the parent session was attached to by Chromium (auto-attach)."""
        assert self._on_child is not None and isinstance(self._root, _Through)
        child = TargetSession(self, target_id, parent=self._root.session, kind=kind)
        self._by_target[target_id] = child
        self._named(child, session_id)
        try:
            self._on_child(child)
        except Exception:
            child.handler_errors += 1
        finally:  # never left waiting
            child.send("Runtime.runIfWaitingForDebugger")

    def _on_message(self, event: dict[str, Any]) -> None:
        session = self._sessions.get(event.get("sessionId", "")) or self._by_target.get(
            event.get("targetId", "")
        )
        if session is not None:
            session._receive(event.get("message", ""))

    def _on_detached(self, event: dict[str, Any]) -> None:
        session = self._sessions.get(event.get("sessionId", ""))
        if session is not None:
            self._forget(session)

    def close(self) -> None:
        for dispose in self._disposers:
            dispose()
        self._disposers = []
        for session in list(self._by_target.values()):
            session._close()
        self._sessions.clear()
        self._by_target.clear()
