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
import textwrap
import time
from collections.abc import Callable
from typing import Protocol, TextIO

from kinformer.cli.demo import workload
from kinformer.gvr import GroupVersionResource

RATE_WINDOW = 0.5  # seconds: events/s is recomputed over at least this long


LABEL_WIDTH = 16  # the column where a status line's text starts, after its label
SUMMARY_LABEL_WIDTH = 17
MAX_WARNING_LINES = 3  # screen lines one warning may take; a longer one loses its middle
MIN_WIDTH = 40  # narrower terminals are drawn as if this wide


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
    backoff: float | None = None  # seconds until informers backing off after a fault try again


def resource_name(gvr: GroupVersionResource) -> str:
    """How the demo names a resource type: ``configmaps``, ``widgets.example.com``."""
    return gvr.group_resource


def terminal_width() -> int:
    return max(MIN_WIDTH, shutil.get_terminal_size().columns)


def wrap_text(text: str, width: int, first: str = "", indent: str | None = None) -> list[str]:
    """``first`` then ``text`` wrapped at word boundaries to ``width`` columns (less one, so a
    full line never makes the terminal wrap); continuation lines are indented by ``indent``,
    by default under the text (two spaces when ``first`` is empty).

    The demos' one way to wrap: the status lines (:func:`wrap`), the headers and the lines
    printed one after another (:func:`write_wrapped`) all go through it.
    """
    if indent is None:
        indent = " " * (len(first) or 2)
    return textwrap.wrap(text, width=width - 1, initial_indent=first, subsequent_indent=indent,
                         break_on_hyphens=False)


def wrap(label: str, text: str, width: int, max_lines: int = 0, label_width: int = LABEL_WIDTH) -> list[str]:
    """``label`` then ``text`` wrapped (:func:`wrap_text`), continuation lines indented under the text.

    With ``max_lines``, a longer text keeps its beginning and its end and loses its middle, so
    the part that says what happens next (``; relisting``) stays.
    """
    indent = " " * label_width
    first = f"  {label:<{label_width - 3}} " if label else indent
    lines = wrap_text(text, width, first, indent) or [first.rstrip()]
    if max_lines and len(lines) > max_lines:
        room = (width - 1 - label_width) * max_lines - 2  # the text that fits, less " …"
        head = room * 2 // 3
        tail = room - head
        shortened = text[:head].rsplit(" ", 1)[0] + " … " + text[-tail:].split(" ", 1)[-1]
        lines = wrap_text(shortened, width, first, indent)[:max_lines]
    return lines


def write_wrapped(out: TextIO, text: str, width: int, first: str = "") -> None:
    """Print ``first`` then ``text`` wrapped (:func:`wrap_text`) to ``out``, and flush it."""
    out.write("".join(line + "\n" for line in wrap_text(text, width, first)))
    out.flush()


class Display:
    """Draws the status: redrawn in place on a terminal, one plain line per frame otherwise.

    On a terminal every line fits its width (long ones wrap at word boundaries), so the cursor
    moves back over exactly the lines drawn.
    """

    def __init__(self, out: TextIO, tty: bool, width: Callable[[], int] = terminal_width) -> None:
        self._screen = Screen(out, tty)
        self.tty = tty
        self._width = width
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
        if not self.tty:
            self._write([self.plain_line(status, phase)])
            return
        self._write(self.lines(status, phase, self._width()))

    def plain_line(self, status: Status, phase: str) -> str:
        """The frame as one line of ``key=value`` fields, for a log or a pipe."""
        parts = [f"t={status.elapsed:.1f}s", f"phase={phase}",
                 f"loaded={status.loaded}/{status.options.objects}", f"events/s={self.rate:.0f}"]
        parts += [f"{resource_name(gvr)}={'listing' if n is None else n}" for gvr, n in status.cached.items()]
        parts += [f"controllers={','.join(status.running) or '-'}",
                  f"reconnects={status.reconnects}", f"relists={status.relists}"]
        parts += [f"queue:{name}={depth}/{retries}" for name, (depth, retries) in status.queues.items()]
        if status.backoff is not None:
            parts.append(f"reconnecting_in={status.backoff:.1f}s")
        return " ".join(parts)

    def lines(self, status: Status, phase: str, width: int) -> list[str]:
        """The frame as it is drawn on a terminal ``width`` columns wide."""
        options = status.options
        events = status.events
        total = sum(events.values())
        until = f" / {options.duration:g}s" if options.duration else " (Ctrl-C stops)"
        rate = f"{self.rate:.0f}"
        if status.backoff is not None:
            rate += f" (reconnecting in {status.backoff:.1f}s)"
        by_kind = ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted"))
        lines = wrap_text(f"kinformer demo  {status.url}  {status.elapsed:.1f}s{until}  "
                          f"churn {options.rate:g}/s", width)
        lines += wrap("phase", phase, width)
        lines += wrap("loaded", f"{status.loaded}/{options.objects} ConfigMaps in "
                                f"{len(workload.DEMO_NAMESPACES)} namespaces"
                                + (" + Widget CRD" if status.crd_installed else ""), width)
        lines += wrap("events/s", f"{rate}  total {total} ({by_kind})", width)
        lines += wrap("cached", ",  ".join(f"{resource_name(gvr)} {'listing…' if n is None else n}"
                                           for gvr, n in status.cached.items()) or "-", width)
        lines += wrap("controllers", ", ".join(f"{name} ({status.reconciles.get(name, 0)} reconciles)"
                                               for name in status.running) or "none yet", width)
        faults = _plural(status.faults, "fault")
        lines += wrap("watches", f"{status.reconnects} reconnects, {status.relists} relists "
                                 f"({faults} injected, {status.changes} changes made)", width)
        if status.queues:
            lines += wrap("work queues", ", ".join(f"{name} depth {depth} retries {retries}"
                                                   for name, (depth, retries) in status.queues.items()),
                          width)
        for i, warning in enumerate(self.warnings):
            lines += wrap("last warnings" if i == 0 else "", warning, width, MAX_WARNING_LINES)
        return lines

    def _write(self, lines: list[str]) -> None:
        self._screen.write(lines)

    def close(self) -> None:
        self._screen.close()


