"""Rates: the feed's token bucket, and the console limiter the feed puts into a page that logs
past it (see `_feed`)."""

from __future__ import annotations

import time

LIMITER_URL = "tabpilot://console-limit.js"
"""The source URL of the page-side console limiter: its own frames are skipped in locations."""
_LIMITER = (
    """(() => {
  const key = Symbol.for("tabpilot.consoleLimit");
  if (globalThis[key]) return;
  globalThis[key] = true;
  const rate = RATE / 1000, burst = BURST, marker = "MARKER";
  const c = globalThis.console, report = c.debug.bind(c);
  // Errors have a bucket of their own: a flood of other lines never cuts them.
  const bucket = () => ({tokens: burst, last: performance.now()});
  const lines = bucket(), errors = bucket();
  let dropped = 0, droppedErrors = 0, reportedAt = 0, timer = 0;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = 0;
    if (!dropped) return;
    report(marker + dropped + "/" + droppedErrors);
    dropped = droppedErrors = 0;
    reportedAt = performance.now();
  };
  const names = ["log", "info", "warn", "error", "debug", "trace", "dir", "dirxml", "table",
                 "count", "timeLog", "assert", "group", "groupCollapsed"];
  for (const name of names) {
    const original = c[name];
    if (typeof original !== "function") continue;
    c[name] = function (...args) {
      // A passing assertion logs nothing: it is no line, to keep or to count as dropped.
      if (name === "assert" && args[0]) return original.apply(this, args);
      const now = performance.now();
      const error = name === "error" || (name === "assert" && !args[0]);
      const b = error ? errors : lines;
      b.tokens = Math.min(burst, b.tokens + (now - b.last) * rate);
      b.last = now;
      if (b.tokens >= 1) { b.tokens -= 1; return original.apply(this, args); }
      dropped += 1;
      if (error) droppedErrors += 1;
      if (now - reportedAt >= 1000) flush();
      else if (!timer) timer = setTimeout(flush, 1000);
    };
  }
  addEventListener("pagehide", flush);
})();
//# sourceURL="""
    + LIMITER_URL
)


def console_limiter(rate: float, marker: str) -> str:
    """The limiter's source: console calls pass at `rate` a second (bursts of twice that), errors
    (console.error, a failing console.assert) at that rate of their own; the rest are dropped and
    counted, and the counts are logged as `marker` + "dropped/errors among them", at most once a
    second and when the page goes away."""
    return _LIMITER.replace("RATE", repr(rate)).replace("BURST", repr(rate * 2)).replace("MARKER", marker)


class Bucket:
    """A token bucket: `rate` events a second, bursts up to `burst`."""

    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst, self.tokens, self.last = rate, burst, burst, time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
