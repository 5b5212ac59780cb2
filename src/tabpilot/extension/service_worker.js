// tabpilot's service worker: lets a tabpilot server on this computer drive the tabs in scope.
//
// Scope: the tabs the agent opened (kept in a tab group named "tabpilot"), the tabs those open
// (popups, links), and the tabs the user shares with the action button; with the server's scope
// "all", every tab the debugger can attach to. A tab out of scope is never attached, listed or
// closed: the server's requests name tabs, and this worker refuses every one it has not got.
//
// Trust: the worker talks only to 127.0.0.1, and only to the server the user approved on the
// connect page (connect.html?port=P&token=T, or its form). The server checks this extension's
// Origin and the token.
//
// Wire protocol (JSON text frames on ws://127.0.0.1:PORT/extension?token=T&browser=B, B: this
// profile's own id, made once: the server tells this browser's return from another's by it):
//   server -> worker  {type: "welcome", scope: "agent"|"all", protocol, relay, hold}
//                     {id, method: "cdp"|"createTab"|"closeTab"|"activateTab"|"release"|"hold", params}
//                     {type: "pong"}
//   worker -> server  {type: "hello", protocol, version, userAgent, tabs: [record],
//                      left: [{tabId, reason}]}  (tabs that left scope before the hello, still open)
//                     {id, result} | {id, error: {code, message}}
//                     {type: "tab", event: "opening", tab: record}  (attach under way;
//                                                                    no `fresh` nor context id)
//                     {type: "tab", event: "created"|"updated", tab: record}
//                     {type: "tab", event: "removed", tabId, reason}
//                       (reason: "closed"; "windowClosed": closed with its window, never by its own
//                       page; "userClosed": a tab a page opened, which the browser closed (its X,
//                       Ctrl-W), not its page; "unshared" | "canceled": the user took it back;
//                       "detached": out of reach)
//                     {type: "cdp", tabId, sessionId?, method, params}   (a debugger event)
//                     {type: "ping"}                                     (every 20 s)
//   `release`: no agent uses the tabs now (the server's last CDP client went: the agent closed
//   the browser's instance): the worker lets go of every tab (Chrome's debugging bar goes), which
//   stays in scope, its badge saying no agent holds it. `hold` (answered {tabs: [record]}): an
//   agent uses them again, attached afresh. A welcome with `hold: false` comes to a server whose
//   agent let go: the worker attaches none until it holds them.
//   The worker closes the socket with code 4000 when the user pairs it with another server, 4001
//   when the user makes it forget the server: it does not come back, and the server says why. The
//   server closes it with 4002 when another browser is connected to it: the worker tries again
//   later, and its connect page says so.
//   record: {tabId, targetId, browserContextId, windowId, pinned, url, title, openerTabId, fresh}
//   (`fresh`: the debugger was attached just now; false when the attachment outlived a restart
//   of this worker, with every CDP domain the server enabled still on. `relay` names the server's
//   state: attachments kept for another one, or whose events did not all reach the server, are
//   let go and attached afresh.)
"use strict";

const HOST = "127.0.0.1";
const PROTOCOL = 1;
const GROUP_TITLE = "tabpilot";
const HEARTBEAT_MS = 20000; // Chrome stops a worker idle for 30 s; a message sent resets that.
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 5000;
const ALARM = "tabpilot-reconnect";
// Unpacked extensions may use short alarm periods (packed ones get 30 s): the alarm wakes a
// stopped worker so it reconnects within seconds.
const ALARM_PERIOD_MINUTES = 0.05;
const CLOSE_PAIRED_ELSEWHERE = 4000;
const CLOSE_FORGOTTEN = 4001;
const CLOSE_ANOTHER_BROWSER = 4002;

