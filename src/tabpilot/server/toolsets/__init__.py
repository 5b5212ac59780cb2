"""Compatible tool sets (`--tools browser-use|browser-tab|foxmcp|pilo`, SPEC 4).

Each module mimics the tools of one system in `../shared/seeds/` closely enough that an agent
written for it works unchanged, on tabpilot's one tab model: the same stable tab ids in every set,
so an id from one set works in all the others. `server/registry.py` registers them;
`server/names.py` lists the combinations whose tool names clash, refused before anything starts
(browser-use's browser_navigate/browser_click/browser_type take other arguments than the default set's).

They answer with `Response.plain` (the other system's exact text, no sections). Their errors,
whoever raises them (the tool, the tool wrapper, the argument check), are worded once per set by
its `ToolCalls.plain_error` when the response is built, so they read as the other system's do. They
act through the library's actions, with dialogs accepted (`dialogs="accept"`) where the system has no
dialog tool. Having no `### Events`, an action says itself when a tab closed by no call (a popup's
window.close()) and which tab is current now (`_common.closed_untold`).
"""
