// The connect page: approves a tabpilot server (connect.html?port=P&token=T, or the form) and
// shows whether the extension is connected to it.
"use strict";

const statusLine = document.getElementById("status");
const texts = {
  unpaired: "Not paired with a tabpilot server yet.",
  connecting: "Connecting to the tabpilot server on 127.0.0.1:PORT…",
  connected: "Connected to the tabpilot server on 127.0.0.1:PORT.",
  disconnected: "The tabpilot server on 127.0.0.1:PORT went away; reconnecting when it is back.",
  busy:
    "Another browser is connected to the tabpilot server on 127.0.0.1:PORT (it serves one at a time); " +
    "this one connects once that one is gone, retrying.",
  unreachable:
    "No answer from a tabpilot server on 127.0.0.1:PORT (not running yet, or the token is wrong); retrying.",
};

function show(info) {
  const text = info.error ? `Error: ${info.error}` : texts[info.status] || info.status;
  statusLine.textContent =
    text.replace("PORT", String(info.port)) +
    (info.status === "connected" ? ` Tabs in scope: ${info.tabsInScope}.` : "") +
    (info.status === "connected" && info.held === false ? " The agent let go of them for now." : "");
  statusLine.className =
    info.status === "connected" ? "connected" : info.error || info.status === "unreachable" ? "problem" : "";
}

async function ask(request) {
  show(await chrome.runtime.sendMessage(request));
}

const query = new URLSearchParams(location.search);
if (query.get("port") && query.get("token")) {
  // Opening this page with a port and a token is the approval; the token leaves the address bar.
  const request = { type: "pair", port: Number(query.get("port")), token: query.get("token") };
  history.replaceState(null, "", location.pathname);
  ask(request);
} else {
  ask({ type: "status" });
}
setInterval(() => ask({ type: "status" }), 1000);

document.getElementById("pair").addEventListener("submit", (event) => {
  event.preventDefault();
  ask({
    type: "pair",
    port: Number(document.getElementById("port").value),
    token: document.getElementById("token").value,
  });
});
document.getElementById("forget").addEventListener("click", () => ask({ type: "forget" }));