const state = {
  server: null, // {port, token}: the approved server
  mode: "agent", // the server's scope: "agent" or "all"
  files: false, // the server's URL policy allows file: pages (else the debugger never stays on one)
  scope: new Map(), // tabId -> {reason: "agent"|"opened"|"shared"|"all", targetId}
  socket: null,
  welcomed: false,
  held: true, // an agent of the server uses the tabs in scope (see `release` above)
  status: "unpaired",
  backoff: BACKOFF_MIN_MS,
  nextAttempt: 0,
  attaching: new Map(), // tabId -> Promise<record>
  attached: new Set(), // tabs whose debugger this worker holds
  windowOpens: new Map(), // tabId -> [{url, at}]: windows the pages of a tab in scope asked for lately
  relay: null, // the server state the kept attachments were made for (the welcome's `relay`)
  browser: "", // this profile's own id (see the wire protocol)
  early: [], // debugger events that came before the server welcomed this worker (see onEvent)
  lostEarly: new Set(), // tabs some of whose early events did not fit
  leftEarly: new Map(), // tabId -> reason: tabs that left scope before the hello (told in it)
  front: new Map(), // windowId -> the tab it shows: Chrome draws no other (a screenshot of one waits for ever)
  closing: new Set(), // tabs the agent is closing (closeTab): their beforeunload dialog is accepted
  lastInput: null, // {tabId, at}: the tab in scope the agent last sent a click or a key to
  hidden: new Map(), // tabId -> when the page of a tab a page opened was hidden (see UNLOAD_SCRIPT)
  unloadWatched: new Set(), // tabs whose attachment runs UNLOAD_SCRIPT
};
// A restarted worker gets the events of the attachments that outlived the old one at once (they
// are what wakes it); they are kept, up to this many, and handed on after the hello.
const EARLY_EVENTS_MAX = 10000;
const HIDDEN_TAB = "tabpilot-hidden-tab"; // the server reads it in the error of such a screenshot
const WINDOW_OPEN_MEMORY_MS = 10000;
// A tab a middle click or a modifier click opens comes within this long of the agent's input.
const INPUT_MEMORY_MS = 3000;
const CLOSED = ["closed", "windowClosed", "userClosed"]; // the reasons of a tab that closed (not one that left scope)
// Whether the browser or its own page closed a tab a page opened: Chrome says neither. The browser
// (the tab's X, Ctrl-W) hides the page before the tab goes; a page that closes itself
// (window.close()) is gone before it could say so. So the top document of such a tab tells the
// worker, from a world of its own that its page cannot see, when it starts and when it is hidden.
const UNLOAD_BINDING = "tabpilotPageHidden";
const UNLOAD_WORLD = "tabpilot-unload";
const UNLOAD_SCRIPT = `if (window === top && typeof self[${JSON.stringify(UNLOAD_BINDING)}] === "function") {
  const tell = self[${JSON.stringify(UNLOAD_BINDING)}];
  tell("start");
  addEventListener("pagehide", (event) => event.persisted || tell("hidden"));
}`;
const UNLOAD_MEMORY_MS = 3000; // how long before a tab goes its page was hidden, at most

const ready = load();

async function load() {
  const stored = await chrome.storage.local.get(["server", "scope", "mode", "files", "relay", "browser"]);
  state.browser = stored.browser || crypto.randomUUID();
  if (!stored.browser) await chrome.storage.local.set({ browser: state.browser });
  state.server = stored.server || null;
  state.relay = stored.relay || null;
  state.mode = stored.mode === "all" ? "all" : "agent";
  state.files = stored.files === true;
  state.status = state.server ? "disconnected" : "unpaired";
  // Tab ids and target ids of a previous browser run name no tab now (or other ones): keep an
  // entry only while its tab still has the target it had.
  const targets = new Map();
  for (const target of await chrome.debugger.getTargets()) {
    if (target.tabId !== undefined) targets.set(target.tabId, target.id);
  }
  for (const [key, entry] of Object.entries(stored.scope || {})) {
    const tabId = Number(key);
    if (targets.has(tabId) && (!entry.targetId || entry.targetId === targets.get(tabId))) {
      state.scope.set(tabId, entry);
    }
  }
  await saveScope();
  for (const tab of await chrome.tabs.query({ active: true })) state.front.set(tab.windowId, tab.id);
  if (state.server) {
    chrome.alarms.create(ALARM, { periodInMinutes: ALARM_PERIOD_MINUTES });
  }
  await paintAllBadges();
}

function saveScope() {
  return chrome.storage.local.set({ scope: Object.fromEntries(state.scope) });
}

function message(error) {
  return String((error && error.message) || error);
}

// -- the connection to the server ----------------------------------------------------------------

function send(payload) {
  const socket = state.socket;
  if (socket && socket.readyState === WebSocket.OPEN && state.welcomed) {
    socket.send(JSON.stringify(payload));
  }
}

