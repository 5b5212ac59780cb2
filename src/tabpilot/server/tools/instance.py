"""`browser_instance`: many browsers at once, local and remote (SPEC 1 Instance, SPEC 2, SPEC 5).

Result shapes (structured `result`):
- list:     {instances: [{id, kind, endpoint, health, lostReason, default, tabCount, activeTabId,
             headless, pid, userDataDir, replacedBy, unreachable}], defaultInstanceId, count}
- launch:   {instanceId, kind, activeTabId, tabIds, default}
- connect:  {instanceId, kind, endpoint, activeTabId, tabIds, default} (a grid instance's endpoint is
             its WebDriver session URL, http://grid:4444/session/<id>)
             with extension=true before the extension connected: {waiting, listening, connectUrl}
- close:    {success, closedInstanceId, closedTabIds, defaultInstanceId}

Tab ids are unique across instances, so tab tools never need an instance: only `browser_tabs`
`list`/`new` take an optional `instanceId`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import BrowserOptions, Instance, check_file_paths

from ..advice import CONNECT_EXTENSION, instance_line
from ..config import file_roots
from .base import Call, OptionalInstanceId, ToolSpec

InstanceAction = Literal["list", "launch", "connect", "close"]


FLAG_ONLY_OPTIONS = {
    "browser_path": "--browser-path",
    "browser_args": "--browser-arg",
    "cdp_headers": "--cdp-header",
    "downloads_dir": "--downloads-dir",
}
"""Options only the operator sets (command line), and their flags: a tool call could run programs
through them, or write files where it likes."""


def _camel_names() -> dict[str, str]:
    """Each option's field and its name as the tool takes it (camelCase)."""
    return {field: key for key, field in BrowserOptions.mapping_keys().items() if "_" not in key}


def _no_such_option(key: str) -> str:
    """An unknown key of `options`, with the one it likely meant (`user-agent`, written as the
    flag or a config file has it, is `userAgent`) and the options a launch takes, as it takes them."""
    named = _camel_names()
    offered = sorted(name for field, name in named.items() if field not in FLAG_ONLY_OPTIONS)
    as_camel = re.sub(r"[-_]+([a-zA-Z])", lambda m: m[1].upper(), key.lstrip("-"))
    field = BrowserOptions.mapping_keys().get(as_camel)
    close = [named[field]] if field else difflib.get_close_matches(as_camel, list(named.values()), n=2)
    meant = f" (did you mean {' or '.join(close)}?)" if close else ""
    return (
        f"browser_instance launch has no option {key!r}{meant}. Its options: {', '.join(offered)} "
        "(the browser's path, arguments, CDP headers and downloads folder are the server's command line's)."
    )


def launch_options(
    base: BrowserOptions,
    given: dict[str, Any] | None,
    roots: list[str],
    check: Callable[[str, str], None] = lambda _path, _doing: None,
) -> BrowserOptions:
    """The server's browser options with a tool call's on top; files it names must lie in `roots`,
    and pass `check(path, doing)` (absolute paths)."""
    if not given:
        return base

    def checked(files: list[str]) -> list[str]:
        found = check_file_paths(files, roots, doing="read from")
        for file in found:
            check(file, "read")
        return found

    unknown = [key for key in given if key not in BrowserOptions.mapping_keys()]
    if unknown:
        raise ValueError(_no_such_option(unknown[0]))
    options = BrowserOptions.from_mapping(given, base=base, check_files=checked)
    refused = [field for field in FLAG_ONLY_OPTIONS if getattr(options, field) != getattr(base, field)]
    if refused:
        named = _camel_names()
        raise ValueError(
            f"options {', '.join(named[field] for field in refused)} can only be set when the server starts "
            f"(its command line: {', '.join(FLAG_ONLY_OPTIONS[field] for field in refused)})."
        )
    return options


