"""How ``kinformer demo`` shows a run: the live status and the final summary.

:class:`Display` draws a frame of a :class:`~kinformer.cli.demo.app.Demo` (redrawn in place on a
terminal, one plain line per frame otherwise); :class:`WarningCollector` keeps log warnings for
the display instead of printing over it; :func:`summary` prints what the run did and whether the
caches ended equal to the server.
"""

from __future__ import annotations

import collections
import logging
import shutil
import time
from typing import TYPE_CHECKING, TextIO

from kinformer.cli.demo import workload

if TYPE_CHECKING:
    from kinformer.cli.demo.app import Demo

RATE_WINDOW = 0.5  # seconds: events/s is recomputed over at least this long


class Display:
    """Draws the status: redrawn in place on a terminal, one plain line per frame otherwise."""

    def __init__(self, out: TextIO, tty: bool) -> None:
        self._out = out
        self.tty = tty
        self._drawn = 0
        self._last_events = 0
        self._last_time = time.monotonic()
        self.rate = 0.0
        self.warnings: collections.deque[str] = collections.deque(maxlen=2)

    def frame(self, demo: Demo, phase: str) -> None:
        now = time.monotonic()
        events, reconciles, changes, faults = demo.stats.snapshot()
        total = sum(events.values())
        if now - self._last_time >= RATE_WINDOW:  # a shorter span would make a jumpy rate
            self.rate = (total - self._last_events) / (now - self._last_time)
            self._last_events, self._last_time = total, now
        elapsed = now - demo.started
        cached = demo.cached()
        running = sorted(demo.controllers.running_controllers())
        reconnects, relists = demo.watch_counts()
        if not self.tty:
            parts = [f"t={elapsed:.1f}s", f"phase={phase}",
                     f"loaded={demo.loaded}/{demo.options.objects}", f"events/s={self.rate:.0f}"]
            parts += [f"{gvr.resource}={'listing' if n is None else n}" for gvr, n in cached.items()]
            parts += [f"controllers={','.join(running) or '-'}", f"reconnects={reconnects}",
                      f"relists={relists}"]
            self._write([" ".join(parts)])
            return
        until = f" / {demo.options.duration:g}s" if demo.options.duration else " (Ctrl-C stops)"
        lines = [
            f"kinformer demo  {demo.server.url}  {elapsed:5.1f}s{until}  "
            f"churn {demo.options.rate:g}/s",
            f"  phase         {phase}",
            f"  loaded        {demo.loaded}/{demo.options.objects} ConfigMaps in "
            f"{len(workload.DEMO_NAMESPACES)} namespaces" + ("  + Widget CRD" if demo.crd_installed else ""),
            f"  events/s      {self.rate:8.0f}   total {total}  ("
            + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted")) + ")",
            "  cached        " + "   ".join(
                f"{gvr.resource} {'listing…' if n is None else n}" for gvr, n in cached.items()),
            "  controllers   " + (", ".join(f"{name} ({reconciles.get(name, 0)} reconciles)"
                                            for name in running) or "none yet"),
            f"  watches       {reconnects} reconnects, {relists} relists  "
            f"({_plural(faults, 'fault')} injected, {changes} changes made)",
        ]
        lines += [f"  {'last warnings' if i == 0 else '':<13} {w}" for i, w in enumerate(self.warnings)]
        self._write(lines)

    def _write(self, lines: list[str]) -> None:
        if self.tty:
            # a wrapped line would throw off the cursor-up count of the next frame
            width = max(20, shutil.get_terminal_size().columns - 1)
            lines = [line[:width] for line in lines]
            up = f"\x1b[{self._drawn}F" if self._drawn else "\x1b[?25l"
            self._out.write(up + "".join(line + "\x1b[K\n" for line in lines) + "\x1b[J")
            self._drawn = len(lines)
        else:
            self._out.write("".join(line + "\n" for line in lines))
        self._out.flush()

    def close(self) -> None:
        if self.tty:
            self._out.write("\x1b[?25h")
            self._out.flush()


class WarningCollector(logging.Handler):
    """Keeps the last warnings for the display instead of printing them over it."""

    def __init__(self, display: Display) -> None:
        super().__init__(logging.WARNING)
        self._display = display

    def emit(self, record: logging.LogRecord) -> None:
        self._display.warnings.append(f"{record.name}: {record.getMessage()}"[:120])


def summary(out: TextIO, demo: Demo, interrupted: bool, mismatched: list[str], alive: list[str]) -> None:
    """Print what the run did and whether the caches ended equal to the server."""
    events, reconciles, changes, faults = demo.stats.snapshot()
    elapsed = time.monotonic() - demo.started
    total = sum(events.values())
    reconnects, relists = demo.watch_counts_final
    lines = [
        "",
        f"kinformer demo summary ({'interrupted' if interrupted else 'finished'} after {elapsed:.1f}s)",
        f"  workload       {demo.loaded} ConfigMaps in {len(workload.DEMO_NAMESPACES)} namespaces"
        + (", Widget CRD installed" if demo.crd_installed else "") + f"; {changes} changes made",
        "  initial sync   "
        + (f"{demo.synced_after:.2f}s" if demo.synced_after is not None else "not reached"),
        f"  events         {total} handled ({total / elapsed if elapsed else 0:.0f}/s): "
        + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted")),
        "  cached         " + ("   ".join(f"{gvr.resource} {n}" for gvr, n in demo.final_cached.items())
                                or "nothing"),
        "  controllers    " + (", ".join(f"{name} {n} reconciles" for name, n in sorted(reconciles.items()))
                                or "none ran"),
        f"  watches        {reconnects} reconnects, {relists} relists ({_plural(faults, 'fault')} injected)",
    ]
    if demo.synced_after is not None:
        lines.append("  consistency    " + (f"caches differ from the server: {', '.join(mismatched)}"
                                          if mismatched else "every cache matches the server"))
    if alive:
        lines.append(f"  threads        still alive after stop: {', '.join(alive)}")
    else:
        lines.append("  threads        all stopped")
    out.write("\n".join(lines) + "\n")
    out.flush()


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