async function connect() {
  await ready;
  if (!state.server || state.socket || Date.now() < state.nextAttempt) return;
  const { port, token } = state.server;
  let socket;
  try {
    const browser = encodeURIComponent(state.browser);
    socket = new WebSocket(`ws://${HOST}:${port}/extension?token=${encodeURIComponent(token)}&browser=${browser}`);
  } catch (error) {
    retryLater("unreachable");
    return;
  }
  state.socket = socket;
  state.welcomed = false;
  state.status = "connecting";
  let heartbeat = 0;
  socket.onmessage = (event) => {
    let payload;
    try {
      payload = JSON.parse(event.data);
    } catch {
      return;
    }
    if (payload.type === "welcome") {
      welcome(socket, payload).catch((error) => console.warn("tabpilot: welcome failed", error));
      heartbeat = setInterval(() => send({ type: "ping" }), HEARTBEAT_MS);
    } else if (payload.id !== undefined && state.welcomed) {
      answer(payload);
    }
  };
  socket.onclose = (event) => {
    clearInterval(heartbeat);
    if (state.socket !== socket) return;
    const wasWelcomed = state.welcomed;
    const busy = event.code === CLOSE_ANOTHER_BROWSER;
    state.socket = null;
    state.welcomed = false;
    if (wasWelcomed) {
      // The server went away: let go of the tabs (Chrome's "debugging" bar goes with them).
      // They stay in scope and are attached again when a server connects.
      state.backoff = BACKOFF_MIN_MS;
      detachAll();
      paintAllBadges().catch(() => {}); // no server holds them now: their badges say so
    }
    if (busy) state.backoff = BACKOFF_MAX_MS; // the other browser may stay for long
    retryLater(busy ? "busy" : wasWelcomed ? "disconnected" : "unreachable");
  };
}

function retryLater(status) {
  state.status = status;
  state.nextAttempt = Date.now() + state.backoff;
  setTimeout(connect, state.backoff);
  state.backoff = Math.min(state.backoff * 2, BACKOFF_MAX_MS);
}

async function welcome(socket, payload) {
  state.mode = payload.scope === "all" ? "all" : "agent";
  state.files = payload.files === true;
  await chrome.storage.local.set({ mode: state.mode, files: state.files });
  for (const tab of await chrome.tabs.query({})) {
    const entry = state.scope.get(tab.id);
    if (state.mode === "all" && !entry && attachable(tab)) state.scope.set(tab.id, { reason: "all" });
    // Shared only because a previous server asked for every tab: not for this one.
    if (state.mode === "agent" && entry && entry.reason === "all") state.scope.delete(tab.id);
  }
  const kept = payload.relay && payload.relay === state.relay;
  state.relay = payload.relay || null;
  state.held = payload.hold !== false;
  await chrome.storage.local.set({ relay: state.relay });
  for (const tabId of [...state.scope.keys()]) {
    if (!kept || state.lostEarly.has(tabId) || !state.held) {
      await chrome.debugger.detach({ tabId }).catch(() => {}); // attached afresh below, if held
    }
  }
  const records = state.held ? await attachScope() : [];
  if (state.socket !== socket) return;
  const early = kept && state.held ? state.early.filter((event) => !state.lostEarly.has(event.source.tabId)) : [];
  state.early = [];
  state.lostEarly.clear();
  state.welcomed = true;
  state.status = "connected";
  state.backoff = BACKOFF_MIN_MS;
  send({
    type: "hello",
    protocol: PROTOCOL,
    version: chrome.runtime.getManifest().version,
    userAgent: navigator.userAgent,
    tabs: records,
    left: [...state.leftEarly].map(([tabId, reason]) => ({ tabId, reason })),
  });
  state.leftEarly.clear();
  for (const { source, method, params } of early) {
    if (state.attached.has(source.tabId)) {
      send({ type: "cdp", tabId: source.tabId, sessionId: source.sessionId, method, params });
    }
  }
  await paintAllBadges();
}

// Attach to every tab in scope; their records.
async function attachScope() {
  const records = [];
  for (const tabId of [...state.scope.keys()]) {
    try {
      records.push(await attach(tabId));
    } catch (error) {
      // Closed meanwhile, or gone to a page the debugger may not attach to while no server held it
      // (Chrome let go of it then): out of reach, not closed, if it is still there.
      const open = await chrome.tabs.get(tabId).then(() => true, () => false);
      await leave(tabId, open ? "detached" : null);
    }
  }
  await saveScope();
  return records;
}

// Whether an agent holds the tabs in scope now: a server is connected, and its agent uses them.
function live() {
  return state.welcomed && state.held;
}

// `release` and `hold` one after the other, in the order the server sent them.
let holding = Promise.resolve();

function hold(held) {
  const change = holding.then(async () => {
    state.held = held;
    const records = held ? await attachScope() : [];
    if (!held) await detachAll();
    await paintAllBadges();
    return held ? { tabs: records } : {};
  });
  holding = change.catch(() => {});
  return change;
}

// -- requests from the server ----------------------------------------------------------------------

