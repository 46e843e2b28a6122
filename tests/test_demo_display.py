"""The demo's display at 80 and 160 columns: lines fit, words stay whole, warnings keep their end."""

from __future__ import annotations

import io
import logging

import pytest

from kinformer.cli.demo import app, display, workload
from kinformer.gvr import GroupVersionResource

WIDGETS = GroupVersionResource("demo.kinformer.io", "v1", "widgets")
LONG_WARNING = (
    "reflector ddsif-v1/configmaps: watch ended: watch configmaps: connection broken: "
    "IncompleteRead(0 bytes read) after the server dropped every open watch while the demo was "
    "churning through thousands of ConfigMaps in four namespaces; relisting"
)


def status(backoff: float | None = None) -> display.Status:
    return display.Status(
        url="http://127.0.0.1:43567", elapsed=16.2,
        options=workload.Options(30.0, 5000, 100.0, True, None), loaded=5000, crd_installed=True,
        events={"initial": 5208, "added": 380, "updated": 7036, "deleted": 172},
        reconciles={"configmap-audit": 12060, "widget-configmaps": 533}, changes=1933, faults=1,
        cached={workload.NAMESPACES: 8, workload.CONFIGMAPS: 5208, WIDGETS: 200},
        running=["configmap-audit", "widget-configmaps"], reconnects=5, relists=5, backoff=backoff)


def words(text: str) -> set[str]:
    return set(text.split())


@pytest.mark.parametrize("width", [80, 160])
def test_every_line_of_a_frame_fits_and_no_word_is_cut(width: int) -> None:
    screen = display.Display(io.StringIO(), tty=True, width=lambda: width)
    display.WarningCollector(screen, app.informer_names()).emit(
        logging.LogRecord("kinformer.reflector", logging.WARNING, "", 0, LONG_WARNING, None, None))
    lines = screen.lines(status(), "running", width)
    assert all(len(line) < width for line in lines), [line for line in lines if len(line) >= width]
    drawn = words(" ".join(lines))
    expected = "events/s 0 total 12796 (initial 5208, added 380, updated 7036, deleted 172)"
    assert words(expected) <= drawn
    assert "configmaps 5208," in " ".join(lines)


def test_a_long_warning_keeps_its_ending_and_says_which_informer() -> None:
    screen = display.Display(io.StringIO(), tty=True, width=lambda: 80)
    display.WarningCollector(screen, app.informer_names()).emit(
        logging.LogRecord("kinformer.reflector", logging.WARNING, "", 0, LONG_WARNING, None, None))
    lines = screen.lines(status(), "running", 80)
    first = next(i for i, line in enumerate(lines) if "last warnings" in line)
    warning = lines[first:]
    assert len(warning) <= display.MAX_WARNING_LINES
    assert warning[0].split()[2:5] == ["configmaps", "(the", "controllers'"]
    assert warning[-1].rstrip().endswith("; relisting")
    assert "…" in " ".join(warning)


def test_the_two_informers_of_one_type_are_told_apart() -> None:
    names = app.informer_names()
    assert names["reflector ddsif-v1/configmaps"] != names["reflector v1/configmaps"]
    assert names["reflector v1/configmaps"] == "configmaps (the manager's informer)"


def test_a_backoff_says_when_the_watches_reconnect() -> None:
    screen = display.Display(io.StringIO(), tty=True, width=lambda: 80)
    events_line = next(line for line in screen.lines(status(1.6), "running", 80) if "events/s" in line)
    assert "0 (reconnecting in 1.6s)" in events_line
    assert "reconnecting_in=1.6s" in screen.plain_line(status(1.6), "running")
    assert "reconnecting" not in " ".join(screen.lines(status(None), "running", 80))


@pytest.mark.parametrize("width", [80, 160])
def test_the_summary_wraps_at_word_boundaries(width: int) -> None:
    out = io.StringIO()
    display.summary(out, status(), 0.64, False, [], [], width=width)
    lines = out.getvalue().splitlines()
    assert all(len(line) < width for line in lines)
    assert words("12796 handled (790/s): initial 5208, added 380, updated 7036, deleted 172") <= words(
        out.getvalue())
    assert lines[-1] == "  threads        all stopped"  # the documented layout
    assert "configmaps 5208" in out.getvalue()