def _opened(call: Call, instance: Instance, verb: str) -> None:
    manager = call.manager
    active = instance.active_tab
    default = manager.default_instance is instance
    tab_ids = [t.id for t in instance.tabs]
    where = f" at {instance.endpoint}" if instance.endpoint and instance.kind != "launched" else ""
    how = (
        "It is the default instance."
        if default
        else f"The default instance is still {manager.default_instance.id if manager.default_instance else None}: "
        f"pass tabId (e.g. {active.id if active else '...'}) to work in this one, activate one of its tabs to "
        f"make it the default, or pass instanceId={instance.id!r} to browser_tabs new."
    )
    call.response.result(
        f"{verb} instance {instance.id} ({instance.kind}{where}) with tab{'s' if len(tab_ids) != 1 else ''} "
        f"{', '.join(map(str, tab_ids)) or '(none)'}. {how}",
        {
            "instanceId": instance.id,
            "kind": instance.kind,
            "endpoint": instance.endpoint,
            "activeTabId": active.id if active else None,
            "tabIds": tab_ids,
            "default": default,
        },
    )
    # The result names every tab and ### Tabs shows them: their tab_opened events would say it again.
    call.response.told("tab_opened", *tab_ids)
    call.response.show_tabs()


async def browser_instance(
    call: Call,
    action: Annotated[InstanceAction, Field()],
    instanceId: Annotated[OptionalInstanceId, Field(description="close: which; list: only this one.")] = None,
    cdpEndpoint: Annotated[
        str | None,
        Field(description="connect: a Chromium's DevTools endpoint (http://host:port or ws://)."),
    ] = None,
    wsEndpoint: Annotated[
        str | None,
        Field(description="connect: a Playwright browser server's ws:// URL."),
    ] = None,
    seleniumGrid: Annotated[
        str | None,
        Field(description="connect: a Selenium Grid 4 URL; starts a session there."),
    ] = None,
    capabilities: Annotated[
        dict[str, Any] | None,
        Field(description="seleniumGrid: WebDriver capabilities."),
    ] = None,
    headless: Annotated[bool | None, Field(description="launch: no window.")] = None,
    extension: Annotated[
        bool | None,
        Field(description="connect: the user's browser via the tabpilot extension."),
    ] = None,
    userDataDir: Annotated[
        str | None,
        Field(description="launch: a profile directory to keep."),
    ] = None,
    options: Annotated[
        dict[str, Any] | None,
        Field(
            description="launch: browser options, e.g. {viewport: '1280x720', userAgent, ignoreHttpsErrors, "
            "proxyServer, initScripts, storageState}."
        ),
    ] = None,
) -> None:
    manager = call.manager
    response = call.response
    if action == "list":
        infos = manager.instance_infos()
        if instanceId is not None:
            infos = [i for i in infos if i.id == manager.instance(instanceId).id]
        default = manager.default_instance
        lines = [f"- {instance_line(i)}" for i in infos] or ["(no instances)"]
        response.result(
            f"{len(infos)} instance{'s' if len(infos) != 1 else ''}:\n" + "\n".join(lines),
            {
                "instances": [i.to_dict() for i in infos],
                "defaultInstanceId": default.id if default else None,
                "count": len(infos),
            },
        )
    elif action in ("launch", "connect") and not call.session.config.instances_allowed:
        raise ValueError(
            f"browser_instance {action} is off on this HTTP server: a client could reach browsers it does not "
            "own. The operator can allow it with --allow-instances. Use the tabs of your session's browser."
        )
    elif action == "close" and not call.session.config.instances_allowed:
        # Closed, the session's browser could not be replaced: launch and connect are off.
        raise ValueError(
            "browser_instance close is off on this HTTP server: your session's browser is the one it can "
            "have (launch and connect are off; the operator can allow them with --allow-instances). Close "
            "tabs with browser_tabs instead; the browser goes when your session ends."
        )
    elif action == "launch":
        # Another browser gets a fresh profile of its own, unless the call names one: the server's
        # --user-data-dir is its first browser's, and one Chromium at a time can use a profile.
        base = manager.options.replace(user_data_dir=None)
        chosen = launch_options(base, options, file_roots(call.session.config), call.session.check_not_others)
        instance = await call.with_progress(
            manager.launch(headless=headless, user_data_dir=userDataDir, options=chosen),
            total=None,
            message="launching a browser",
        )
        _opened(call, instance, "Launched")
    elif action == "connect":
        if sum(map(bool, (cdpEndpoint, wsEndpoint, seleniumGrid, extension))) != 1:
            raise ValueError(
                "connect needs exactly one of cdpEndpoint (a Chromium's DevTools endpoint, http://host:port), "
                "wsEndpoint (a Playwright browser server's ws:// URL), seleniumGrid (a Selenium Grid's "
                "http://host:4444) or extension=true (the user's browser through the tabpilot extension)."
            )
        if capabilities is not None and not seleniumGrid:
            raise ValueError("capabilities apply to a Selenium Grid session: pass seleniumGrid too.")
        if extension:
            await _connect_extension(call)
            return
        # A grid session waits in the grid's queue while every node is busy (up to a minute):
        # progress keeps a client that asked for it from giving up meanwhile.
        if cdpEndpoint:
            connecting, where = manager.connect_cdp(cdpEndpoint), cdpEndpoint
        elif wsEndpoint:
            connecting, where = manager.connect_ws(wsEndpoint), wsEndpoint
        else:
            assert seleniumGrid is not None
            connecting = manager.connect_grid(seleniumGrid, capabilities=capabilities)
            where = (
                f"the Selenium Grid at {seleniumGrid} (a session waits in its queue while every slot is busy)"
            )
        instance = await call.with_progress(connecting, total=None, message=f"connecting to {where}")
        _opened(call, instance, "Connected")
    else:  # close
        if instanceId is None:
            raise ValueError(
                "close needs instanceId: the instance to close (see browser_instance(action='list'))."
            )
        instance = manager.instance(instanceId)
        tab_ids = [t.id for t in instance.tabs]
        was_lost = instance.state == "lost"
        was_default = manager.default_instance is instance
        await manager.close_instance(instance.id)
        if was_lost:
            what = "it had already been lost, and leaves the list"
            if instance.left_running:
                what += f"; {instance.left_running}"
        elif instance.kind == "launched":
            what = "its browser was shut down"
        elif instance.kind in ("cdp", "playwright-server"):
            what = "disconnected; the remote browser keeps running"
        elif instance.kind == "grid":
            what = instance.left_running or "its grid session was ended (the grid stops its browser)"
        elif instance.kind == "extension":
            what = "disconnected; the user's browser and its tabs stay as they are"
        else:
            what = "its browser context was closed"
        default = manager.default_instance
        active = default.active_tab if default is not None and default.state == "open" else None
        # It held the active tab: the tab active before it is active now (most recently used order).
        now_active = f", whose tab {active.id} is now the active tab" if was_default and active else ""
        none = (
            f"none ({CONNECT_EXTENSION} connects the user's browser again)"
            if instance.kind == "extension"
            else "none (launch or connect one)"
        )
        response.result(
            f"Closed instance {instance.id} ({instance.kind}): {what}. "
            f"Default instance: {default.id if default else none}{now_active}.",
            {
                "success": True,
                "closedInstanceId": instance.id,
                "closedTabIds": tab_ids,
                "defaultInstanceId": default.id if default else None,
                "activeTabId": active.id if active else None,
            },
        )
        response.show_tabs()