const handlers = {
  cdp({ tabId, sessionId, method, params }) {
    // Sent at once, in arrival order: commands to one tab must not overtake each other. Those for a
    // tab still being attached wait for the attach, in order.
    const target = sessionId ? { tabId, sessionId } : { tabId };
    if (method === "Page.captureScreenshot" && !sessionId && ![...state.front.values()].includes(tabId)) {
      // Chrome draws only the tab each window shows: the capture would wait for a picture for ever.
      throw new Error(`${HIDDEN_TAB}: tab ${tabId} is behind another tab of its window`);
    }
    if (method.startsWith("Input.")) state.lastInput = { tabId, at: Date.now() };
    const send = async () => {
      const result = await chrome.debugger.sendCommand(target, method, params || {});
      if (method === "Runtime.enable" && !sessionId) watchUnload(tabId);
      return result;
    };
    const attaching = state.attaching.get(tabId);
    if (attaching) return attaching.then(send);
    if (!state.attached.has(tabId)) throw new Error(`tab ${tabId} is not shared with tabpilot`);
    return send();
  },

  async createTab({ url }) {
    const windowId = await agentWindow();
    const tab = await chrome.tabs.create({ windowId, url: url || "about:blank", active: false });
    state.scope.set(tab.id, { reason: "agent" });
    await saveScope();
    await group(tab);
    return attach(tab.id);
  },

  async closeTab({ tabId }) {
    if (!state.scope.has(tabId)) throw new Error(`tab ${tabId} is not shared with tabpilot`);
    // Chrome's tabs.remove asks a page with a beforeunload handler first (a close by CDP does
    // not): its dialog is accepted as it opens (onEvent), or the close would wait for ever.
    state.closing.add(tabId);
    try {
      const tabs = await chrome.tabs.query({});
      if (tabs.length === 1 && tabs[0].id === tabId) {
        // Chrome's last tab: Chrome would quit with it (on Linux and Windows). The agent closes its
        // tab, not the user's browser: a new tab page takes its place, as after Ctrl-T.
        await chrome.tabs.create({ windowId: tabs[0].windowId, active: true });
      }
      await chrome.tabs.remove(tabId);
    } finally {
      state.closing.delete(tabId);
    }
    return {};
  },

  release() {
    return hold(false);
  },

  hold() {
    return hold(true);
  },

  async activateTab({ tabId }) {
    if (!state.scope.has(tabId)) throw new Error(`tab ${tabId} is not shared with tabpilot`);
    // The tab comes to the front of its window. Its window comes to the front of the screen only
    // from the window of the agent's tab group, when the user is in it (a sign-in popup of the
    // agent's page): never over a window the user works in, nor over another program.
    const tab = await chrome.tabs.update(tabId, { active: true });
    if (await agentsWindowFocused(tab.windowId)) await chrome.windows.update(tab.windowId, { focused: true });
    return {};
  },
};

function answer(request) {
  let result;
  try {
    const handler = Object.hasOwn(handlers, request.method) ? handlers[request.method] : null;
    if (!handler) throw new Error(`unknown request ${request.method}`);
    result = Promise.resolve(handler(request.params || {}));
  } catch (error) {
    result = Promise.reject(error);
  }
  result.then(
    (value) => send({ id: request.id, result: value ?? {} }),
    (error) => send({ id: request.id, error: errorOf(error) }),
  );
}

function errorOf(error) {
  // chrome.debugger reports a CDP error as the protocol's own JSON ({"code", "message"}).
  const text = message(error);
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed.message === "string") {
      return { code: parsed.code ?? -32000, message: parsed.message, data: parsed.data };
    }
  } catch {
    // not JSON: a plain extension error
  }
  return { code: -32000, message: text };
}

// -- tabs in scope -------------------------------------------------------------------------------

// Whether the agent may have a tab at this page. Not the browser's own pages, nor an extension's
// (this one's connect page runs with its powers: every tab, the pairing), nor local files unless
// the server's URL policy allows them: the debugger would follow a tab there by its history or a
// link, where the agent's own navigation is refused.
function attachable(tab) {
  const url = tab.url || tab.pendingUrl || "";
  if (/^file:/i.test(url)) return state.files;
  return !/^(chrome|chrome-extension|chrome-untrusted|devtools|edge|view-source):/i.test(url);
}

function attach(tabId) {
  let pending = state.attaching.get(tabId);
  if (!pending) {
    pending = attachNow(tabId);
    state.attaching.set(tabId, pending);
    const forget = () => state.attaching.delete(tabId);
    pending.then(forget, forget);
  }
  return pending;
}

