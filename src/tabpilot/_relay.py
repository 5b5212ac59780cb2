"""A browser's CDP endpoint, made of the tabs the tabpilot extension relays through `chrome.debugger`.

The extension holds one `chrome.debugger` attachment per tab in scope; a CDP client (Playwright's
`connect_over_cdp`, and the browser-level sessions tabpilot opens through it) expects a whole
browser: Target and Browser domains, auto-attach, any number of sessions per target, flat or not.
`Relay` plays that browser, with the tabs in scope as its page targets:

- Target and Browser commands are answered here from the tab records the extension sends
  (`Target.getTargets`, `attachToTarget`, `getTargetInfo`, `Browser.getVersion`,
  `getWindowForTarget`, ...); creating and closing targets becomes a request to the extension.
- Each session a client opens to a tab is a relay session; their commands go to the tab's one
  attachment and the answers come back to the session that asked. Events of the tab reach every
  session of it (a binding's calls only the sessions that added it). So that one session cannot
  undo another's work, a domain disabled by one session stays enabled while another uses it, and
  a second `Runtime.enable` (which Chromium answers without reporting the execution contexts
  again) gets them replayed from the ones seen.
- Child sessions (iframes, workers auto-attached on a tab's session) keep Chromium's own ids.
  Chrome's debugger attaches to them flat only, for Playwright's page session; a tab session that
  is not flat and auto-attaches (tabpilot's telemetry) is handed each child too, wrapped in its
  own messages, and a child's own children (a cross-site iframe's) wrapped in the child's. A child
  paused at its start runs once every client told so has let it run.
- Answers reach the clients the moment the extension's message is read, in order with its events:
  CDP clients rely on that order (an answer overtaken by the events after it loses state).
- A tab a page opens is announced by its target as soon as the extension knows it (the action
  that opened it hears of it), and to Playwright once the extension's debugger is attached.
- When the extension comes back (its service worker restarted), a tab it kept has its execution
  contexts announced again: commands under way at the drop failed, and a client that cached such
  a failure for a context (Playwright does) starts that context afresh.
- Playwright's defaults that would change how the user's tab looks (fonts, color scheme, reduced
  motion) are answered without being applied: the user's own settings stay. So is where
  downloads go; a download is told to the clients that asked for download events, as Chromium
  tells its browser sessions (Chrome's debugger reports it to the tab only).

The relay knows nothing of the transport: a client is a `Client` (a `send(text)` function), the
extension a `Link`.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Callable, Sequence
from typing import Any

from ._relay_parts import (
    Answer,
    ChildRecord,
    Client,
    Command,
    JsonDict,
    Link,
    LinkError,
    Reply,
    Session,
    TabRecord,
    browser_info,
    browser_version,
    error_body,
    ignored,
    may_reach_opener,
    renew_contexts,
    send_to,
    window_of,
)

NOT_APPLIED = frozenset({"Page.setFontFamilies", "Emulation.setEmulatedMedia"})
"""Commands answered without being applied: they would change the look of the user's tab."""
USER_TOOK_BACK = ("unshared", "canceled")
"""The extension's reasons for a tab leaving scope that mean the user took it back from the agent."""
CLOSED_BY_USER = ("windowClosed", "userClosed")
"""The extension's reasons for a tab the user closed: as its window closed (a page closes its tab,
never its window), or in the browser's tab strip (its X, Ctrl-W: the browser hid its page before it
went; a page that closes itself is gone before it could say so)."""
OUT_OF_REACH = "detached"
"""The extension's reason for a tab that went where its debugger may not follow (a chrome:// page):
still open in the user's browser."""
CHILD_CAME_OR_WENT = ("Target.attachedToTarget", "Target.detachedFromTarget")
"""The events of a session that announce a child of its target, or its end."""
ANSWERED_HERE = frozenset({"Runtime.runIfWaitingForDebugger"})
"""Page commands with nothing to do (a tab in scope is never paused waiting for a debugger)."""


