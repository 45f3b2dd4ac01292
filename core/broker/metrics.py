"""The broker's Prometheus metrics (K19.3, K19.4), read from the lease book at scrape time.

A collector on the broker's own ``CollectorRegistry`` (never the process-global one, so two brokers in
one process, or a test, never share counters) turns :class:`~kandev_lsp.broker.leases.LeaseCounts` into
the text exposition format. The values live in the book; nothing here can drift from it. No metric has
an id label: only ``reason``, over the closed set, and every reason is always present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kandev_lsp.broker.leases import LeaseCounts, ReleaseReason
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "BrokerMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _LeaseCollector(Collector):
    def __init__(self, source: Callable[[], LeaseCounts]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        counts = self._source()
        yield GaugeMetricFamily(
            "lsp_lease_active", "Leases holding a capacity slot, attached or detached.", value=counts.active
        )
        yield GaugeMetricFamily(
            "lsp_lease_detached", "Leases with no client attached.", value=counts.detached
        )
        yield GaugeMetricFamily(
            "lsp_lease_capacity", "The lease cap (KANDEV_LSP_MAX_CONNECTIONS).", value=counts.capacity
        )
        yield CounterMetricFamily(
            "lsp_lease_evicted", "Detached leases evicted to admit another.", value=counts.evicted_total
        )
        released = CounterMetricFamily(
            "lsp_lease_released", "Capacity released, by the reason the lease ended.", labels=["reason"]
        )
        for reason in ReleaseReason:
            released.add_metric([reason.value], counts.released_total.get(reason, 0))
        yield released


class BrokerMetrics:
    """The ``/metrics`` body for one broker.

    :param source: returns the current counts, usually ``LeaseBook.counts``.
    """

    def __init__(self, source: Callable[[], LeaseCounts]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(_LeaseCollector(source))

    def exposition(self) -> bytes:
        """The Prometheus text format (``CONTENT_TYPE``)."""
        return generate_latest(self.registry)