async function attachNow(tabId) {
  let fresh = true;
  try {
    await chrome.debugger.attach({ tabId }, "1.3");
  } catch (error) {
    // Attached already: by this extension before its worker restarted (the commands below
    // work), or by someone else (they fail, and the tab cannot be in scope).
    if (!/already attached/i.test(message(error))) throw error;
    fresh = false;
  }
  const { targetInfo } = await chrome.debugger.sendCommand({ tabId }, "Target.getTargetInfo");
  state.attached.add(tabId);
  const entry = state.scope.get(tabId);
  if (entry) entry.targetId = targetInfo.targetId;
  state.unloadWatched.delete(tabId);
  const tab = await chrome.tabs.get(tabId);
  return {
    ...tabRecord(tab),
    targetId: targetInfo.targetId,
    browserContextId: targetInfo.browserContextId,
    url: tab.url || targetInfo.url,
    title: tab.title || targetInfo.title,
    fresh,
  };
}

// Have the top document of a tab a page opened tell when it starts and when it is hidden (see
// UNLOAD_SCRIPT), its current one too. Once the CDP clients enabled the Runtime domain: a binding
// reaches only the worlds made after that.
async function watchUnload(tabId) {
  if (state.scope.get(tabId)?.reason !== "opened" || state.unloadWatched.has(tabId)) return;
  state.unloadWatched.add(tabId);
  try {
    await chrome.debugger.sendCommand({ tabId }, "Runtime.addBinding", {
      name: UNLOAD_BINDING,
      executionContextName: UNLOAD_WORLD,
    });
    await chrome.debugger.sendCommand({ tabId }, "Page.addScriptToEvaluateOnNewDocument", {
      source: UNLOAD_SCRIPT,
      worldName: UNLOAD_WORLD,
      runImmediately: true,
    });
  } catch {
    // The tab went meanwhile; or an older Chrome: its closes are told as its page's, as before.
  }
}

function tabRecord(tab) {
  return {
    tabId: tab.id,
    windowId: tab.windowId,
    pinned: tab.pinned,
    url: tab.url || tab.pendingUrl || "",
    title: tab.title || "",
    // Chrome's own openerTabId names the active tab when a background tab opens one: the opener
    // in scope that asked for the window is the one that counts.
    openerTabId: state.scope.get(tab.id)?.opener ?? null,
    // The user's own tab (shared by them, or as every tab is), not one the agent or its tabs opened.
    shared: ["shared", "all"].includes(state.scope.get(tab.id)?.reason),
  };
}

function detachAll() {
  const tabs = [...state.attached];
  state.attached.clear();
  return Promise.all(tabs.map((tabId) => chrome.debugger.detach({ tabId }).catch(() => {})));
}

async function enter(tab, reason, opener = null) {
  const tabId = tab.id;
  if (state.scope.has(tabId)) return;
  state.scope.set(tabId, opener === null ? { reason } : { reason, opener });
  saveScope().catch(() => {});
  paintBadge(tabId).catch(() => {});
  if (!live()) return; // attached when an agent holds the tabs again
  // Announce the tab by its target at once (the action that opened it hears of it now, not after
  // the attach); commands for it wait for the attach (see handlers.cdp).
  const attaching = attach(tabId);
  attaching.catch(() => {}); // awaited below
  const target = (await chrome.debugger.getTargets()).find((t) => t.tabId === tabId);
  if (target) send({ type: "tab", event: "opening", tab: { ...tabRecord(tab), targetId: target.id } });
  try {
    send({ type: "tab", event: "created", tab: await attaching });
  } catch (error) {
    await leave(tabId, target ? "detached" : null);
  }
}

// Take a tab out of scope; tell the server why (`reason`), unless null (it never heard of it).
async function leave(tabId, reason) {
  state.windowOpens.delete(tabId);
  state.hidden.delete(tabId);
  state.unloadWatched.delete(tabId);
  if (!state.scope.delete(tabId)) return;
  await saveScope();
  if (state.attached.delete(tabId)) {
    chrome.debugger.detach({ tabId }).catch(() => {});
  }
  if (reason && state.welcomed) send({ type: "tab", event: "removed", tabId, reason });
  else if (reason && !CLOSED.includes(reason)) state.leftEarly.set(tabId, reason); // told in the hello
  await paintBadge(tabId);
}

async function agentWindow() {
  try {
    const window = await chrome.windows.getLastFocused({ windowTypes: ["normal"] });
    if (window && window.id !== undefined) return window.id;
  } catch {
    // no normal window: open one below
  }
  const window = await chrome.windows.create({ focused: false });
  return window.id;
}