async def _connect_extension(call: Call) -> None:
    server = call.session.server
    if server is None or server.config.shares_browser:
        raise ValueError(
            "The extension's bridge serves one MCP client: it is available over stdio, not over --http."
        )
    bridge = await server.extension_bridge()
    manager = call.manager
    manager.watch_extension(bridge)
    await manager.extension_connected(15)
    instance = next((i for i in manager.instances if i.kind == "extension" and i.state == "open"), None)
    if instance is not None:
        _opened(call, instance, "Connected")
        return
    call.response.result(
        f"Listening for the tabpilot extension on {bridge.address}; it has not connected yet. Ask the user "
        f"to open {bridge.connect_url} in the browser where the tabpilot extension is installed (once is "
        "enough: it reconnects by itself). The instance appears when it connects: see "
        "browser_instance(action='list').",
        {"waiting": True, "listening": bridge.address, "connectUrl": bridge.connect_url},
    )


TOOLS = [
    ToolSpec(
        "browser_instance",
        browser_instance,
        "List, launch, connect or close browser instances (one of cdpEndpoint, wsEndpoint, seleniumGrid, "
        "extension). Tab ids are unique across instances.",
        ToolAnnotations(title="Manage browser instances", destructive_hint=True, open_world_hint=True),
        action_args={
            "instanceId": ("list", "close"),
            **dict.fromkeys(
                ("cdpEndpoint", "wsEndpoint", "seleniumGrid", "capabilities", "extension"), ("connect",)
            ),
            **dict.fromkeys(("headless", "userDataDir", "options"), ("launch",)),
        },
    )
]
