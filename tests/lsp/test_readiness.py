"""The readiness tracker: each kind, fed plain notifications and progress snapshots."""

from __future__ import annotations

from kandev_lsp import Readiness, ReadinessKind
from kandev_lsp.lsp.progress import ProgressTracker
from kandev_lsp.lsp.readiness import SERVER_STATUS, ReadinessTracker


def progress_after(*steps: tuple[str, str]) -> ProgressTracker:
    tracker = ProgressTracker()
    for kind, token in steps:
        tracker.accept(token)
        value = {"kind": kind, "title": f"work {token}"} if kind == "begin" else {"kind": kind}
        tracker.on_progress({"token": token, "value": value}, 0.0)
    return tracker


def test_nothing_is_ready_before_initialize_is_answered() -> None:
    for readiness in (Readiness(), Readiness(ReadinessKind.PROGRESS), Readiness(ReadinessKind.SERVER_STATUS)):
        tracker = ReadinessTracker(readiness, started_at=0.0)
        status = tracker.status(1.0)
        assert not status.ready and status.waiting_for == "the answer to initialize"


def test_immediate() -> None:
    tracker = ReadinessTracker(Readiness(), started_at=10.0)
    assert tracker.initialized(11.0)
    assert tracker.ready_at == 11.0 and tracker.status(12.0).ready


def test_progress_waits_for_the_first_end_with_nothing_active_and_then_stays_ready() -> None:
    tracker = ReadinessTracker(Readiness(ReadinessKind.PROGRESS, timeout=5.0), started_at=0.0)
    assert not tracker.initialized(0.5, ProgressTracker().snapshot())
    work = progress_after(("begin", "a"), ("begin", "b"))
    assert not tracker.observe("$/progress", {}, 1.0, work.snapshot())
    status = tracker.status(2.0)
    assert status.progress == ("work a", "work b") and "progress to end" in status.waiting_for
    work.on_progress({"token": "a", "value": {"kind": "end"}}, 2.0)
    assert not tracker.observe("$/progress", {}, 2.0, work.snapshot())  # b is still active
    assert tracker.status(6.0).timed_out
    work.on_progress({"token": "b", "value": {"kind": "end"}}, 7.0)
    assert tracker.observe("$/progress", {}, 7.0, work.snapshot())
    work.accept("c")
    work.on_progress({"token": "c", "value": {"kind": "begin", "title": "more"}}, 8.0)
    assert tracker.observe("$/progress", {}, 8.0, work.snapshot())  # latched
    assert tracker.ready_at == 7.0 and not tracker.status(99.0).timed_out


def test_server_status_follows_quiescence() -> None:
    tracker = ReadinessTracker(Readiness(ReadinessKind.SERVER_STATUS), started_at=0.0)
    assert not tracker.initialized(0.1)
    assert not tracker.observe(
        SERVER_STATUS, {"health": "ok", "quiescent": False, "message": "cargo metadata"}, 1.0
    )
    assert tracker.status(1.0).server_message == "cargo metadata"
    assert tracker.observe(SERVER_STATUS, {"health": "ok", "quiescent": True}, 2.0)
    assert not tracker.observe(SERVER_STATUS, {"health": "ok", "quiescent": False}, 3.0)  # busy again
    assert tracker.ready_at is None
    assert not tracker.observe(SERVER_STATUS, {"quiescent": "yes"}, 4.0)


def test_notification() -> None:
    tracker = ReadinessTracker(Readiness(ReadinessKind.NOTIFICATION, notification="x/ready"), started_at=0.0)
    assert not tracker.observe("x/ready", None, 0.5)  # before initialize: noted, not ready yet
    assert tracker.initialized(1.0)
    other = ReadinessTracker(Readiness(ReadinessKind.NOTIFICATION, notification="x/ready"), started_at=0.0)
    other.initialized(1.0)
    assert not other.observe("window/logMessage", {}, 2.0)
    status = other.status(3.0)
    assert status.to_json()["waitingFor"] == "the server's x/ready notification"


def test_a_matching_log_message_makes_a_progress_server_ready() -> None:
    readiness = Readiness(ReadinessKind.PROGRESS, log_message=r"^Found \d+ source files?")
    tracker = ReadinessTracker(readiness, started_at=0.0)
    assert not tracker.observe("window/logMessage", {"type": 3, "message": "Found 2 source files"}, 0.5)
    assert not tracker.initialized(1.0, ProgressTracker().snapshot())
    assert not tracker.observe("window/logMessage", {"type": 3, "message": "Loading pyproject.toml"}, 1.5)
    assert not tracker.observe("window/logMessage", None, 1.6)
    assert tracker.observe("window/logMessage", {"type": 3, "message": "Found 1 source file"}, 2.0)
    assert tracker.ready_at == 2.0


def test_a_declared_notification_also_makes_a_progress_server_ready() -> None:
    readiness = Readiness(ReadinessKind.PROGRESS, ready_on_notification="textDocument/publishDiagnostics")
    tracker = ReadinessTracker(readiness, started_at=0.0)
    assert not tracker.observe("textDocument/publishDiagnostics", {}, 0.5)  # before initialize: not yet
    assert not tracker.initialized(1.0, ProgressTracker().snapshot())
    assert tracker.status(1.5).waiting_for == (
        "the server's first work-done progress to end or its first textDocument/publishDiagnostics"
    )
    assert not tracker.observe("window/logMessage", {"type": 3, "message": "x"}, 1.6)
    assert tracker.observe("textDocument/publishDiagnostics", {"uri": "file:///a.ts", "diagnostics": []}, 2.0)
    assert tracker.ready_at == 2.0
    assert tracker.observe("$/progress", {}, 3.0, ProgressTracker().snapshot())  # stays ready