// Whether Chrome's focused window (the user's own screen, Chrome in front of other programs) is
// one with the agent's tab group, other than `windowId`.
async function agentsWindowFocused(windowId) {
  try {
    const window = await chrome.windows.getLastFocused();
    if (!window.focused || window.id === windowId) return false;
    return (await chrome.tabGroups.query({ title: GROUP_TITLE, windowId: window.id })).length > 0;
  } catch {
    return false; // no window is focused
  }
}

async function group(tab) {
  try {
    const [existing] = await chrome.tabGroups.query({ title: GROUP_TITLE, windowId: tab.windowId });
    if (existing) {
      await chrome.tabs.group({ tabIds: [tab.id], groupId: existing.id });
    } else {
      const groupId = await chrome.tabs.group({ tabIds: [tab.id], createProperties: { windowId: tab.windowId } });
      await chrome.tabGroups.update(groupId, { title: GROUP_TITLE, color: "blue" });
    }
  } catch (error) {
    // Popup windows have no tab groups; the tab is in scope all the same.
  }
}

// -- the action button: share or stop sharing a tab ----------------------------------------------------

const TITLE_UNPAIRED = "tabpilot: click to pair with a server";
const TITLE_SHARE = "tabpilot: click to share this tab with the agent";
const TITLE_ON = "tabpilot can see and control this tab (click to stop sharing it)";
// The agent's tab, kept for the next server after the user made the extension forget its own.
const TITLE_KEPT = "tabpilot: this tab of the agent's goes to the next server you pair with (click to pair with a server)";
// In scope, but no server holds it now (stopped, or the link dropped): said so, not "ON".
const TITLE_WAITING =
  "tabpilot: this tab stays shared, but no tabpilot server is connected now; the agent gets it " +
  "again when its server is back (click to stop sharing it)";
// In scope, the server connected, but its agent let go of the tabs (it closed this browser's instance).
const TITLE_LET_GO =
  "tabpilot: this tab stays shared, but the agent let go of this browser's tabs; it gets it again " +
  "when it connects this browser again (click to stop sharing it)";

async function paintBadge(tabId) {
  const shared = state.scope.has(tabId);
  const held = live();
  try {
    await chrome.action.setBadgeText({ tabId, text: shared ? (held ? "ON" : "WAIT") : "" });
    if (shared) await chrome.action.setBadgeBackgroundColor({ tabId, color: held ? "#1a7f37" : "#777777" });
    await chrome.action.setTitle({
      tabId,
      title: !state.server
        ? shared
          ? TITLE_KEPT
          : TITLE_UNPAIRED
        : shared
          ? held
            ? TITLE_ON
            : state.welcomed
              ? TITLE_LET_GO
              : TITLE_WAITING
          : TITLE_SHARE,
    });
  } catch {
    // the tab closed meanwhile
  }
}

async function paintAllBadges() {
  // The title of the tabs painted by none of these (the ones opened later): Chrome's default is the
  // manifest's, the unpaired one.
  await chrome.action.setTitle({ title: state.server ? TITLE_SHARE : TITLE_UNPAIRED });
  for (const tab of await chrome.tabs.query({})) await paintBadge(tab.id);
}

// The action button: share the tab with the agent, or stop sharing it (unpaired: pair first).
async function toggleSharing(tab) {
  await ready;
  if (!state.server) {
    await chrome.tabs.create({ url: chrome.runtime.getURL("connect.html") });
  } else if (state.scope.has(tab.id)) {
    await leave(tab.id, "unshared");
  } else if (attachable(tab)) {
    await enter(tab, "shared");
  } else {
    // Said where the user looks after a click that changed nothing (Chrome resets it as the tab
    // navigates).
    const files = state.files ? "" : ", local files";
    await chrome.action.setTitle({
      tabId: tab.id,
      title: `tabpilot cannot share this page: the browser's own pages, extension pages${files} stay out of the agent's reach`,
    });
  }
}

chrome.action.onClicked.addListener(toggleSharing);

// -- browser events --------------------------------------------------------------------------------------

// The tab in scope that opened `tab`: the one whose page asked for a window at its URL lately
// (Page.windowOpen comes before tabs.onCreated), else, for a link the agent middle-clicked or
// modifier-clicked (no Page.windowOpen), the tab it clicked just now. Not Chrome's openerTabId: it
// names the tab in front of the window, so a window the user's own tab opens behind the agent's
// would become the agent's, and a tab the agent's click opens behind the user's would not.
function openerInScope(tab) {
  const url = tab.pendingUrl || tab.url || "";
  const now = Date.now();
  for (const [tabId, opens] of state.windowOpens) {
    const index = opens.findIndex((open) => now - open.at < WINDOW_OPEN_MEMORY_MS && (open.url === url || !url));
    if (index >= 0 && state.scope.has(tabId)) {
      opens.splice(index, 1);
      return tabId;
    }
  }
  // A link's new tab has no page yet; one that comes with its page (`url`, `title`) is the user's
  // "Duplicate" (Chrome names the tab duplicated as its opener), whatever the agent just did.
  const input = state.lastInput;
  const clicked = tab.openerTabId !== undefined && !tab.url && input && now - input.at < INPUT_MEMORY_MS;
  return clicked && state.scope.has(input.tabId) ? input.tabId : null;
}