class Screen:
    """Writes frames of lines: each redrawn over the last on a terminal, appended otherwise.

    On a terminal the cursor moves back over exactly the lines drawn last, so every line must
    fit the terminal's width (see :func:`wrap`); the cursor is hidden until :meth:`close`.
    """

    def __init__(self, out: TextIO, tty: bool) -> None:
        self._out = out
        self.tty = tty
        self._drawn = 0

    def write(self, lines: list[str]) -> None:
        if self.tty:
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


class ShowsWarnings(Protocol):
    """What :class:`WarningCollector` keeps warnings for: a display with a bounded deque."""

    warnings: collections.deque[str]


class WarningCollector(logging.Handler):
    """Keeps the last warnings for the display instead of printing them over it.

    ``names`` rewrites what the messages call things (an informer's name, say) into what the
    display calls them; a message is kept whole, the display shortens it when it must.
    """

    def __init__(self, display: ShowsWarnings, names: dict[str, str] | None = None) -> None:
        super().__init__(logging.WARNING)
        self._display = display
        self._names = sorted((names or {}).items(), key=lambda item: -len(item[0]))  # longest first

    def emit(self, record: logging.LogRecord) -> None:
        message = " ".join(record.getMessage().split())
        for old, new in self._names:
            message = message.replace(old, new)
        self._display.warnings.append(message)


def summary(out: TextIO, final: Status, synced_after: float | None, interrupted: bool,
            mismatched: list[str] | None, alive: list[str], width: int | None = None) -> None:
    """Print what the run did and whether the caches ended equal to the server.

    ``final`` is the run once stopped, ``synced_after`` the seconds its first lists took (None:
    they never completed), ``mismatched`` the types whose cache differed (None: not checked,
    after Ctrl-C). Lines wrap at word boundaries to ``width`` (default: the terminal's).
    """
    width = width or terminal_width()
    events = final.events
    elapsed = final.elapsed
    total = sum(events.values())
    cached = {gvr: n for gvr, n in final.cached.items() if n is not None}
    fields = [
        ("workload", f"{final.loaded} ConfigMaps in {len(workload.DEMO_NAMESPACES)} namespaces"
         + (", Widget CRD installed" if final.crd_installed else "") + f"; {final.changes} changes made"),
        ("initial sync", f"{synced_after:.2f}s" if synced_after is not None else "not reached"),
        ("events", f"{total} handled ({total / elapsed if elapsed else 0:.0f}/s): "
         + ", ".join(f"{k} {events.get(k, 0)}" for k in ("initial", "added", "updated", "deleted"))),
        ("cached", ",  ".join(f"{resource_name(gvr)} {n}" for gvr, n in cached.items()) or "nothing"),
        ("controllers", ", ".join(f"{name} {n} reconciles" for name, n in sorted(final.reconciles.items()))
         or "none ran"),
        ("watches", f"{final.reconnects} reconnects, {final.relists} relists "
         f"({_plural(final.faults, 'fault')} injected)"),
    ]
    if final.queues:
        fields.append(("work queues", ", ".join(f"{name} {retries} {'retry' if retries == 1 else 'retries'}"
                                                for name, (_, retries) in final.queues.items())))
    if synced_after is None and not interrupted:
        fields.append(("consistency", "not checked: the first lists did not complete within --duration"))
    elif synced_after is not None and mismatched is None:
        fields.append(("consistency", "not checked: interrupted (a run that ends by --duration is)"))
    elif synced_after is not None:
        fields.append(("consistency", f"caches differ from the server: {', '.join(mismatched)}"
                       if mismatched else "every cache matches the server"))
    fields.append(("threads", f"still alive after stop: {', '.join(alive)}" if alive else "all stopped"))
    how = "interrupted" if interrupted else "finished"
    lines = ["", f"kinformer demo summary ({how} after {elapsed:.1f}s)"]
    for label, text in fields:
        lines += wrap(label, text, width, label_width=SUMMARY_LABEL_WIDTH)
    out.write("\n".join(lines) + "\n")
    out.flush()


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