class Relay:
    """The browser the CDP clients see; see the module docstring."""

    def __init__(self, link: Link) -> None:
        self._link = link
        self._tabs: dict[int, TabRecord] = {}
        self._context_id = ""
        """The browser context the clients know the tabs by: the first the extension reported (the
        profile's own), kept when the user's Chrome restarts behind the relay with a new id for it."""
        self._by_target: dict[str, TabRecord] = {}
        self._clients: list[Client] = []
        self._session_ids = itertools.count(1)
        self._session_prefix = "TP" + secrets.token_hex(6).upper()
        self.browser_target_id = "tabpilot-" + secrets.token_hex(8)
        self.user_agent = ""

    # -- clients -----------------------------------------------------------------------------------

    def add_client(self, send: Callable[[str], None]) -> Client:
        client = Client(send)
        self._clients.append(client)
        return client

    def remove_client(self, client: Client) -> None:
        if client in self._clients:
            self._clients.remove(client)
        for session in client.sessions.values():
            if session.tab is not None and session in session.tab.sessions:
                session.tab.sessions.remove(session)
                self._forget_enables(session)
                self._let_go(session, [session.tab])
        client.sessions.clear()
        self._let_go(client, self.tabs)

    @property
    def tabs(self) -> list[TabRecord]:
        return list(self._tabs.values())

    def by_target(self, target_id: str) -> TabRecord | None:
        return self._by_target.get(target_id)

    # -- what the extension reports --------------------------------------------------------------

    def hello(self, records: list[JsonDict], *, user_agent: str, left: Sequence[JsonDict] = ()) -> None:
        """The extension (re)connected with these tabs in scope: tabs it still has keep their
        targets and sessions; a tab attached afresh (its debugger let go meanwhile, so the
        sessions' state is gone) is reported closed and new; tabs it no longer has are gone, as
        `left` says why (taken back by the user, out of reach: still open), else closed."""
        self.user_agent = user_agent
        listed = {int(record["tabId"]) for record in records}
        for gone in left:
            chrome_id = int(gone.get("tabId", 0))
            if chrome_id not in listed:
                self.tab_removed(chrome_id, reason=str(gone.get("reason", "")))
        seen = set()
        for record in records:
            chrome_id = int(record["tabId"])
            seen.add(chrome_id)
            known = self._tabs.get(chrome_id)
            if known is not None and (known.target_id != record["targetId"] or record.get("fresh")):
                self.tab_removed(chrome_id)
                known = None
            self.tab_reported(record)
            if known is not None:
                renew_contexts(known)
        for chrome_id in [c for c in self._tabs if c not in seen]:
            self.tab_removed(chrome_id)

    def tab_reported(self, record: JsonDict, *, attached: bool = True) -> TabRecord:
        """A tab entered scope (or changed): a new one is announced to the clients as Chromium
        would, its target at once, and to Playwright (auto-attach) once `attached`."""
        tab = self._tabs.get(int(record["tabId"]))
        if tab is None:
            tab = self._new_tab(record)
        else:
            self.tab_updated(record)
            tab.context_id = str(record.get("browserContextId") or tab.context_id)
        if attached and not tab.attached:
            tab.attached = True
            for client in list(self._clients):
                if client.auto_attach:
                    self._attach(client, tab, parent=None, flat=True)
        return tab

    def _new_tab(self, record: JsonDict) -> TabRecord:
        opener = record.get("openerTabId")
        opener_tab = self._tabs.get(int(opener)) if opener is not None else None
        # A tab announced before its attach has no context id yet: its opener's, or the profile's.
        context = record.get("browserContextId") or (
            opener_tab.context_id if opener_tab else self._context_id
        )
        tab = TabRecord(
            chrome_id=int(record["tabId"]),
            target_id=str(record["targetId"]),
            context_id=str(context or ""),
            window_id=record.get("windowId"),
            pinned=bool(record.get("pinned")),
            url=str(record.get("url") or ""),
            title=str(record.get("title") or ""),
            opener_chrome_id=opener_tab.chrome_id if opener_tab is not None else None,
            can_access_opener=opener_tab is not None and may_reach_opener(opener_tab, record),
            shared=bool(record.get("shared", True)),
            attached=False,
        )
        self._context_id = self._context_id or tab.context_id
        self._tabs[tab.chrome_id] = tab
        self._by_target[tab.target_id] = tab
        self._to_discoverers(
            {"method": "Target.targetCreated", "params": {"targetInfo": self.target_info(tab)}}
        )
        return tab

    def tab_updated(self, record: JsonDict) -> None:
        tab = self._tabs.get(int(record["tabId"]))
        if tab is None:
            return
        before = (tab.url, tab.title, tab.pinned, tab.window_id)
        tab.url = str(record.get("url", tab.url) or "")
        tab.title = str(record.get("title", tab.title) or "")
        tab.pinned = bool(record.get("pinned", tab.pinned))
        tab.window_id = record.get("windowId", tab.window_id)
        if (tab.url, tab.title, tab.pinned, tab.window_id) != before:
            info = self.target_info(tab)
            self._to_discoverers({"method": "Target.targetInfoChanged", "params": {"targetInfo": info}})

    def tab_removed(self, chrome_id: int, *, reason: str | None = None) -> None:
        """A tab left scope (closed, unshared, or the extension let go of it): its target is gone.
        A tab the user took back (stopped sharing it, or dismissed Chrome's debugging bar) says so
        to the clients (`leftScope`: not CDP's own), as it is still open in their browser; one the
        user closed says that (`closedByUser`): its page did not close it."""
        tab = self._tabs.pop(chrome_id, None)
        if tab is None:
            return
        self._by_target.pop(tab.target_id, None)
        tab.children.clear()  # they went with it
        for session in list(tab.sessions):
            self._detached(session)
        for client in self._clients:
            for child in [c for c, owner in client.children.items() if owner is tab]:
                del client.children[child]
        gone: JsonDict = {"targetId": tab.target_id}
        if reason in USER_TOOK_BACK:
            gone["leftScope"] = "unshared"
        elif reason == OUT_OF_REACH:
            gone["leftScope"] = "privileged"
        elif reason in CLOSED_BY_USER:
            gone["closedByUser"] = True
        self._to_discoverers({"method": "Target.targetDestroyed", "params": gone})

    def clear(self) -> None:
        """The extension is gone for good: every tab with it."""
        for chrome_id in list(self._tabs):
            self.tab_removed(chrome_id)

    def debugger_event(self, chrome_id: int, child: str | None, method: str, params: JsonDict) -> None:
        """An event of a tab's attachment (`child`: of a child session of it)."""
        tab = self._tabs.get(chrome_id)
        if tab is None:
            return
        if child is not None:
            self._child_event(tab, child, method, params)
            return
        if method in CHILD_CAME_OR_WENT:
            self._child_came_or_went(tab, method, params)
            return
        if method == "Runtime.executionContextCreated":
            context = params.get("context") or {}
            tab.contexts[int(context.get("id", 0))] = context
        elif method == "Runtime.executionContextDestroyed":
            tab.contexts.pop(int(params.get("executionContextId", 0)), None)
        elif method == "Runtime.executionContextsCleared":
            tab.contexts.clear()
        elif method == "Page.windowOpen":
            tab.window_opens.append(
                (str(params.get("url", "")), "noopener" in params.get("windowFeatures", ()))
            )
        elif method in ("Page.downloadWillBegin", "Page.downloadProgress"):
            self._download_event("Browser." + method.partition(".")[2], params)
        event = {"method": method, "params": params}
        binding = params.get("name") if method == "Runtime.bindingCalled" else None
        for session in list(tab.sessions):
            if binding is None or binding in session.bindings:
                send_to(session, event)

    def _child_came_or_went(self, tab: TabRecord, method: str, params: JsonDict) -> None:
        """A child target of the tab was attached or detached: the flat sessions that auto-attach
        (Playwright's page session) hear of it as it is, those that are not flat (tabpilot's
        telemetry) if they asked for its type."""
        child_id = str(params.get("sessionId", ""))
        attached = method == "Target.attachedToTarget"
        child: ChildRecord | None
        if attached:
            waiting = bool(params.get("waitingForDebugger"))
            child = tab.children[child_id] = ChildRecord(
                child_id, dict(params.get("targetInfo") or {}), waiting
            )
        else:
            child = tab.children.get(child_id)
        for session in tab.sessions:
            if session.flat and session.auto_attach:
                self._note_child(session.client, tab, method, params)
                send_to(session, {"method": method, "params": params})
                if attached and child is not None and child.waiting:
                    child.held.add(session.client)
            elif attached and child is not None and self._wants(session, child):
                self._tell_child(session, child)
        if not attached:
            self._child_gone(tab, child, method)

    @staticmethod
    def _wants(session: Session, child: ChildRecord) -> bool:
        return (
            not session.flat
            and session.auto_attach
            and (not session.child_types or child.target_info.get("type") in session.child_types)
        )

    @staticmethod
    def _tell_child(session: Session, child: ChildRecord) -> None:
        child.sessions.append(session)
        if child.waiting:
            child.held.add(session)
        params = {
            "sessionId": child.session_id,
            "targetInfo": child.target_info,
            "waitingForDebugger": child.waiting,
        }
        event = {"method": "Target.attachedToTarget", "params": params}
        send_to(session, event if child.parent is None else child.parent.wrapped(event))

    def _child_event(self, tab: TabRecord, child: str, method: str, params: JsonDict) -> None:
        event = {"method": method, "params": params}
        record = tab.children.get(child)
        told: list[Client] = []
        for client in self._clients:
            if client.children.get(child) is tab:
                if method in CHILD_CAME_OR_WENT:
                    self._note_child(client, tab, method, params)
                    told.append(client)
                client.send({**event, "sessionId": child})
        if record is not None and method in CHILD_CAME_OR_WENT:
            self._inner_child_came_or_went(tab, record, method, params, told)
        elif record is not None:
            for session in record.sessions:
                send_to(session, record.wrapped(event))

    def _inner_child_came_or_went(
        self, tab: TabRecord, parent: ChildRecord, method: str, params: JsonDict, told: list[Client]
    ) -> None:
        """A child of a child (a cross-site iframe's own cross-site iframe) was attached, for the
        flat clients that auto-attach to its parent (`told`), or detached: the sessions that are
        not flat and auto-attach to the parent's children hear of it too."""
        child_id = str(params.get("sessionId", ""))
        if method == "Target.attachedToTarget":
            waiting = bool(params.get("waitingForDebugger"))
            child = tab.children[child_id] = ChildRecord(
                child_id, dict(params.get("targetInfo") or {}), waiting, parent=parent
            )
            if waiting:
                child.held.update(told)
            for session in list(parent.watchers):
                if self._wants_inner(session, parent, child):
                    self._tell_child(session, child)
            return
        self._child_gone(tab, tab.children.get(child_id), method)

    def _child_gone(self, tab: TabRecord, child: ChildRecord | None, method: str) -> None:
        """`child` (and its own children with it) was detached: the sessions that are not flat
        and were told of it hear so (the flat clients heard Chrome's own event)."""
        if child is None or tab.children.get(child.session_id) is not child:
            return
        del tab.children[child.session_id]
        for inner in [c for c in tab.children.values() if c.parent is child]:
            self._child_gone(tab, inner, method)
        gone = {
            "method": method,
            "params": {"sessionId": child.session_id, "targetId": child.target_info.get("targetId", "")},
        }
        for session in child.sessions:
            send_to(session, gone if child.parent is None else child.parent.wrapped(gone))
        child.sessions.clear()

    def _let_run(self, tab: TabRecord, child: ChildRecord, by: Client | Session, answer: Answer) -> None:
        """`Runtime.runIfWaitingForDebugger` on a child from `by`: the child runs once everyone
        told it waits has asked, so each has set it up (enabled what it records) before it starts."""
        child.held.discard(by)
        if child.held or not child.waiting:
            answer({}, None)
            return
        child.waiting = False
        self._forward(tab, child.session_id, "Runtime.runIfWaitingForDebugger", {}, answer)

    def _let_go(self, by: Client | Session, tabs: list[TabRecord]) -> None:
        """`by` is gone (a session detached, a client disconnected): its children no longer wait
        for it."""
        for tab in tabs:
            for child in list(tab.children.values()):
                if isinstance(by, Session) and by in child.sessions:
                    child.sessions.remove(by)
                if isinstance(by, Session):
                    child.watchers.pop(by, None)
                if by in child.held:
                    self._let_run(tab, child, by, ignored)

    @staticmethod
    def _note_child(client: Client, tab: TabRecord, method: str, params: JsonDict) -> None:
        child = str(params.get("sessionId", ""))
        if method == "Target.attachedToTarget":
            client.children[child] = tab
        else:
            client.children.pop(child, None)

    # -- what the clients send ---------------------------------------------------------------------

    def client_message(self, client: Client, text: str) -> None:
        """One message of a client: a command to the browser, a browser session, a tab session or
        a child session. Commands that reach a tab leave for it before this returns (in order)."""
        try:
            message = json.loads(text)
            command_id = message["id"]
            method = str(message["method"])
        except (ValueError, KeyError, TypeError):
            return  # not a CDP command: nothing to answer
        params = message.get("params") or {}
        session_id = message.get("sessionId")
        if session_id is None:
            self._browser_command(client, None, command_id, method, params)
            return
        session = client.sessions.get(session_id)
        if session is not None and session.tab is None:
            self._browser_command(client, session, command_id, method, params)
        elif session is not None:
            self._tab_command(session, command_id, method, params)
        else:  # a child session (an iframe, a worker), or none
            reply = Reply(client, command_id, session_id=session_id)
            tab = client.children.get(session_id)
            child = tab.children.get(session_id) if tab is not None else None
            if tab is None:
                reply.error(-32001, "Session with given id not found.")
            elif method == "Runtime.runIfWaitingForDebugger" and child is not None:
                self._let_run(tab, child, client, reply.settle)
            else:
                self._forward(tab, session_id, method, params, reply)

    # -- the browser and its Target domain ---------------------------------------------------------

    def _browser_command(
        self, client: Client, session: Session | None, command_id: Any, method: str, params: JsonDict
    ) -> None:
        reply = Reply(client, command_id, via=session)
        handler = _BROWSER_COMMANDS.get(method)
        if handler is None:
            reply.error(
                -32601, f"{method} is not available in a browser reached through the tabpilot extension."
            )
            return
        try:
            handler(self, Command(client, session, params, reply))
        except LinkError as exc:
            reply.error(exc.code, str(exc))

    def target_info(self, tab: TabRecord) -> JsonDict:
        info: JsonDict = {
            "targetId": tab.target_id,
            "type": "page",
            "title": tab.title,
            "url": tab.url,
            "attached": True,
            "canAccessOpener": tab.can_access_opener,
            # One context for the relay's whole life: a Chrome the user restarts behind it has a
            # new id for its profile's context, and its tabs are the same browser's to the clients.
            "browserContextId": self._context_id or tab.context_id,
            # Not CDP's own: what Chrome's tab strip knows, for tabpilot's tab records.
            "chromeTabId": tab.chrome_id,
            "windowId": tab.window_id,
            "pinned": tab.pinned,
            "usersOwn": tab.shared,
        }
        opener = self._tabs.get(tab.opener_chrome_id) if tab.opener_chrome_id is not None else None
        if opener is not None:
            info["openerId"] = opener.target_id
        return info

    def _target(self, params: JsonDict) -> TabRecord:
        tab = self._by_target.get(str(params.get("targetId", "")))
        if tab is None:
            raise LinkError("No target with given id found", -32602)
        return tab

    def _new_session_id(self) -> str:
        return f"{self._session_prefix}{next(self._session_ids):020d}"

    def _attach(self, client: Client, tab: TabRecord, *, parent: Session | None, flat: bool) -> Session:
        session = Session(self._new_session_id(), client, tab, parent, flat=flat)
        client.sessions[session.id] = session
        tab.sessions.append(session)
        event = {
            "method": "Target.attachedToTarget",
            "params": {
                "sessionId": session.id,
                "targetInfo": self.target_info(tab),
                "waitingForDebugger": False,
            },
        }
        self._to_parent(session, event)
        return session

    def _detached(self, session: Session) -> None:
        session.client.sessions.pop(session.id, None)
        tab = session.tab
        if tab is not None and session in tab.sessions:
            tab.sessions.remove(session)
            self._forget_enables(session)
            self._let_go(session, [tab])
        target_id = tab.target_id if tab is not None else self.browser_target_id
        self._to_parent(
            session,
            {
                "method": "Target.detachedFromTarget",
                "params": {"sessionId": session.id, "targetId": target_id},
            },
        )

    def _to_parent(self, session: Session, event: JsonDict) -> None:
        if session.parent is not None:
            event["sessionId"] = session.parent.id
        session.client.send(event)

    def _download_event(self, method: str, params: JsonDict) -> None:
        """A download of a tab: Chrome's debugger reports it to the tab's attachment only (as
        `Page.download*`), Chromium to the browser sessions that asked (`Browser.download*`, which
        Playwright reads): the relay tells those as well."""
        event = {"method": method, "params": params}
        for client in list(self._clients):
            if client.download_events:
                client.send(event)
            for session in list(client.sessions.values()):
                if session.tab is None and session.download_events:
                    client.send({**event, "sessionId": session.id})

    def _to_discoverers(self, event: JsonDict) -> None:
        for client in list(self._clients):
            if client.discover:
                client.send(event)
            for session in list(client.sessions.values()):
                if session.tab is None and session.discover:
                    client.send({**event, "sessionId": session.id})

    # Browser-level commands: each returns None (answered already) or an awaitable of the result.

    def _cmd_get_version(self, cmd: Command) -> None:
        cmd.reply.result(browser_version(self.user_agent))

    def _cmd_download_behavior(self, cmd: Command) -> None:
        # The user's downloads stay where the user wants them; a client that asks for the events
        # of downloads gets them (`_download_event`).
        holder: Client | Session = cmd.session if cmd.session is not None else cmd.client
        holder.download_events = bool(cmd.params.get("eventsEnabled"))
        cmd.reply.result({})

    def _cmd_set_auto_attach(self, cmd: Command) -> None:
        enabled = bool(cmd.params.get("autoAttach"))
        was = cmd.client.auto_attach
        cmd.client.auto_attach = enabled
        if enabled and not was:
            for tab in list(self._tabs.values()):
                if tab.attached:
                    self._attach(cmd.client, tab, parent=None, flat=True)
        cmd.reply.result({})

    def _cmd_get_target_info(self, cmd: Command) -> None:
        if cmd.params.get("targetId") and cmd.params["targetId"] != self.browser_target_id:
            cmd.reply.result({"targetInfo": self.target_info(self._target(cmd.params))})
        else:
            cmd.reply.result({"targetInfo": browser_info(self.browser_target_id)})

    def _cmd_get_targets(self, cmd: Command) -> None:
        cmd.reply.result({"targetInfos": [self.target_info(t) for t in self._tabs.values()]})

    def _cmd_set_discover(self, cmd: Command) -> None:
        discover = bool(cmd.params.get("discover"))
        holder: Client | Session = cmd.session if cmd.session is not None else cmd.client
        was = holder.discover
        holder.discover = discover
        if discover and not was:
            # Chromium reports the targets there are before it answers.
            for tab in list(self._tabs.values()):
                event: JsonDict = {
                    "method": "Target.targetCreated",
                    "params": {"targetInfo": self.target_info(tab)},
                }
                if cmd.session is not None:
                    event["sessionId"] = cmd.session.id
                cmd.client.send(event)
        cmd.reply.result({})

    def _cmd_attach_to_browser(self, cmd: Command) -> None:
        browser = Session(self._new_session_id(), cmd.client, None, None)
        cmd.client.sessions[browser.id] = browser
        event = {
            "method": "Target.attachedToTarget",
            "params": {
                "sessionId": browser.id,
                "targetInfo": browser_info(self.browser_target_id),
                "waitingForDebugger": False,
            },
        }
        cmd.client.send(event)
        cmd.reply.result({"sessionId": browser.id})

    def _cmd_attach_to_target(self, cmd: Command) -> None:
        tab = self._target(cmd.params)
        attached = self._attach(cmd.client, tab, parent=cmd.session, flat=bool(cmd.params.get("flatten")))
        cmd.reply.result({"sessionId": attached.id})

    def _cmd_detach(self, cmd: Command) -> None:
        found = cmd.client.sessions.get(str(cmd.params.get("sessionId", "")))
        if found is None and cmd.params.get("targetId"):
            found = next(
                (
                    s
                    for s in cmd.client.sessions.values()
                    if s.tab and s.tab.target_id == cmd.params["targetId"]
                ),
                None,
            )
        if found is not None:
            self._detached(found)
        cmd.reply.result({})

    def _cmd_send_message(self, cmd: Command) -> None:
        """A command inside `Target.sendMessageToTarget` (a session that is not flat), by session id
        or, before the attach was answered, by target id."""
        target = cmd.client.sessions.get(str(cmd.params.get("sessionId", "")))
        if target is None and cmd.params.get("targetId"):
            target = next(
                (
                    s
                    for s in reversed(list(cmd.client.sessions.values()))
                    if not s.flat and s.tab is not None and s.tab.target_id == cmd.params["targetId"]
                ),
                None,
            )
        if target is None or target.tab is None:
            cmd.reply.error(-32602, "No session with given id")
            return
        try:
            inner = json.loads(str(cmd.params.get("message", "")))
            inner_id, method = inner["id"], str(inner["method"])
        except (ValueError, KeyError, TypeError):
            cmd.reply.error(-32602, "The message is not a CDP command")
            return
        cmd.reply.result({})
        self._tab_command(target, inner_id, method, inner.get("params") or {})

    def _cmd_window_for_target(self, cmd: Command) -> None:
        cmd.reply.result(window_of(self._target(cmd.params)))

    def _cmd_create_target(self, cmd: Command) -> None:
        def created(record: Any, error: LinkError | None) -> None:
            if error is not None:
                cmd.reply.settle(None, error)
            else:  # announced (attachedToTarget, targetCreated) before the answer, as Chromium does
                cmd.reply.result({"targetId": self.tab_reported(record).target_id})

        self._link.request("createTab", {"url": cmd.params.get("url") or "about:blank"}, created)

    def _cmd_close_target(self, cmd: Command) -> None:
        tab = self._target(cmd.params)
        self._link.request("closeTab", {"tabId": tab.chrome_id}, _then(cmd.reply, {"success": True}))

    def _cmd_activate_target(self, cmd: Command) -> None:
        tab = self._target(cmd.params)
        self._to_tab("activateTab", {"tabId": tab.chrome_id}, _then(cmd.reply, {}))

    def _cmd_no_contexts(self, cmd: Command) -> None:
        cmd.reply.result({"browserContextIds": []})

    # -- a tab's sessions -------------------------------------------------------------------------

    def _tab_command(self, session: Session, command_id: Any, method: str, params: JsonDict) -> None:
        tab = session.tab
        assert tab is not None
        reply = Reply(session.client, command_id, session=session)
        domain, _, verb = method.partition(".")
        if method == "Target.getTargetInfo":
            reply.result({"targetInfo": self.target_info(tab)})
        elif method == "Browser.getWindowForTarget":
            reply.result(window_of(tab))
        elif method in ANSWERED_HERE or method in NOT_APPLIED:
            reply.result({})
        elif method == "Page.bringToFront":
            # Chrome's own focuses the tab's window, over the window the user works in: the
            # extension brings the tab to the front of its window, and no further.
            self._to_tab("activateTab", {"tabId": tab.chrome_id}, _then(reply, {}))
        elif method == "Target.setAutoAttach":
            session.auto_attach = bool(params.get("autoAttach"))
            if session.flat:
                self._forward(tab, None, method, params, reply)
            else:
                self._auto_attach_wrapped(session, params, reply)
        elif method == "Target.sendMessageToTarget":
            self._child_command(session, params, reply)
        elif method == "Runtime.addBinding":
            session.bindings.add(str(params.get("name", "")))
            self._forward(tab, None, method, params, reply)
        elif verb == "enable":
            tab.enabled.setdefault(domain, set()).add(session.id)
            if domain == "Runtime":
                self._enable_runtime(tab, session, params, reply)
            else:
                self._forward(tab, None, method, params, reply)
        elif verb == "disable":
            users = tab.enabled.get(domain, set())
            users.discard(session.id)
            if users:
                reply.result({})  # another session still uses it
            else:
                if domain == "Runtime":
                    tab.runtime = "off"
                self._forward(tab, None, method, params, reply)
        else:
            self._forward(tab, None, method, params, reply)

    def _auto_attach_wrapped(self, session: Session, params: JsonDict, reply: Reply) -> None:
        """A session that is not flat auto-attaches (tabpilot's telemetry, to the tab's iframes and
        workers). The tab's attachment auto-attaches for Playwright's flat page session already,
        and Chrome's debugger serves flat child sessions only: the relay hands each child it
        reports to this session as well, wrapped in this session's messages. The children there
        are now are announced at once, as Chromium does."""
        tab = session.tab
        assert tab is not None
        session.child_types = _child_types(params)
        if not session.auto_attach:
            self._let_go(session, [tab])
            reply.result({})
            return
        if not any(s.flat and s.auto_attach for s in tab.sessions):
            # No flat session has the tab's attachment auto-attach yet: this one does (flat, the
            # only way Chrome's debugger does it).
            self._forward(tab, None, "Target.setAutoAttach", {**params, "flatten": True}, reply)
        else:
            reply.result({})
        for child in list(tab.children.values()):
            if session not in child.sessions and self._wants(session, child):
                self._tell_child(session, child)

    def _child_command(self, session: Session, params: JsonDict, reply: Reply) -> None:
        """A command to a child target, inside `Target.sendMessageToTarget` on the tab session that
        was told of it; the child's answer comes back wrapped the same way."""
        tab = session.tab
        assert tab is not None
        child = tab.children.get(str(params.get("sessionId", "")))
        if child is None or session not in child.sessions:
            reply.error(-32602, "No session with given id")
            return
        try:
            inner = json.loads(str(params.get("message", "")))
            inner_id, method = inner["id"], str(inner["method"])
        except (ValueError, KeyError, TypeError):
            reply.error(-32602, "The message is not a CDP command")
            return
        reply.result({})
        self._in_child(session, tab, child, inner_id, method, inner.get("params") or {})

    def _in_child(
        self,
        session: Session,
        tab: TabRecord,
        child: ChildRecord,
        command_id: Any,
        method: str,
        params: JsonDict,
    ) -> None:
        """A command of `session` to `child`, whose answer goes back wrapped in the child's messages
        (and its parent's, for a child's child)."""

        def answer(result: Any, error: LinkError | None) -> None:
            if session not in child.sessions:
                return  # detached meanwhile
            body: JsonDict = {"id": command_id}
            if error is not None:
                body["error"] = error_body(error.code, str(error))
            else:
                body["result"] = result if result is not None else {}
            send_to(session, child.wrapped(body))

        if method == "Runtime.runIfWaitingForDebugger":
            self._let_run(tab, child, session, answer)
        elif method == "Target.setAutoAttach":
            # Chrome's debugger auto-attaches flat only, and does so for Playwright's own session to
            # the child already: the child's children are handed to this session as the tab's are.
            # (Passed on, Chrome's debugger held each at its start for a session that never let it
            # run: the page never finished loading.)
            self._watch_children(session, tab, child, params)
            answer({}, None)
        elif method == "Target.sendMessageToTarget":
            inner_child = tab.children.get(str(params.get("sessionId", "")))
            try:
                inner = json.loads(str(params.get("message", "")))
                inner_id, inner_method = inner["id"], str(inner["method"])
            except (ValueError, KeyError, TypeError):
                answer(None, LinkError("The message is not a CDP command", -32602))
                return
            if inner_child is None or inner_child.parent is not child or session not in inner_child.sessions:
                answer(None, LinkError("No session with given id", -32602))
                return
            answer({}, None)
            self._in_child(session, tab, inner_child, inner_id, inner_method, inner.get("params") or {})
        else:
            self._forward(tab, child.session_id, method, params, answer)

    def _watch_children(self, session: Session, tab: TabRecord, child: ChildRecord, params: JsonDict) -> None:
        """`session` auto-attaches (or no longer) to `child`'s own children: those there now are
        announced at once, as Chromium does."""
        if not params.get("autoAttach"):
            child.watchers.pop(session, None)
            return
        child.watchers[session] = _child_types(params)
        for inner in list(tab.children.values()):
            if (
                inner.parent is child
                and session not in inner.sessions
                and self._wants_inner(session, child, inner)
            ):
                self._tell_child(session, inner)

    @staticmethod
    def _wants_inner(session: Session, parent: ChildRecord, child: ChildRecord) -> bool:
        types = parent.watchers.get(session)
        return types is not None and (not types or child.target_info.get("type") in types)

    def _enable_runtime(self, tab: TabRecord, session: Session, params: JsonDict, reply: Reply) -> None:
        """The first Runtime.enable goes to the tab (Chromium reports the contexts, to every
        session); a later one is answered with the contexts seen, replayed to that session. Each
        goes to the tab in its turn, and a later one's replay waits for its answer: the session
        hears of the contexts after the answers to the commands it sent before, as from Chromium
        (Playwright drops a context of a frame its `Page.getFrameTree` has not named yet: a tab
        that came into scope loaded, its tracker's session first, kept no main world, and each
        evaluate in it waited for ever)."""
        first = tab.runtime == "off"
        if first:
            tab.runtime = "enabling"

        def enabled(result: Any, error: LinkError | None) -> None:
            if first:
                tab.runtime = "on" if error is None else "off"
            if first or error is not None:
                reply.settle(result, error)
            else:
                self._replay_contexts(tab, session, reply)

        self._forward(tab, None, "Runtime.enable", params, enabled)

    @staticmethod
    def _replay_contexts(tab: TabRecord, session: Session, reply: Reply) -> None:
        for context in list(tab.contexts.values()):
            send_to(session, {"method": "Runtime.executionContextCreated", "params": {"context": context}})
        reply.result({})

    def _forget_enables(self, session: Session) -> None:
        if session.tab is not None:
            for users in session.tab.enabled.values():
                users.discard(session.id)

    def _forward(
        self, tab: TabRecord, child: str | None, method: str, params: JsonDict, reply: Reply | Answer
    ) -> None:
        request: JsonDict = {"tabId": tab.chrome_id, "method": method, "params": params}
        if child is not None:
            request["sessionId"] = child
        self._to_tab("cdp", request, reply.settle if isinstance(reply, Reply) else reply)

    def _to_tab(self, method: str, params: JsonDict, settle: Answer) -> None:
        """A request to the extension about a tab (`params`' tabId)."""

        def answer(result: Any, error: LinkError | None) -> None:
            if error is not None and _tab_went(str(error)):
                # The tab closed (or left the agent) before the command reached it: said as
                # Chromium's closed target, so the command's caller hears that its tab went, not
                # the extension's words for it.
                error = LinkError(f"Target closed ({error})", error.code)
            settle(result, error)

        try:
            self._link.request(method, params, answer)
        except LinkError as exc:
            answer(None, exc)