chrome.tabs.onCreated.addListener(async (tab) => {
  await ready;
  const opener = openerInScope(tab);
  if (opener !== null && attachable(tab)) {
    await enter(tab, "opened", opener); // a popup, or a link a tab in scope opened
    return;
  }
  if (state.mode === "all" && state.server && attachable(tab)) await enter(tab, "all");
  await keepOutOfAgentsGroup(tab);
});

// Chrome puts a tab the user opens beside a tab of the agent's group (its Duplicate, say) into that
// group: the group shows the agent's tabs, so the user's tab leaves it (it stays where it is in
// the tab strip).
async function keepOutOfAgentsGroup(tab) {
  if (tab.groupId === undefined || tab.groupId === chrome.tabGroups.TAB_GROUP_ID_NONE) return;
  try {
    const group = await chrome.tabGroups.get(tab.groupId);
    const reason = state.scope.get(tab.id)?.reason;
    if (group.title === GROUP_TITLE && reason !== "agent" && reason !== "opened") {
      await chrome.tabs.ungroup(tab.id);
    }
  } catch {
    // the tab or its group went meanwhile
  }
}

chrome.tabs.onUpdated.addListener(async (tabId, change, tab) => {
  await ready;
  if (!state.scope.has(tabId)) {
    if (state.mode === "all" && state.server && change.url && attachable(tab)) await enter(tab, "all");
    return;
  }
  if (change.url && !attachable(tab)) {
    // Chrome lets go of a tab that goes to one of its own pages (onDetach), not of one that goes
    // to an extension's page or a file: let go of it, as out of reach (it stays open).
    await leave(tabId, "detached");
    return;
  }
  if (state.attached.has(tabId) && ("url" in change || "title" in change || "pinned" in change)) {
    send({ type: "tab", event: "updated", tab: tabRecord(tab) });
  }
  if ("status" in change) await paintBadge(tabId); // Chrome resets per-tab badges on navigation
});

chrome.tabs.onActivated.addListener(({ tabId, windowId }) => {
  state.front.set(windowId, tabId);
});

chrome.windows.onRemoved.addListener((windowId) => {
  state.front.delete(windowId);
});

chrome.tabs.onAttached.addListener(async (tabId) => {
  await ready;
  if (state.attached.has(tabId)) {
    send({ type: "tab", event: "updated", tab: tabRecord(await chrome.tabs.get(tabId)) });
  }
});

chrome.tabs.onRemoved.addListener(async (tabId, { isWindowClosing }) => {
  await ready;
  // A page closes its own tab (window.close()), not its window: a tab that goes as its window
  // closes (the user closed a popup's window, or a window of tabs) is never its page's doing; nor
  // is one whose page the browser hid just before (see UNLOAD_SCRIPT), unless the agent closed it.
  const hidden = state.hidden.get(tabId);
  state.hidden.delete(tabId);
  const byBrowser = hidden !== undefined && Date.now() - hidden < UNLOAD_MEMORY_MS && !state.closing.has(tabId);
  await leave(tabId, isWindowClosing ? "windowClosed" : byBrowser ? "userClosed" : "closed");
});

chrome.tabs.onReplaced.addListener(async (addedTabId, removedTabId) => {
  await ready;
  const entry = state.scope.get(removedTabId);
  if (!entry) return;
  await leave(removedTabId, "closed");
  await enter(await chrome.tabs.get(addedTabId), entry.reason);
});

