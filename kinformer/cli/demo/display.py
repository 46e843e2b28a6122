"""How ``kinformer demo`` shows a run: the live status and the final summary.

What it shows comes as plain values, a :class:`Status` that the demo
(:mod:`kinformer.cli.demo.app`) fills in for each frame: :class:`Display` draws it (redrawn in
place on a terminal, one plain line per frame otherwise); :class:`WarningCollector` keeps log
warnings for the display instead of printing over it; :func:`summary` prints what the run did
and whether the caches ended equal to the server.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import shutil
import time
from typing import TextIO

from kinformer.cli.demo import workload
from kinformer.gvr import GroupVersionResource

RATE_WINDOW = 0.5  # seconds: events/s is recomputed over at least this long


@dataclasses.dataclass(frozen=True)
class Status:
    """A demo run at one moment, as the display shows it."""

    url: str  # the embedded server's
    elapsed: float  # seconds since the demo started
    options: workload.Options
    loaded: int  # ConfigMaps loaded so far
    crd_installed: bool
    events: dict[str, int]  # handled, by kind (initial, added, updated, deleted)
    reconciles: dict[str, int]  # by controller
    changes: int  # made by the churn
    faults: int  # injected
    cached: dict[GroupVersionResource, int | None]  # objects per tracked type; None while listing
    running: list[str]  # controllers running now
    reconnects: int  # watches re-established
    relists: int
    # work queue name -> (depth, retries), from the metrics the queues report
    queues: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)


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

    def frame(self, status: Status, phase: str) -> None:
        now = time.monotonic()
        events = status.events
        total = sum(events.values())
        if now - self._last_time >= RATE_WINDOW:  # a shorter span would make a jumpy rate
            self.rate = (total - self._last_events) / (now - self._last_time)
            self._last_events, self._last_time = total, now
        options = status.options
        if not self.tty:
            parts = [f"t={status.elapsed:.1f}s", f"phase={phase}",
                     f"loaded={status.loaded}/{options.objects}", f"events/s={self.rate:.0f}"]
            parts += [f"{gvr.resource}={'listing' if n is None else n}" for gvr, n in status.cached.items()]
            parts += [f"controllers={','.join(status.running) or '-'}",
                      f"reconnects={status.reconnects}", f"relists={status.relists}"]
            parts += [f"queue:{name}={depth}/{retries}"
                      for name, (depth, retries) in status.queues.items()]
            self._write([" ".join(parts)])
            return
        until = f" / {options.duration:g}s" if options.duration else " (Ctrl-C stops)"
        lines = [
            f"kinformer demo  {status.url}  {status.elapsed:5.1f}s{until}  churn {options.rate:g}/s",
            f"  phase         {phase}",
            f"  loaded        {status.loaded}/{options.objects} ConfigMaps in "
            f"{len(workload.DEMO_NAMESPACES)} namespaces"
            + ("  + Widget CRD" if status.crd_installed else ""),
            f"  events/s      {self.rate:8.0f}   total {total}  ("
            + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted")) + ")",
            "  cached        " + "   ".join(
                f"{gvr.resource} {'listing…' if n is None else n}" for gvr, n in status.cached.items()),
            "  controllers   " + (", ".join(f"{name} ({status.reconciles.get(name, 0)} reconciles)"
                                            for name in status.running) or "none yet"),
            f"  watches       {status.reconnects} reconnects, {status.relists} relists  "
            f"({_plural(status.faults, 'fault')} injected, {status.changes} changes made)",
        ]
        if status.queues:
            lines.append("  work queues   " + ", ".join(
                f"{name} depth {depth} retries {retries}"
                for name, (depth, retries) in status.queues.items()))
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


def summary(out: TextIO, final: Status, synced_after: float | None, interrupted: bool,
            mismatched: list[str], alive: list[str]) -> None:
    """Print what the run did and whether the caches ended equal to the server.

    ``final`` is the run once stopped, ``synced_after`` the seconds its first lists took (None:
    they never completed).
    """
    events = final.events
    elapsed = final.elapsed
    total = sum(events.values())
    cached = {gvr: n for gvr, n in final.cached.items() if n is not None}
    lines = [
        "",
        f"kinformer demo summary ({'interrupted' if interrupted else 'finished'} after {elapsed:.1f}s)",
        f"  workload       {final.loaded} ConfigMaps in {len(workload.DEMO_NAMESPACES)} namespaces"
        + (", Widget CRD installed" if final.crd_installed else "") + f"; {final.changes} changes made",
        "  initial sync   " + (f"{synced_after:.2f}s" if synced_after is not None else "not reached"),
        f"  events         {total} handled ({total / elapsed if elapsed else 0:.0f}/s): "
        + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted")),
        "  cached         " + ("   ".join(f"{gvr.resource} {n}" for gvr, n in cached.items()) or "nothing"),
        "  controllers    " + (", ".join(f"{name} {n} reconciles"
                                          for name, n in sorted(final.reconciles.items())) or "none ran"),
        f"  watches        {final.reconnects} reconnects, {final.relists} relists "
        f"({_plural(final.faults, 'fault')} injected)",
    ]
    if final.queues:
        lines.append("  work queues    " + ", ".join(
            f"{name} {retries} {'retry' if retries == 1 else 'retries'}"
            for name, (_, retries) in final.queues.items()))
    if synced_after is not None:
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
