"""The manager: every instance the process drives, one tab id space, one event stream."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from ._bridge import ExtensionBridge
from ._downloads import Downloads
from ._endpoints import (
    cdp_browser_id,
    check_endpoint,
    check_profile_dir,
    running_chrome_endpoint,
    stale_port_error,
    stalled_pages,
)
from ._errors import (
    ConnectError,
    ExtensionNotConnectedError,
    InstanceError,
    InstanceLostError,
    InstanceNotFoundError,
    LastTabError,
    TabLimitError,
    TabNotFoundError,
    TabpilotError,
    check_count,
    check_tab_id,
    manager_closed,
)
from ._events import EventBus, EventNumbers
from ._extension_watch import ExtensionWatch
from ._grid import GridSession, create_session
from ._ids import TabIds, decimal_id, id_text_advice
from ._instance import DRIVER_STOPPED, BrowserLink, Cleanup, Instance
from ._options import BrowserOptions, check_seconds
from ._policy import UrlPolicy
from ._pw import BrowserHandle, ContextHandle, Driver, is_closed_error
from ._services import BrowserClaims, InstanceServices, TabBudget, TabRules, TargetHook
from ._tab import Tab, Timeouts
from ._types import CloseResult, InstanceInfo, InstanceKind, OpenCause, TabInfo, TabLimitPolicy, closed_reason
from ._watch import NEW_TAB_GRACE

logger = logging.getLogger("tabpilot")
TARGETS_REMEMBERED = 10_000
"""How many target ids of tabs, closed ones too, `TabManager.tab` still knows (about 1 MB)."""


def _check_max_tabs(value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_tabs must be a whole number of at least 1, not {value!r}")


class TabManager:
    """Drives browsers and keeps every tab of every one under a stable integer id.

    Use it as an async context manager::

        async with TabManager() as manager:
            instance = await manager.launch()
            tab = await manager.new_tab("http://127.0.0.1:8000/")
    """

    def __init__(
        self,
        *,
        options: BrowserOptions | None = None,
        headless: bool | None = None,
        browser_path: str | None = None,
        max_tabs: int = 20,
        tab_limit_policy: TabLimitPolicy = "reject",
        follow_new_tabs: bool = False,
        policy: UrlPolicy | None = None,
        event_history: int = 1000,
        tab_ids: TabIds | None = None,
        driver: Driver | None = None,
        budget: TabBudget | None = None,
        browser_claims: BrowserClaims | None = None,
        event_numbers: EventNumbers | None = None,
    ) -> None:
        """`budget`: a total tab cap shared with other managers (see `TabBudget`);
        `browser_claims`: the browsers connected, shared with other managers (`BrowserClaims`);
        `event_numbers`: the numbering of events and telemetry entries, shared with other managers
        (`EventNumbers`): a cursor of one then reads another's entries from where it left off."""
        _check_max_tabs(max_tabs)
        if tab_limit_policy not in ("reject", "close-oldest"):
            raise ValueError("tab_limit_policy must be 'reject' or 'close-oldest'")
        options = options or BrowserOptions()
        if headless is not None:
            options = options.replace(headless=headless)
        if browser_path is not None:
            options = options.replace(browser_path=browser_path)
        self.options = options
        self.policy = policy or UrlPolicy()
        self.rules = TabRules(max_tabs, tab_limit_policy, follow_new_tabs, budget)
        self._leave_budget = budget.join(self._staying_tabs) if budget else None
        check_count(
            event_history, "event_history", "the most events the history keeps", minimum=1, unit="event"
        )
        self.events = EventBus(history_size=event_history, numbers=event_numbers)
        self.downloads = Downloads(options.downloads_dir)
        """Where the files pages download are saved (`BrowserOptions.downloads_dir`)."""
        self._tab_ids = tab_ids or TabIds()
        self._given: set[int] = set()
        self._by_target: OrderedDict[str, int] = OrderedDict()
        """The tab id of each CDP target id given one (the latest TARGETS_REMEMBERED): a closed tab
        named by its target id is said as closed, as by its number."""
        self._instance_ids = itertools.count(1)
        self._instances: dict[str, Instance] = {}
        self._starting: set[str] = set()
        """The instance ids given to calls that are starting their instance (`_starting_id`)."""
        self._launched_with: dict[str, BrowserOptions] = {}
        """The options each launched instance was started with (by instance id): a relaunch in
        place of a lost one gets them too (a tool may have launched it with options of its own)."""
        self._grid_sessions: dict[str, GridSession] = {}
        """The grid session each grid instance drives (by instance id): the one whose close ends it."""
        self._claims = browser_claims or BrowserClaims()
        """The browsers CDP instances are connected to (one browser, one instance)."""
        self._default_id: str | None = None
        self._used: dict[str, None] = {}
        """Instance ids in the order a tab of theirs was last activated, the most recent last: when
        the default instance is closed, the instance of the tab active before takes its place."""
        self._driver = driver or Driver()
        self._owns_driver = driver is None
        self._target_hooks: list[TargetHook] = []
        self._extensions = ExtensionWatch(
            self._extension_back,
            lambda bridge: any(
                i.kind == "extension" and i.endpoint == bridge.address and i.state == "open"
                for i in self._instances.values()
            ),
            lambda: self._closed,
        )
        self._closed = False
        self._stopping = False
        """Its owner is about to close it (`stopping`)."""
        self._replacing: dict[str, asyncio.Task[Instance | None]] = {}
        """The replacement under way of each lost default instance, by its id: calls that need the
        default at the same time wait for the one replacement."""

    # The tab rules, readable and settable here; instances see a change at once.
    @property
    def max_tabs(self) -> int:
        return self.rules.max_tabs

    @max_tabs.setter
    def max_tabs(self, value: int) -> None:
        _check_max_tabs(value)  # as the constructor does (0 was taken: no tab could open)
        self.rules.max_tabs = value

    @property
    def tab_limit_policy(self) -> TabLimitPolicy:
        return self.rules.tab_limit_policy

    @tab_limit_policy.setter
    def tab_limit_policy(self, value: TabLimitPolicy) -> None:
        if value not in ("reject", "close-oldest"):
            raise ValueError("tab_limit_policy must be 'reject' or 'close-oldest'")
        self.rules.tab_limit_policy = value

    @property
    def follow_new_tabs(self) -> bool:
        return self.rules.follow_new_tabs

    @follow_new_tabs.setter
    def follow_new_tabs(self, value: bool) -> None:
        self.rules.follow_new_tabs = value

    @property
    def headless(self) -> bool:
        return self.options.headless

    def __repr__(self) -> str:
        # What a debugger shows: open or closed, its instances and how many tabs they hold.
        if getattr(self, "_closed", True):
            return "<TabManager closed>" if hasattr(self, "_closed") else super().__repr__()
        held = ", ".join(repr(i) for i in self._instances.values()) or "no instance"
        return f"<TabManager {held}; max_tabs={self.max_tabs} {self.tab_limit_policy}>"

    def __del__(self, _warn: Callable[..., None] = warnings.warn) -> None:
        # As asyncio's transports do: a manager dropped without close() leaves its browsers, their
        # temporary profiles and Playwright's driver to the end of the process (`_warn` is kept
        # as the interpreter shuts down, when the module's globals may be gone).
        if getattr(self, "_closed", True):  # closed, or its __init__ refused its arguments
            return
        held = [f"instance {i}" for i in self._instances]
        if self._owns_driver and self._driver.running:
            held.append("Playwright's driver")
        if held:
            _warn(
                f"unclosed TabManager holding {', '.join(held)}: close it (await manager.close(), or "
                "async with TabManager() as manager:), so that what it launched ends and its "
                "temporary profiles are removed.",
                ResourceWarning,
                source=self,
            )

    async def __aenter__(self) -> TabManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._check_open()
        await self._driver.start()

    def _check_open(self) -> None:
        """Refuse to start a browser or reach one once `close` ran: nothing would close it."""
        if self._closed:
            raise TabpilotError(
                "This TabManager is closed (its close() ran, or its `async with` block ended).",
                "Make a new TabManager to open browsers again.",
            )

    def stopping(self) -> None:
        """Say that the owner is about to close this manager (the process got a stop signal, which
        a terminal or a supervisor may have sent Playwright's driver and the browsers too): a
        browser that goes from now on is logged as going with the stop (info), not as lost
        (warning). Instances and tabs work as before until `close`."""
        self._stopping = True

    async def close(self) -> None:
        """Close every instance (launched browsers exit; connected ones are left running)."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        if self._leave_budget is not None:
            self._leave_budget()
        self._extensions.close()
        replacing = list(self._replacing.values())
        for task in replacing:
            task.cancel()  # a browser being launched is closed again
        await asyncio.gather(*replacing, return_exceptions=True)
        # All at once, so that a slow one (a grid ending its session, a remote browser that does
        # not answer) does not hold up the rest: a client that stops the server gives it a few
        # seconds before it kills it, and a launched browser's profile is removed after its
        # close. Context instances first: each closes before the browser it lives in.
        instances = list(self._instances.values())
        for closing in (
            [i for i in instances if i.kind == "context"],
            [i for i in instances if i.kind != "context"],
        ):
            outcomes = await asyncio.gather(
                *(i.close(cause="shutdown") for i in closing), return_exceptions=True
            )
            for instance, outcome in zip(closing, outcomes, strict=True):
                if isinstance(outcome, Exception):
                    logger.warning("closing instance %s failed: %s", instance.id, outcome)
        try:
            await self.downloads.close()
            if self._owns_driver:
                await self._driver.stop()
        finally:
            self.events.end()  # streams end, once they have yielded the tabs' closes

    def add_target_hook(self, hook: TargetHook) -> None:
        """Call `hook(target_session, tab)` for every new tab, the moment its target exists, and
        for each cross-site iframe of it as it starts (a target of its own:
        `target_session.parent` is set). Telemetry attaches here (`Telemetry.attach_target`). The
        hook returns its disposer, run when the tab goes (an iframe's: when the iframe goes)."""
        self._target_hooks.append(hook)

    # -- instances -------------------------------------------------------------------------------

    @property
    def instances(self) -> list[Instance]:
        return list(self._instances.values())

    @property
    def default_instance(self) -> Instance | None:
        return self._instances.get(self._default_id) if self._default_id else None

    def instance(self, instance_id: str | int | None = None) -> Instance:
        """An instance by id (its number alone names it too: `2` or `"2"` for inst_2), or the
        default instance."""
        if instance_id is None:
            inst = self.default_instance
            if inst is None:
                raise self._no_default()
            return inst
        inst, number = None, None
        if isinstance(instance_id, str):
            inst = self._instances.get(instance_id)
            number = decimal_id(instance_id)
        elif isinstance(instance_id, int) and not isinstance(instance_id, bool):
            number = instance_id
        if inst is None and number is not None:  # 2 and "2" name inst_2: what models write after tab ids
            inst = self._instances.get(f"inst_{number}")
        if inst is None:
            known = ", ".join(f"{i.id} ({i.kind})" for i in self._instances.values()) or "none"
            raise InstanceNotFoundError(
                f"Instance {instance_id!r} not found. Open instances: {known}.",
                "Use one of these, or list the instances.",
                instance_id=str(instance_id),
            )
        return inst

    def _no_default(self) -> InstanceNotFoundError:
        """Why there is no default instance, and how to get one."""
        bridge = self._extensions.first
        if bridge is not None and not bridge.connected:
            return ExtensionNotConnectedError(
                bridge.address, bridge.extension_ids[0], wrong_token=bridge.refused_a_token
            )
        if bridge is not None:
            return InstanceNotFoundError(
                f"No browser instance is open: the tabpilot extension is connected at {bridge.address}, "
                "but no instance uses the user's browser (its instance was closed).",
                "Connect the extension's browser again, or launch a browser.",
                extension=bridge.address,
            )
        return InstanceNotFoundError("No browser instance is open.", "Launch one or connect one.")

    def _give_tab_id(self, target_id: str | None = None) -> tuple[int, bool | None]:
        """A new tab's id: the id its page had when its instance was lost, if an instance that
        connects to the same browser again finds the page still there (the automatic reconnect of
        the default, or one the agent asks for); else a new one. And, for an id given back, whether
        its tab was the user's own (None: a new id)."""
        for lost in self._instances.values():
            tab_id = lost.tabs_at_loss.pop(target_id, None) if target_id and lost.state == "lost" else None
            if tab_id is not None and all(tab.id != tab_id for tab in self._open_tabs()):
                return tab_id, tab_id in lost.users_at_loss
        tab_id = next(self._tab_ids)
        self._given.add(tab_id)
        if target_id:
            self._by_target[target_id] = tab_id
            while len(self._by_target) > TARGETS_REMEMBERED:
                self._by_target.popitem(last=False)
        return tab_id, None

    def _services(self, options: BrowserOptions) -> InstanceServices:
        """What an instance started with `options` gets (its tabs' timeouts are those options')."""
        return InstanceServices(
            next_tab_id=self._give_tab_id,
            emit=self.events.emit,
            activated=self._note_activation,
            is_default=lambda instance_id: instance_id == self._default_id,
            successor=self._successor,
            all_open_tabs=self._open_tabs,
            rules=self.rules,
            timeouts=Timeouts(options.timeout_action, options.timeout_navigation),
            policy=self.policy,
            target_hooks=self._target_hooks,
            downloads=self.downloads,
            stopping=lambda: self._stopping,
            oldest_tab=self._oldest_tab,
            close_for_room=lambda tab: self.instance_of(tab).close_for_room(tab),
            drop_for_room=lambda tab: self.instance_of(tab).drop_for_room(tab),
        )

    def _oldest_tab(self, exclude: Tab | None) -> Tab | None:
        """The tab a total cap closes first under close-oldest: the least recently used one of all
        this manager's open instances that their caps may close."""
        found = [
            victim
            for instance in self._instances.values()
            if instance.state == "open" and (victim := instance.cap_victim(exclude)) is not None
        ]
        return min(found, key=lambda entry: entry[0])[1] if found else None

    def _claim_id(self, instance_id: str | None) -> str:
        """`instance_id` (refused if an instance has it), or a new one."""
        if instance_id is None:
            return f"inst_{next(self._instance_ids)}"
        self._check_id_free(instance_id)
        return instance_id

    def _own_id(self, instance_id: str | None) -> str:
        """The id of the instance this call started: the one it holds (`_starting_id`), else
        `instance_id` claimed now (refused if an instance has it), or a new one."""
        if instance_id is not None and instance_id in self._starting:
            return instance_id
        return self._claim_id(instance_id)

    def _check_id_free(self, instance_id: str | None) -> None:
        """Refuse an instance id an instance has, or a call is starting one with, before anything
        is started for it (a browser launched for it ran on, unowned, with its temporary profile)."""
        if instance_id is not None and instance_id in self._instances:
            raise ValueError(
                f"instance id {instance_id!r} is in use: give another id, or close that instance first "
                f"(close_instance({instance_id!r}))"
            )
        if instance_id is not None and instance_id in self._starting:
            raise ValueError(
                f"instance id {instance_id!r} is in use: another call is starting an instance with it. "
                "Give another id, or wait for that call."
            )

    @contextlib.contextmanager
    def _starting_id(self, instance_id: str | None) -> Iterator[None]:
        """Hold `instance_id` (when one is given) while this call starts its instance: a call made
        meanwhile with the same id is refused before it starts anything (both passed the check, and
        the browser launched or reached for the second ran on, unowned, once its id was taken)."""
        self._check_id_free(instance_id)
        if instance_id is None:
            yield
            return
        self._starting.add(instance_id)
        try:
            yield
        finally:
            self._starting.discard(instance_id)

    def _successor(self, instance_id: str) -> str | None:
        current = self._instances.get(instance_id)
        seen = {instance_id}
        while current is not None and current.replaced_by is not None and current.replaced_by not in seen:
            seen.add(current.replaced_by)
            current = self._instances.get(current.replaced_by)
            if current is not None and current.state == "open":
                return current.id
        return None

    def _note_activation(self, instance_id: str) -> None:
        # The instance of the most recently activated tab becomes the default.
        self._used.pop(instance_id, None)
        self._used[instance_id] = None
        self._default_id = instance_id

    def _most_recent(self, instance_ids: list[str]) -> str | None:
        """Of `instance_ids`, the one a tab of which was active most recently (one never activated
        comes after those that were, in the order it was added)."""
        order = {iid: n for n, iid in enumerate(self._used)}
        return min(instance_ids, key=lambda iid: -order.get(iid, -1), default=None)

    async def _adopt(
        self,
        *,
        kind: InstanceKind,
        endpoint: str | None,
        browser: BrowserHandle | None,
        context: ContextHandle,
        owns_context: bool = False,
        temp_profile: str | None = None,
        user_data_dir: str | None = None,
        initial_cause: OpenCause = "external",
        instance_id: str | None = None,
        headless: bool = True,
        cleanup: Sequence[Cleanup] = (),
        link: BrowserLink | None = None,
        options: BrowserOptions | None = None,
        loss_found: Callable[[], Awaitable[str | None]] | None = None,
    ) -> Instance:
        """`options`: those the browser was launched with, when not the manager's."""
        iid = self._own_id(instance_id)
        instance = Instance(
            iid,
            self._services(options or self.options),
            kind=kind,
            endpoint=endpoint,
            browser=browser,
            context=context,
            headless=headless,
            owns_context=owns_context,
            temp_profile=temp_profile,
            user_data_dir=user_data_dir,
            cleanup=cleanup,
            link=link,
            loss_found=loss_found,
        )
        if self._closed:  # closed while the browser started or was reached: it must not outlive us
            await instance.close(cause="shutdown")
            self._check_open()
        self._instances[iid] = instance
        logger.info("instance %s: %s%s", iid, kind, f" {endpoint}" if endpoint else "")
        default = self.default_instance
        if default is None or default.state != "open":
            self._default_id = iid
        try:
            await instance.start(initial_cause=initial_cause)
        except BaseException as exc:
            del self._instances[iid]
            if self._default_id == iid:
                self._default_id = next(iter(self._instances), None)
            await instance.loss_judged()
            went = instance.lost_reason  # it went away (killed, crashed) while it was being set up
            await instance.close()
            if isinstance(exc, Exception) and (went is not None or is_closed_error(exc)):
                raise ConnectError(
                    f"The browser went away while tabpilot was setting it up ({went or 'it closed'}).",
                    "Try again: a launch starts a new browser. If it keeps happening, check that the browser runs "
                    "on this machine (run it by hand to see why not)."
                    if kind == "launched"
                    else f"Check that the browser at {endpoint} still runs, then connect again.",
                    instance_id=iid,
                ) from exc
            raise
        self._restore_active(instance)
        return instance

    def _restore_active(self, instance: Instance) -> None:
        """A new default instance that reached a lost instance's browser again (the automatic
        reconnect, or one the agent asks for) makes the tab that was active at the loss active
        again, if its page is still there."""
        if self._default_id != instance.id:
            return
        for lost in reversed(self._instances.values()):
            if lost.state != "lost" or lost.active_at_loss is None:
                continue
            back = instance.tab_for_target(lost.active_at_loss)
            if back is not None:
                lost.active_at_loss = None
                instance.activate(back)
                return

    async def launch(
        self,
        *,
        headless: bool | None = None,
        browser_path: str | None = None,
        instance_id: str | None = None,
        timeout: float = 30.0,
        user_data_dir: str | os.PathLike[str] | None = None,
        options: BrowserOptions | None = None,
    ) -> Instance:
        """Start a local Chromium over a pipe (no debugging port other processes could reach).

        By default it gets an isolated profile: a fresh temporary directory, deleted when the
        instance closes (no cookies or logins shared with anything). `user_data_dir` (an absolute
        path) uses and keeps that profile instead; one Chromium at a time can use a profile.
        """
        self._check_open()
        check_seconds(timeout, "timeout")  # 0 was no limit, NaN a driver error
        self._check_id_free(instance_id)
        budget = self.rules.budget
        if budget is not None and budget.full:  # its first tab would go over the total
            raise TabLimitError(
                "",
                budget.used,
                budget.limit,
                self.rules.tab_limit_policy,
                total=True,
                own=self._staying_tabs(),
            )
        options = options or self.options
        changes: dict[str, Any] = {}
        if headless is not None:
            changes["headless"] = headless
        if browser_path is not None:
            changes["browser_path"] = browser_path
        if user_data_dir is not None:
            changes["user_data_dir"] = str(user_data_dir)
        options = options.replace(**changes) if changes else options
        if options.user_data_dir is not None:
            profile = check_profile_dir(options.user_data_dir)
            self._refuse_profile_in_use(profile)
            options = options.replace(user_data_dir=profile)
        with self._starting_id(instance_id):
            launched = await self._driver.launch(options, timeout=timeout)
            instance = await self._adopt(
                kind="launched",
                endpoint=None,
                browser=launched.browser,
                context=launched.context,
                owns_context=True,
                temp_profile=launched.temp_profile,
                user_data_dir=launched.user_data_dir,
                initial_cause="tool",
                instance_id=instance_id,
                headless=options.headless,
                options=options,
            )
            self._launched_with[instance.id] = options  # a relaunch in its place starts the same
            return instance

    async def connect_cdp(
        self, endpoint: str, *, instance_id: str | None = None, timeout: float = 10.0
    ) -> Instance:
        """Attach to a running Chromium over CDP (`http://host:port` or `ws://...`).

        Its open tabs are registered at once; tabs other clients open or close there are seen.
        A browser an open instance is connected to already (by any URL) is refused: its pages
        have tab ids there.
        """
        return await self._connect_cdp(endpoint, instance_id=instance_id, timeout=timeout, probe=True)

    async def _connect_cdp(
        self, endpoint: str, *, instance_id: str | None, timeout: float, probe: bool
    ) -> Instance:
        """`connect_cdp`; `probe`: on a timeout, look for the tabs that hold the connection up
        (`stalled_pages`) over a connection of its own (not for the user's Chrome reached by
        auto-connect: it may ask its user to allow every connection)."""
        self._check_open()
        check_seconds(timeout, "timeout")  # 0 was no limit, NaN a driver error
        self._check_id_free(instance_id)
        check_endpoint(endpoint, "cdp")
        with self._starting_id(instance_id):
            browser_id = await cdp_browser_id(endpoint, self.options.cdp_headers, timeout)
            if browser_id is not None:  # None: the endpoint names no browser, nothing to compare
                self._refuse_connected(browser_id, endpoint)
            with self._claims.connecting(browser_id) if browser_id is not None else contextlib.nullcontext():
                try:
                    browser, context = await self._driver.connect_cdp(endpoint, self.options, timeout=timeout)
                except ConnectError as exc:
                    # The browser answered (it named itself), the connection did not: one of its tabs
                    # may hold it up. Say which, not "check the host and port".
                    if exc.reason != "timeout" or browser_id is None or not probe:
                        raise
                    stalled = await stalled_pages(endpoint, self.options.cdp_headers)
                    if not stalled:
                        raise
                    raise ConnectError.stalled_tabs(endpoint, timeout, stalled) from exc
                instance = await self._adopt(
                    kind="cdp",
                    endpoint=endpoint,
                    browser=browser,
                    context=context,
                    instance_id=instance_id,
                    headless=False,
                )
            if browser_id is not None:
                self._claims.hold(browser_id, self, instance.id, lambda: instance.state == "open")
            return instance

    def _refuse_profile_in_use(self, profile: str) -> None:
        """Refuse a launch on the profile an open instance's browser runs on: Chromium would quit at
        once (its profile lock), saying only that some browser may have it."""
        for instance in self._instances.values():
            used = instance.user_data_dir
            if instance.state == "open" and used and os.path.realpath(used) == os.path.realpath(profile):
                raise ConnectError(
                    f"Instance {instance.id} runs on the profile {profile} already: one browser at a time "
                    "can use a profile.",
                    f"Use instance {instance.id} and its tabs, or close it first "
                    f"(close_instance({instance.id!r})); a launch without a profile directory gets a fresh one.",
                    instance_id=instance.id,
                    reason="profile_in_use",
                )

    def _refuse_connected(self, browser_id: str, endpoint: str) -> None:
        """Refuse a second instance for the browser `browser_id`; a lost instance of it does not
        count (connecting again is how its pages get their ids back)."""
        if self._claims.is_connecting(browser_id):
            raise ConnectError(
                f"The browser at {endpoint} is being connected already (another call is connecting it).",
                "Wait for that connection and use its instance.",
                reason="already_connected",
            )
        held = self._claims.holder(browser_id)
        if held is None:
            return
        owner, iid = held
        if owner is not self:
            raise ConnectError(
                f"The browser at {endpoint} is driven by another client of this server already (an "
                "instance of its own): one browser is driven by one instance, so that each of its tabs "
                "has one id and one client.",
                "Connect another browser, or have that client close its instance first.",
                reason="already_connected",
            )
        instance = self._instances.get(iid)
        if instance is not None:
            via = f" (as {instance.endpoint})" if instance.endpoint != endpoint else ""
            raise ConnectError(
                f"The browser at {endpoint} is the one instance {iid} is connected to{via}: one browser is "
                "driven by one instance, so that each of its tabs has one id.",
                f"Use instance {iid} and its tabs; to connect the browser again, close {iid} first.",
                instance_id=iid,
                reason="already_connected",
            )

    async def connect_ws(
        self, ws_endpoint: str, *, instance_id: str | None = None, timeout: float = 10.0
    ) -> Instance:
        """Connect to a Playwright browser server (the `ws://` URL `playwright launch-server` or
        `run-server` prints, or a grid's or hosted service's Playwright endpoint).

        A Playwright client sees only the browser contexts it creates, so the instance is one new
        context of that browser, with one blank tab to start from. Closing the instance closes its
        context and disconnects, leaving the server's browser running.
        """
        self._check_open()
        check_seconds(timeout, "timeout")  # 0 was no limit, NaN a driver error
        self._check_id_free(instance_id)
        check_endpoint(ws_endpoint, "playwright")
        with self._starting_id(instance_id):
            browser, context = await self._driver.connect_server(ws_endpoint, self.options, timeout=timeout)
            instance = await self._adopt(
                kind="playwright-server",
                endpoint=ws_endpoint,
                browser=browser,
                context=context,
                owns_context=True,
                initial_cause="tool",
                instance_id=instance_id,
            )
            # Like a launched browser, usable at once; not an activation, so the default stays.
            await instance.new_tab(background=True)
            return instance

    async def connect_grid(
        self, url: str, *, capabilities: Mapping[str, Any] | None = None, instance_id: str | None = None
    ) -> Instance:
        """Start a browser on a Selenium Grid 4 (`http://host:4444`) as a WebDriver session and
        drive it over the session's CDP endpoint (`se:cdp`), like a Chromium over CDP.

        `capabilities` go on top of Chrome's (headless unless the options say headed). The
        instance's endpoint is the session's WebDriver URL; closing the instance ends the session.
        """
        self._check_open()
        iid = self._claim_id(None) if instance_id is None else instance_id  # before a session is made for it
        with self._starting_id(instance_id):
            session = await create_session(url, capabilities, self.options)
            return await self._drive_grid_session(session, instance_id=iid)

    async def _drive_grid_session(
        self, session: GridSession, *, instance_id: str | None = None, new: bool = True
    ) -> Instance:
        """An instance for a grid session: connected over its CDP endpoint; closing the instance
        ends the session, unless another instance drives it by then (`ensure_default`). A `new`
        session that cannot be connected is ended; one driven before is left to its instance."""
        try:
            browser, context = await self._driver.connect_cdp(session.cdp_url, session.options, timeout=30.0)
        except BaseException:
            if new:
                await asyncio.shield(session.delete())
            raise
        iid = self._own_id(instance_id)

        async def end_session() -> str | None:
            if self._grid_sessions.get(iid) is session:
                del self._grid_sessions[iid]
                return await session.delete()
            return None

        if new:  # an instance that fails to start is closed by `_adopt`: its cleanup ends the session
            self._grid_sessions[iid] = session
        instance = await self._adopt(
            kind="grid",
            endpoint=session.url,
            browser=browser,
            context=context,
            instance_id=iid,
            headless=session.options.headless,
            # The tab a new session starts with opened at our request (not another client's).
            initial_cause="tool" if new else "external",
            cleanup=[end_session],
            loss_found=session.unreachable,
        )
        self._grid_sessions[iid] = session
        return instance

    async def auto_connect(
        self, *, user_data_dir: str | None = None, instance_id: str | None = None, timeout: float = 60.0
    ) -> Instance:
        """Attach to the Chrome the user runs with remote debugging on, found through the
        DevToolsActivePort file of its profile (`user_data_dir`, else the options' one, else
        Chrome's default profile). Chrome may ask the user to allow the connection: `timeout`
        leaves time for that."""
        profile = user_data_dir or self.options.user_data_dir
        endpoint = running_chrome_endpoint(profile)
        try:
            return await self._connect_cdp(endpoint, instance_id=instance_id, timeout=timeout, probe=False)
        except ConnectError as exc:
            if exc.reason in ("unreachable", "timeout"):
                raise stale_port_error(endpoint, profile, exc) from exc
            raise

    async def connect_extension(
        self, bridge: ExtensionBridge, *, instance_id: str | None = None, timeout: float = 30.0
    ) -> Instance:
        """The browser the tabpilot extension connects through `bridge` (started), as an instance of
        kind "extension" whose tabs are the tabs in the extension's scope. Waits up to `timeout`
        seconds for the extension; with no tab in scope, the agent gets one blank tab of its own."""
        self._check_open()
        check_seconds(timeout, "timeout")  # 0 was no limit, NaN a driver error
        self._check_id_free(instance_id)
        with self._starting_id(instance_id):
            if not await bridge.wait_connected(timeout):
                raise ExtensionNotConnectedError(
                    bridge.address, bridge.extension_ids[0], wrong_token=bridge.refused_a_token
                )
            browser, context = await self._driver.connect_cdp(bridge.cdp_endpoint, self.options, timeout=10)
            instance = await self._adopt(
                kind="extension",
                endpoint=bridge.address,
                browser=browser,
                context=context,
                instance_id=instance_id,
                headless=False,
                link=bridge,
            )
            if not instance.tabs:
                await instance.new_tab(background=True)  # usable at once; not an activation
            return instance

    def watch_extension(self, bridge: ExtensionBridge) -> None:
        """Keep an instance on the browser behind `bridge`: one is connected whenever the extension
        connects and no open instance uses it (now, if it is connected). Until then, asking for the
        default instance says how to connect the extension."""
        self._extensions.watch(bridge)

    async def extension_connected(self, timeout: float) -> None:
        """Wait (up to `timeout` seconds) for a watched extension's instance that is on its way."""
        await self._extensions.arrived(timeout)

    async def attach_isolated(self, of: Instance, *, instance_id: str | None = None) -> Instance:
        """A new isolated browser context of `of`'s browser (any manager's), as an instance of its
        own (with no tab yet): what one client session of a shared browser gets."""
        self._check_open()
        self._check_id_free(instance_id)
        if of.browser is None or not of.browser.is_connected():
            of.ensure_usable()
            raise ConnectError(f"Instance {of.id} has no browser to open a context in.")
        with self._starting_id(instance_id):
            context = await of.browser.new_context(self.options)
            isolated = await self._adopt(
                kind="context",
                endpoint=of.endpoint,
                browser=of.browser,
                context=context,
                owns_context=True,
                initial_cause="tool",
                instance_id=instance_id,
                headless=of.headless,
            )
            isolated.pid = of.pid  # it goes with that browser's process
            return isolated

    async def close_instance(self, instance_id: str | int) -> None:
        """Close an instance: a launched browser exits; a connected one is only disconnected. The
        isolated contexts this manager opened in its browser (`attach_isolated`) are closed first:
        they go with it (they were lost as if it had crashed, and one stayed the default)."""
        instance = self.instance(instance_id)
        if instance.kind != "context" and instance.browser is not None:
            for inside in [
                i for i in self._instances.values() if i.kind == "context" and i.browser is instance.browser
            ]:
                with contextlib.suppress(InstanceNotFoundError):  # another call closes it already
                    await self.close_instance(inside.id)
            instance = self.instance(instance.id)  # another call may have closed it meanwhile
        # Gone from the list at once: a call at the same time finds no such instance, as one after.
        del self._instances[instance.id]
        self._launched_with.pop(instance.id, None)  # nothing relaunches a closed instance
        if instance.kind == "extension" and instance.replaced_by is None:
            self._extensions.let_go(instance.endpoint or "")  # nor connects the user's browser again
        self._used.pop(instance.id, None)
        if self._default_id == instance.id:
            # An open instance, else a lost one that nothing replaced yet (the next call replaces
            # it): the one whose tab was active last, as closing the active tab activates the one
            # active before it.
            usable = [i.id for i in self._instances.values() if i.state == "open"]
            unreplaced = [i.id for i in self._instances.values() if i.replaced_by is None]
            self._default_id = self._most_recent(usable) or self._most_recent(unreplaced)
        try:
            await instance.close()
        finally:
            self._claims.release(self, instance.id)

    def instance_infos(self) -> list[InstanceInfo]:
        """Every instance this manager holds (lost ones too, until closed), as a listing shows it."""
        self.check_health()
        return [instance.info() for instance in self._instances.values()]

    def check_health(self) -> list[Instance]:
        """Notice launched browsers whose process has gone (no round trip); returns the lost instances."""
        for instance in list(self._instances.values()):
            instance.check_alive()
        return [i for i in self._instances.values() if i.state == "lost"]

    async def losses_judged(self) -> None:
        """Wait until it is known why each lost instance was lost (a moment after the loss at
        most: whether the driver or the browser's process went too); errors then say so."""
        for instance in list(self._instances.values()):
            await instance.loss_judged()

    async def ensure_default(
        self, *, isolate_in: Callable[[], Awaitable[Instance]] | None = None
    ) -> Instance | None:
        """Replace the default instance if it is lost and can be replaced; returns the new one.

        Call it before work that needs the default instance (a call without a tab id). A lost
        launched browser is relaunched; a lost isolated context (`attach_isolated`) is opened again
        in the browser `isolate_in()` returns (the one it lived in, started again by its owner), when
        given. A lost extension instance whose watched bridge still has the extension, and a CDP,
        Playwright-server or grid instance lost because Playwright's driver died (the browser may
        be fine; a grid session is driven again, and then ended by the new instance), are
        connected again. The replacement gets a new id, becomes the default, and an
        `instance_relaunched` event says so; a grid instance lost otherwise (its session ended) is
        replaced by a new session on the same grid, with the same capabilities. The tabs a kept
        browser still has keep their ids, and
        the one that was active is active again (`_restore_active`). A remote default lost
        otherwise is not reconnected. Calls at the same time wait for one replacement (a caller
        cancelled meanwhile leaves it under way; closing the manager stops it).
        """
        self.check_health()
        await self.extension_connected(15)
        lost = self.default_instance
        if lost is None or lost.state != "lost" or self._closed:
            return None
        replacing = self._replacing.get(lost.id)
        if replacing is None:
            replacing = asyncio.get_running_loop().create_task(self._replace_default(lost, isolate_in))
            self._replacing[lost.id] = replacing

            def done(task: asyncio.Task[Instance | None]) -> None:
                del self._replacing[lost.id]
                if not task.cancelled():
                    task.exception()  # retrieved: every caller that still waits raises it

            replacing.add_done_callback(done)
        return await asyncio.shield(replacing)

    async def _replace_default(
        self, lost: Instance, isolate_in: Callable[[], Awaitable[Instance]] | None
    ) -> Instance | None:
        await lost.loss_judged()
        if lost.kind == "extension":
            return await self._extension_again(lost)
        replacement, connected, kept = await self._replace(lost, isolate_in)
        if replacement is None:
            return None
        self._replaced(lost, replacement, connected=connected, kept=kept)
        return replacement

    async def _extension_again(self, lost: Instance) -> Instance | None:
        """The instance in place of a lost extension instance whose watched bridge has the
        extension again, connected by the watch (`_extension_back`), joining its connect if one is
        under way: the extension's arrival and this call must not connect its browser twice (two
        instances would hold the same tabs under two ids each)."""
        bridge = self._extensions.bridge_at(lost.endpoint or "")
        if bridge is None or not bridge.connected:
            return None
        await self._extensions.connect(bridge)
        return self._instances.get(lost.replaced_by) if lost.replaced_by is not None else None

    def _replaced(self, lost: Instance, replacement: Instance, *, connected: bool, kept: bool) -> None:
        """`replacement` takes the place of `lost` (and of the default, if `lost` was), and an
        `instance_relaunched` event says so."""
        lost.replaced_by = replacement.id
        if self._default_id == lost.id:
            self._default_id = replacement.id
        logger.info("instance %s replaces lost instance %s", replacement.id, lost.id)
        active = replacement.active_tab
        self.events.emit(
            "instance_relaunched",
            None,
            replacement.id,
            replaces=lost.id,
            kind=replacement.kind,
            reconnected=connected,
            tabsKept=kept,
            reason=lost.lost_reason,
            activeTabId=active.id if active else None,
        )

    async def _extension_back(self, bridge: ExtensionBridge) -> None:
        """The extension connected to a watched bridge with no open instance on it: its browser as
        an instance, in place of the instance that lost it, if one did (the browser came back, or
        the user paired it again): its tabs are back under the ids they had, and the
        `instance_relaunched` event says the user's browser is connected again."""
        lost = next(
            (
                i
                for i in reversed(self._instances.values())
                if i.kind == "extension"
                and i.endpoint == bridge.address
                and i.state == "lost"
                and i.replaced_by is None
            ),
            None,
        )
        if lost is not None:
            await lost.loss_judged()
        instance = await self.connect_extension(bridge, timeout=5)
        if lost is not None and lost.replaced_by is None:
            self._replaced(lost, instance, connected=True, kept=True)

    async def _replace(
        self, lost: Instance, isolate_in: Callable[[], Awaitable[Instance]] | None
    ) -> tuple[Instance | None, bool, bool]:
        """The instance in place of `lost` (None: it cannot be replaced); whether it connected to
        the browser again (else launched or opened one), and whether that browser kept its tabs."""
        if lost.kind == "launched":
            started_as = self._launched_with.get(lost.id)  # kept for a retry, should this launch fail
            again = self.launch(headless=lost.headless, user_data_dir=lost.user_data_dir, options=started_as)
            replacement = await again
            self._launched_with.pop(lost.id, None)
            return replacement, False, False
        if lost.kind == "context" and isolate_in is not None:
            replacement = await self.attach_isolated(await isolate_in())
            await replacement.new_tab()
            return replacement, False, False
        if lost.kind in ("cdp", "playwright-server") and lost.lost_reason == DRIVER_STOPPED and lost.endpoint:
            # The browser itself may well be there still: only the connection to it went. A
            # Playwright server closed what it opened for the old connection: a blank tab then.
            connect = self.connect_cdp if lost.kind == "cdp" else self.connect_ws
            return await connect(lost.endpoint), True, lost.kind == "cdp"
        if (
            lost.kind == "grid"
            and lost.lost_reason == DRIVER_STOPPED
            and (session := self._grid_sessions.get(lost.id)) is not None
        ):
            # The grid session outlives the driver: the new instance drives it (and ends it).
            replacement = await self._drive_grid_session(session, new=False)
            self._grid_sessions.pop(lost.id, None)
            return replacement, True, True
        if lost.kind == "grid" and (session := self._grid_sessions.get(lost.id)) is not None:
            # The session ended (the grid timed it out, its node went away): a new one on the same
            # grid, as a lost launched browser is launched again. The old one is ended first: one
            # lost with its hub (stuck, then back) still runs, holding a slot the new one may need;
            # one that cannot be ended yet is left to the lost instance's close.
            if await session.delete() is None:
                self._grid_sessions.pop(lost.id, None)
            fresh = await create_session(session.grid, session.asked, session.options)
            return await self._drive_grid_session(fresh), False, False
        return None, False, False

    # -- tabs ------------------------------------------------------------------------------------

    def _open_tabs(self) -> list[Tab]:
        return [tab for instance in self._instances.values() for tab in instance.tabs]

    def _staying_tabs(self) -> int:
        """The open tabs that count against a total budget (`Tab.counts_against_cap`)."""
        return sum(1 for tab in self._open_tabs() if tab.counts_against_cap)

    def tabs(self, instance_id: str | int | None = None) -> list[TabInfo]:
        """Every open tab (of one instance, if given), from kept state: no browser round trip."""
        if instance_id is not None:
            return self.instance(instance_id).tab_infos()
        return [info for instance in self._instances.values() for info in instance.tab_infos()]

    def tab(self, tab_id: int | str) -> Tab:
        """The open tab with this id (an int, its decimal string, or its full CDP target id; an id
        of another type, such as 3.0 or True, raises TypeError).

        Never falls back to another tab: an unknown id raises TabNotFoundError listing open tabs.
        For a tab of an instance lost with Playwright's driver, whose browser keeps it, the error
        says so and how to reach the tab again (`kept_by`), whichever check found the loss.
        """
        check_tab_id(tab_id, text=True)
        key = tab_id
        if isinstance(tab_id, str):
            number = decimal_id(tab_id)
            if number is None:  # a CDP target id, or nothing
                for instance in self._instances.values():
                    found = instance.tab_for_target(tab_id.strip())
                    if found is not None:
                        return found
                named = tab_id.strip()
                given = self._by_target.get(named) or self._by_target.get(named.upper())
                if given is not None:  # a tab that closed: said as by its number
                    return self.tab(given)
                raise TabNotFoundError(tab_id, self._open_tabs(), reason=id_text_advice(tab_id))
            key = number
        assert isinstance(key, int)
        for instance in self._instances.values():
            found = instance.get_tab(key)
            if found is not None:
                return found
        lost = [i for i in self._instances.values() if i.state == "lost"]
        for instance in lost:
            kept_by = instance.kept_tab_loss(key)
            if kept_by is not None:  # the browser still has the tab: the loss says how to reach it
                raise TabNotFoundError(key, self._open_tabs(), reason=kept_by.fact, kept_by=kept_by)
        reason = (
            "Instance " + ", ".join(f"{i.id} was lost ({i.lost_reason})" for i in lost) + "." if lost else ""
        )
        closed = [e for e in self.events.history(tab_id=key) if e.type == "tab_closed"]
        if closed:
            reason = f"{closed_reason(closed[-1].data.get('by'))} {reason}"
        raise TabNotFoundError(
            key,
            self._open_tabs(),
            reason=reason.strip(),
            no_instance=self._no_new_tab(),
            no_room=self._no_room(),
        )

    def _no_new_tab(self) -> InstanceError | None:
        """Why a new tab cannot be opened now, when that is so: no instance is open, or the default
        instance was lost and a call does not replace it (only the user can bring the user's
        browser back through the extension; nothing connects a closed CDP browser again), or the
        manager is closed. Opening a tab is then no way on."""
        if self._closed:  # it said "No tab is open: open one."
            return manager_closed()
        default = self.default_instance
        if default is None:
            return self._no_default()
        if default.state == "lost":
            try:
                default.ensure_usable()
            except InstanceLostError as lost:
                if lost.replacement in ("pair", "extension") or lost.replacement is None:
                    return lost
        return None

    def _no_room(self) -> TabLimitError | None:
        """Why this manager, which has no open tab, cannot open one either, when that is so: the
        managers sharing its total tab budget hold every tab it allows (it has none to close)."""
        budget = self.rules.budget
        if budget is None or not budget.full or self._open_tabs():
            return None
        return TabLimitError("", budget.used, budget.limit, self.rules.tab_limit_policy, total=True, own=0)

    def ever_opened(self, tab_id: int) -> bool:
        """Whether a tab of this manager ever had this id: open now, or closed since."""
        check_tab_id(tab_id)
        return tab_id in self._given

    def instance_of(self, tab: Tab) -> Instance:
        return self.instance(tab.instance_id)

    def info(self, tab: Tab) -> TabInfo:
        return self.instance_of(tab).info_of(tab)

    def active_tab(self, instance_id: str | int | None = None) -> Tab:
        self._check_open()  # its instances are closed, and "list the open ones" would find none
        instance = self.instance(instance_id)
        instance.ensure_usable()
        tab = instance.active_tab
        if tab is None:
            raise TabNotFoundError(
                "(active)", self._open_tabs(), no_active_in=instance.id, no_room=self._no_room()
            )
        return tab

    def resolve(self, tab_id: int | str | None = None, *, instance_id: str | int | None = None) -> Tab:
        """`tab_id`'s tab, or the active tab of the (default) instance when it is None."""
        if tab_id is None:
            return self.active_tab(instance_id)
        tab = self.tab(tab_id)
        if instance_id is not None:
            instance = self.instance(instance_id)
            if tab.instance_id != instance.id:
                raise TabNotFoundError(
                    tab_id, instance.tabs, reason=f"It belongs to instance {tab.instance_id}."
                )
        return tab

    async def new_tab(
        self, url: str | None = None, *, background: bool = False, instance_id: str | int | None = None
    ) -> Tab:
        """Open a tab (activated unless `background`), optionally loading `url`."""
        self._check_open()  # not "instance closed ... list the instances": nothing can be listed
        return await self.instance(instance_id).new_tab(url, background=background)

    async def close_tab(self, tab_id: int | str) -> CloseResult:
        """Close a tab; if it was active, the previously active tab becomes active."""
        tab = self.tab(tab_id)
        instance = self.instance_of(tab)
        try:
            await instance.close_tab(tab)
        except LastTabError as exc:
            exc.elsewhere = sum(1 for t in self._open_tabs() if t.instance_id != instance.id)
            raise
        active = instance.active_tab
        return CloseResult(tab.id, active.id if active else None, instance_gone=instance.state != "open")

    async def close_others(self, keep_tab_id: int | str) -> list[int]:
        """Close every tab of the kept tab's instance except it, pinned tabs and the user's own
        (`Tab.users_own`), all at once; returns the closed ids. When a close fails, the others
        still happen and the first failure is raised."""
        keep = self.tab(keep_tab_id)
        instance = self.instance_of(keep)
        instance.activate(keep)
        # A tab another call closes already is left to that call.
        doomed = [
            tab
            for tab in instance.tabs
            if not (tab is keep or tab.pinned or tab.users_own or tab.closing_cause is not None)
        ]
        outcomes = await asyncio.gather(*(instance.close_tab(tab) for tab in doomed), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return [tab.id for tab in doomed]

    def activate(self, tab_id: int | str) -> Tab:
        tab = self.tab(tab_id)
        self.instance_of(tab).activate(tab)
        return tab

    def pin(self, tab_id: int | str, pinned: bool = True) -> Tab:
        """Pinned tabs are kept by close_others and by the tab cap."""
        if not isinstance(pinned, bool):  # "no" was kept, and counted as pinned
            raise TypeError(f"pinned must be True or False, not {pinned!r}")
        tab = self.tab(tab_id)
        tab.pinned = pinned
        return tab

    async def refresh(self) -> None:
        """Re-read titles and URLs of all tabs: one round trip per instance, whatever the tab count."""
        await asyncio.gather(*(i.refresh() for i in self._instances.values()))

    async def settle(self, timeout: float = 5.0, *, grace: float = NEW_TAB_GRACE) -> None:
        """Wait until every tab discovered so far is ready and announced, every tab a page asked
        for has arrived, and every close is reported. After Playwright work on `tab.page`, also at
        least `grace` seconds, for a tab a script opens a moment after a click returned (tabpilot's
        own actions wait for those themselves: 0 will do after them)."""
        check_seconds(timeout, "timeout")
        if grace != 0:
            check_seconds(grace, "grace")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await asyncio.gather(*(i.settle(timeout, grace=grace) for i in list(self._instances.values())))
            # Waiting on several instances passes through the event loop after each found itself
            # settled, where a tab may still leave or come: only a check with nothing awaited
            # after it lets the caller read tabs and events of one moment.
            timeout, grace = deadline - loop.time(), 0.0
            if timeout <= 0 or all(i.quiet() for i in list(self._instances.values())):
                return


__all__ = ["CloseResult", "TabManager"]
