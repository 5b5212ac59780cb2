"""A noisy page against the server: memory stays bounded and other tabs stay fast.

    .venv/bin/python bench/spam.py                  # 200,000 console lines and 5,000 fetches
    .venv/bin/python bench/spam.py --logs 20000 --fetches 500      # a quicker look

Starts `python -m tabpilot serve` over stdio (the MCP client of the SDK), opens a quiet tab and
measures its snapshot and the tab list (median of several calls); then opens the spam page in
another tab and, while it runs, measures the same calls again and samples the memory of the
server and of Playwright's driver. Afterwards: how far telemetry lagged (the page's last console
line seen), the `dropped` counts, and memory once the spam tab is closed. Loopback only. Prints
one JSON object; the figures go into `make bench` results as `spam.*`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procmem
from mcp_procs import McpProcess, structured_of, tabpilot_server, text_of
from memprobe import driver_rss_mb

from tabpilot.demo.site import LocalSite

SPAM_PAGE = """<h1>Spam</h1><p id="state">running</p><script>
(async () => {{
  const logs = {logs}, fetches = {fetches};
  for (let i = 0; i < logs; i++) {{
    console.log('spam line ' + i);
    if (i % 2000 === 0) await new Promise(r => setTimeout(r, 0));
  }}
  const jobs = [];
  for (let i = 0; i < fetches; i++) jobs.push(fetch('/api/text?n=' + i).catch(() => null));
  await Promise.all(jobs);
  console.log('spam done');
  document.getElementById('state').textContent = 'done';
}})();
</script>"""


def memory(server: McpProcess) -> tuple[float, float]:
    assert server.pid is not None
    return procmem.rss_mb(server.pid) or 0.0, driver_rss_mb(server.pid)


async def timed(server: McpProcess, tool: str, **args: Any) -> float:
    """Milliseconds the call took (a failed call counts as the time it took to fail)."""
    started = time.perf_counter()
    result = await server.raw(tool, args)
    if result.is_error:
        FAILED.append(f"{tool}: {text_of(result)[:160]}")
    return (time.perf_counter() - started) * 1000


FAILED: list[str] = []


async def latencies(server: McpProcess, quiet_tab: int, rounds: int) -> dict[str, float]:
    snaps = [await timed(server, "browser_snapshot", tabId=quiet_tab, full=True) for _ in range(rounds)]
    lists = [await timed(server, "browser_tabs", action="list") for _ in range(rounds)]
    return {"snapshot_ms": statistics.median(snaps), "list_ms": statistics.median(lists)}


async def run(logs: int, fetches: int, rounds: int) -> dict[str, Any]:
    with LocalSite() as site:
        site.set_content("/spam", SPAM_PAGE.format(logs=logs, fetches=fetches))
        async with tabpilot_server() as server:
            listed = structured_of(await server.call("browser_tabs", action="list"))
            quiet = int(listed["result"]["activeTabId"])
            await server.call("browser_navigate", url=site.url("/form"), tabId=quiet)
            before = memory(server)
            quiet_figures = await latencies(server, quiet, rounds)

            opened = structured_of(await server.call("browser_tabs", action="new", url=site.url("/spam")))
            spam_tab = int(opened["result"]["tabId"])
            started = time.monotonic()
            peak = before
            busy: list[dict[str, float]] = []
            done_at: float | None = None
            while time.monotonic() - started < 600:
                busy.append(await latencies(server, quiet, 1))
                now = memory(server)
                peak = (max(peak[0], now[0]), max(peak[1], now[1]))
                state = await server.raw(
                    "browser_evaluate",
                    {"function": "() => document.getElementById('state').textContent", "tabId": spam_tab},
                )
                if not state.is_error and structured_of(state)["result"]["value"] == "done":
                    done_at = time.monotonic() - started
                    break  # (an error: the page is too busy to answer; ask again)
            # How long until telemetry has the page's last line, or has every line kept or counted
            # as dropped (past the rate the last line may be one of the dropped).
            seen_at: float | None = None
            while time.monotonic() - started < 600:
                found = structured_of(
                    await server.call("browser_observe", what="logs", tabId=spam_tab, url=None, limit=1)
                )["result"]
                entries = found.get("entries", [])
                accounted = int(found.get("total_entries_all_tabs") or 0) + int(found.get("dropped") or 0)
                if (entries and entries[-1].get("text") == "spam done") or accounted >= logs + 1:
                    seen_at = time.monotonic() - started
                    break
                await asyncio.sleep(0.2)
            logs_seen = structured_of(
                await server.call("browser_observe", what="logs", tabId=spam_tab, limit=1)
            )
            net_seen = structured_of(
                await server.call("browser_observe", what="network_waterfall", tabId=spam_tab, limit=1)
            )
            await server.call("browser_tabs", action="close", tabId=spam_tab)
            await asyncio.sleep(2)
            after = memory(server)
            during = {k: statistics.median(b[k] for b in busy) for k in ("snapshot_ms", "list_ms")}
            return {
                "logs": logs,
                "fetches": fetches,
                "page_done_s": done_at,
                "telemetry_lag_s": None
                if seen_at is None or done_at is None
                else round(seen_at - done_at, 2),
                "quiet": quiet_figures,
                "during_spam": during,
                "slowdown": {k: round(during[k] / quiet_figures[k], 2) for k in during},
                "server_rss_mb": {"before": before[0], "peak": peak[0], "after_close": after[0]},
                "driver_rss_mb": {"before": before[1], "peak": peak[1], "after_close": after[1]},
                "failed_calls": FAILED,
                "dropped": {
                    "logs": logs_seen["result"].get("dropped"),
                    "network_waterfall": net_seen["result"].get("dropped"),
                },
            }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None, allow_abbrev=False
    )
    parser.add_argument("--logs", type=int, default=200_000)
    parser.add_argument("--fetches", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=7, help="calls per latency median when quiet")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.logs, args.fetches, args.rounds)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
