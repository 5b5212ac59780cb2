"""Timing, statistics, progress and reporting shared by every part of the benchmark.

A `Results` holds two kinds of figures: timings (many samples, reported as median and p90) and
single values (a size, a memory reading, a ratio). Targets compare one figure against a limit
and carry the reason when they miss, so the table and the JSON say the same thing.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Unit = Literal["ms", "MB", "chars", "x", "entries", "count", "s", "/s"]


def p90(samples: list[float]) -> float:
    """Nearest-rank 90th percentile: a value that was actually observed, never interpolated."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


@dataclass(slots=True)
class Figure:
    key: str
    section: str
    label: str
    unit: Unit
    samples: list[float] = field(default_factory=list)
    note: str = ""
    given: tuple[float, float, int] | None = None
    """(median, p90, n) computed elsewhere (the telemetry report), when there are no samples here."""

    @property
    def median(self) -> float:
        if self.given is not None:
            return self.given[0]
        return statistics.median(self.samples) if self.samples else math.nan

    @property
    def p90(self) -> float:
        if self.given is not None:
            return self.given[1]
        return p90(self.samples) if self.samples else math.nan

    @property
    def n(self) -> int:
        return self.given[2] if self.given is not None else len(self.samples)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"section": self.section, "label": self.label, "unit": self.unit}
        if self.given is not None:
            data |= {"median": round(self.median, 4), "p90": round(self.p90, 4), "n": self.n}
        elif len(self.samples) > 1:
            data |= {
                "median": round(self.median, 4),
                "p90": round(self.p90, 4),
                "min": round(min(self.samples), 4),
                "max": round(max(self.samples), 4),
                "n": len(self.samples),
            }
        elif self.samples:
            data["value"] = round(self.samples[0], 4)
        if self.note:
            data["note"] = self.note
        return data


@dataclass(slots=True)
class Target:
    name: str
    figure: str
    limit: float
    unit: Unit
    value: float = math.nan
    why: str = ""
    """Why a miss happens (or why there is no figure); empty on a pass."""

    @property
    def status(self) -> Literal["PASS", "MISS", "N/A"]:
        if math.isnan(self.value):
            return "N/A"
        return "PASS" if self.value <= self.limit else "MISS"

    def to_dict(self) -> dict[str, Any]:
        value = None if math.isnan(self.value) else round(self.value, 4)
        return {
            "name": self.name,
            "figure": self.figure,
            "value": value,
            "limit": self.limit,
            "unit": self.unit,
            "status": self.status,
            "why": self.why,
        }


class Results:
    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}
        self.targets: list[Target] = []
        self.notes: list[str] = []
        self.extra: dict[str, Any] = {}

    def figure(self, key: str, section: str, label: str, unit: Unit, note: str = "") -> Figure:
        fig = self.figures.get(key)
        if fig is None:
            fig = self.figures[key] = Figure(key, section, label, unit, note=note)
        return fig

    def value(self, key: str, section: str, label: str, unit: Unit, value: float, note: str = "") -> None:
        self.figures[key] = Figure(key, section, label, unit, [value], note)

    def median(self, key: str) -> float:
        fig = self.figures.get(key)
        return fig.median if fig is not None else math.nan

    def ratio(self, key: str, section: str, label: str, numerator: str, denominator: str) -> float:
        """Record median(numerator) / median(denominator) as a figure of its own."""
        num, den = self.median(numerator), self.median(denominator)
        value = num / den if den and not math.isnan(num) and not math.isnan(den) else math.nan
        if not math.isnan(value):
            self.value(key, section, label, "x", value, note=f"{numerator} / {denominator}")
        return value

    def target(self, name: str, figure: str, limit: float, unit: Unit, why_if_miss: str = "") -> Target:
        fig = self.figures.get(figure)
        value = fig.median if fig is not None else math.nan
        target = Target(name, figure, limit, unit, value)
        if target.status == "MISS":
            target.why = why_if_miss
        elif target.status == "N/A":
            target.why = why_if_miss or "not measured in this run"
        self.targets.append(target)
        return target

    def note(self, text: str) -> None:
        self.notes.append(text)


# -- measuring ---------------------------------------------------------------------------------


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """Run one call; return (milliseconds, its result)."""
    start = time.perf_counter()
    result = await call()
    return (time.perf_counter() - start) * 1000, result


async def repeat(
    fig: Figure,
    call: Callable[[], Awaitable[Any]],
    times: int,
    *,
    progress: Progress | None = None,
    warmup: int = 1,
) -> Any:
    """Time `call` `times` times into `fig` after `warmup` untimed calls; return the last result."""
    result: Any = None
    for _ in range(warmup):
        result = await call()
    for i in range(times):
        if progress is not None:
            progress.update(f"{fig.label} {i + 1}/{times}")
        elapsed, result = await timed(call)
        fig.samples.append(elapsed)
    return result


# -- progress ----------------------------------------------------------------------------------


class Progress:
    """One line on stderr that rewrites itself on a terminal; plain step lines into a log file."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.section = ""
        self._last_plain = ""

    def begin(self, section: str) -> None:
        self.section = section
        self.update("starting")

    def update(self, step: str) -> None:
        elapsed = time.monotonic() - self.start
        line = f"[{elapsed:6.1f}s] {self.section}: {step}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line[:150])
            sys.stderr.flush()
        elif step.split(" ")[0] != self._last_plain:
            # Without a terminal, one line per kind of step keeps a CI log readable.
            self._last_plain = step.split(" ")[0]
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def done(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


# -- reporting ---------------------------------------------------------------------------------


def _fmt(value: float, unit: Unit) -> str:
    if math.isnan(value):
        return "-"
    if unit == "ms":
        return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "MB":
        return f"{value:.1f}"
    if unit == "s":
        return f"{value:.2f}"
    return f"{value:,.0f}"


def render(results: Results) -> str:
    rows: list[tuple[str, str, str, str, str]] = []
    section = None
    for fig in results.figures.values():
        if fig.section != section:
            section = fig.section
            rows.append((f"[{section}]", "", "", "", ""))
        if fig.given is not None or len(fig.samples) > 1:
            median, p90_, n = _fmt(fig.median, fig.unit), _fmt(fig.p90, fig.unit), str(fig.n or "")
        else:
            median, p90_, n = _fmt(fig.median, fig.unit), "", ""
        unit = "" if fig.unit == "x" else fig.unit
        rows.append(("  " + fig.label, median, p90_, n, unit))
    head = ("measurement", "median", "p90", "n", "unit")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]

    def line(r: tuple[str, ...]) -> str:
        return "  ".join(
            (c.ljust(widths[i]) if i in (0, 4) else c.rjust(widths[i])) for i, c in enumerate(r)
        ).rstrip()

    out = [line(head), line(tuple("-" * w for w in widths))]
    out += [line(r) for r in rows]
    if results.targets:
        out += ["", "Targets"]
        for t in results.targets:
            shown = _fmt(t.value, t.unit) + ("" if t.unit == "x" else f" {t.unit}")
            limit = _fmt(t.limit, t.unit) + ("" if t.unit == "x" else f" {t.unit}")
            out.append(f"  {t.status:4}  {t.name}: {shown.strip()} (limit {limit})")
            if t.why:
                out.append(f"        why: {t.why}")
    if results.notes:
        out += ["", "Notes"] + [f"  - {n}" for n in results.notes]
    return "\n".join(out)