chrome.debugger.onEvent.addListener((source, method, params) => {
  if (method === "Page.windowOpen" && !source.sessionId && state.attached.has(source.tabId)) {
    const now = Date.now();
    const opens = (state.windowOpens.get(source.tabId) || []).filter((o) => now - o.at < WINDOW_OPEN_MEMORY_MS);
    opens.push({ url: params.url, at: now });
    state.windowOpens.set(source.tabId, opens);
  }
  if (source.tabId === undefined) return;
  if (method === "Runtime.bindingCalled" && params.name === UNLOAD_BINDING && !source.sessionId) {
    if (params.payload === "hidden") state.hidden.set(source.tabId, Date.now());
    else state.hidden.delete(source.tabId); // a new document (the tab navigated)
    return; // the worker's own: no client added it
  }
  if (method === "Page.javascriptDialogOpening" && params.type === "beforeunload" && state.closing.has(source.tabId)) {
    const target = source.sessionId ? { tabId: source.tabId, sessionId: source.sessionId } : { tabId: source.tabId };
    chrome.debugger.sendCommand(target, "Page.handleJavaScriptDialog", { accept: true }).catch(() => {});
    return; // the agent closes the tab: nobody is asked
  }
  if (!state.welcomed) {
    // Not connected (yet): a tab's events while this worker starts again are kept for the server.
    if (state.early.length < EARLY_EVENTS_MAX) state.early.push({ source, method, params });
    else state.lostEarly.add(source.tabId);
  } else if (state.attached.has(source.tabId)) {
    send({ type: "cdp", tabId: source.tabId, sessionId: source.sessionId, method, params });
  }
});

chrome.debugger.onDetach.addListener(async (source, reason) => {
  await ready;
  const tabId = source.tabId;
  if (tabId === undefined || !state.attached.delete(tabId)) return;
  if (reason === "canceled_by_user") {
    await leave(tabId, "canceled"); // the user dismissed Chrome's debugging bar: hands off
    return;
  }
  // The tab closed (onRemoved reports it), or went where the debugger may not follow.
  try {
    await chrome.tabs.get(tabId);
  } catch {
    return;
  }
  await leave(tabId, "detached");
});

chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === ALARM) connect();
});

// Listening to these makes Chrome start the worker when the browser starts and when the
// extension is installed, updated or reloaded: it reconnects without waiting for a tab event.
chrome.runtime.onStartup.addListener(() => connect());
chrome.runtime.onInstalled.addListener(() => connect());

// -- pairing (from the connect page) ------------------------------------------------------------------

async function pair(port, token) {
  await ready;
  if (!Number.isInteger(port) || port < 1 || port > 65535 || typeof token !== "string" || !token) {
    throw new Error("a port (1-65535) and a token are needed");
  }
  const same = state.server && state.server.port === port && state.server.token === token;
  // What the user shared, they shared with the server they had paired: another one (another port or
  // token; the extension cannot tell a server restarted with a new token) gets none of it until
  // they share it again.
  if (!same) await takeBackShared();
  state.server = { port, token };
  await chrome.storage.local.set({ server: state.server });
  chrome.alarms.create(ALARM, { periodInMinutes: ALARM_PERIOD_MINUTES });
  if (!same && state.socket) {
    const old = state.socket;
    state.socket = null;
    state.welcomed = false;
    detachAll();
    old.close(CLOSE_PAIRED_ELSEWHERE, "paired with another tabpilot server");
  }
  state.backoff = BACKOFF_MIN_MS;
  state.nextAttempt = 0;
  await connect();
  await paintAllBadges();
}

async function forget() {
  await ready;
  state.server = null;
  await chrome.storage.local.remove("server");
  await chrome.alarms.clear(ALARM);
  const socket = state.socket;
  state.socket = null;
  state.welcomed = false;
  state.status = "unpaired";
  detachAll();
  if (socket) socket.close(CLOSE_FORGOTTEN, "the user made the extension forget this server");
  await takeBackShared();
  await paintAllBadges();
}

// The user took back what they gave: their shared tabs are no server's now (the agent's tabs stay
// in scope, for this server again or the next).
async function takeBackShared() {
  for (const [tabId, entry] of [...state.scope]) {
    if (entry.reason === "shared" || entry.reason === "all") await leave(tabId, "unshared");
  }
}

function statusInfo() {
  return {
    status: state.status,
    port: state.server ? state.server.port : null,
    mode: state.mode,
    tabsInScope: state.scope.size,
    held: state.held,
  };
}

chrome.runtime.onMessage.addListener((request, sender, reply) => {
  // Only this extension's own pages may pair it: web pages cannot open them or message it.
  if (sender.id !== chrome.runtime.id || !String(sender.url || "").startsWith(chrome.runtime.getURL(""))) {
    return false;
  }
  let work;
  if (request.type === "pair") work = pair(Number(request.port), String(request.token || ""));
  else if (request.type === "forget") work = forget();
  else work = ready;
  work.then(
    () => reply({ ok: true, ...statusInfo() }),
    (error) => reply({ ok: false, error: message(error), ...statusInfo() }),
  );
  return true; // answered asynchronously
});

connect();
