"""Metrics and logs of lease transitions: the closed reason set, no ids anywhere (K19.2-K19.4)."""

from __future__ import annotations

import logging

import pytest
from kandev_lsp.broker.leases import ControlKind, ReleaseReason
from kandev_lsp.broker.logs import log_transitions
from kandev_lsp.broker.metrics import CONTENT_TYPE, BrokerMetrics
from leasekit import make_book
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families


def _samples(metrics: BrokerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.exposition().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_the_exposition_follows_the_book_with_every_reason_present_and_no_id_labels() -> None:
    book, clock = make_book(capacity=2)
    metrics = BrokerMetrics(book.counts)
    first = book.admit("exec-1", "python")
    second = book.admit("exec-2", "go")
    book.detach(str(first.lease_id), 1)
    clock.advance(1)
    book.request_stop(str(second.lease_id), 1, ControlKind.STOP)
    book.upstream_ended(str(second.lease_id))
    book.admit("exec-3", "python")  # a free slot: created, nothing evicted
    book.detach(str(book.lease_ids()[-1]), 1)
    queued = book.admit("exec-4", "python")  # full: evicts the older detached lease
    book.upstream_ended(str(first.lease_id))
    assert book.view(str(queued.lease_id)) is not None

    samples = _samples(metrics)
    assert samples[("lsp_lease_active", ())] == 2
    assert samples[("lsp_lease_detached", ())] == 1
    assert samples[("lsp_lease_capacity", ())] == 2
    assert samples[("lsp_lease_evicted_total", ())] == 1
    released = {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "lsp_lease_released_total"
    }
    assert released == {reason.value: 0 for reason in ReleaseReason} | {"stop": 1, "capacity": 1}
    assert {key for _, labels in samples for key, _ in labels} == {"reason"}
    assert "exec-" not in metrics.exposition().decode()
    assert CONTENT_TYPE.startswith("text/plain")


def test_each_broker_has_its_own_registry() -> None:
    book, _ = make_book()
    one, two = BrokerMetrics(book.counts), BrokerMetrics(book.counts)
    assert one.registry is not two.registry
    assert REGISTRY.get_sample_value("lsp_lease_active") is None


def test_transitions_are_logged_as_event_lines_without_ids(caplog: pytest.LogCaptureFixture) -> None:
    book, _ = make_book(capacity=1)
    caplog.set_level(logging.INFO, logger="kandev_lsp.broker")
    admission = book.admit("exec-SECRET", "python", "hint-SECRET", executor="docker")
    log_transitions(admission.actions)
    rejected = book.admit("exec-SECRET-2", "python")
    log_transitions(rejected.actions)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("event=lease_created language=python executor=docker generation=1 ")
    assert lines[0].endswith("active=1 detached=0 capacity=1")
    assert lines[1].startswith("event=lease_rejected ") and "code=4005" in lines[1]
    assert caplog.records[1].levelno == logging.WARNING
    assert not any("SECRET" in line or "lease-" in line for line in lines)