_TAB_WENT = (
    "No tab with given id",
    "Debugger is not attached to the tab",
    "Detached while handling command",
    "is not shared with tabpilot",
)
"""How Chrome's debugger API (and the extension, for a tab it no longer holds) answers a command
to a tab that closed or was taken back by its user."""


def _tab_went(message: str) -> bool:
    return any(words in message for words in _TAB_WENT)


def _then(reply: Reply, result: JsonDict) -> Answer:
    """An answer that replies `result` once the extension has done the request."""

    def answer(_value: Any, error: LinkError | None) -> None:
        reply.settle(result, error)

    return answer


_BrowserCommand = Callable[[Relay, Command], None]
_BROWSER_COMMANDS: dict[str, _BrowserCommand] = {
    "Browser.getVersion": Relay._cmd_get_version,
    "Browser.setDownloadBehavior": Relay._cmd_download_behavior,
    "Browser.getWindowForTarget": Relay._cmd_window_for_target,
    "Target.setAutoAttach": Relay._cmd_set_auto_attach,
    "Target.getTargetInfo": Relay._cmd_get_target_info,
    "Target.getTargets": Relay._cmd_get_targets,
    "Target.setDiscoverTargets": Relay._cmd_set_discover,
    "Target.attachToBrowserTarget": Relay._cmd_attach_to_browser,
    "Target.attachToTarget": Relay._cmd_attach_to_target,
    "Target.detachFromTarget": Relay._cmd_detach,
    "Target.sendMessageToTarget": Relay._cmd_send_message,
    "Target.createTarget": Relay._cmd_create_target,
    "Target.closeTarget": Relay._cmd_close_target,
    "Target.activateTarget": Relay._cmd_activate_target,
    "Target.getBrowserContexts": Relay._cmd_no_contexts,
}


def _child_types(params: JsonDict) -> frozenset[str]:
    """The target types a `Target.setAutoAttach` asks for (none: every type)."""
    return frozenset(
        str(f.get("type")) for f in params.get("filter") or () if f.get("type") and not f.get("exclude")
    )
