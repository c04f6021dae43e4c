"""Counters kept as integers in the package, reported by observable counters: ``toolcall.calls``
and the token usage counters, the ones added to on every call's or stream's end.

A synchronous counter's ``add`` builds a measurement and aggregates it under a lock; here an add is
one dictionary update under a lock, and the SDK reads the totals when it collects. Name, unit,
description, attributes and the monotonic-sum semantics are those of the synchronous counter
(TELEMETRY.md section 4): exporters, Prometheus's ``toolcall_calls_total`` and ``rate()`` over it see
the same series. What an observable counter lacks is exemplars.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from . import process

_log = logging.getLogger(__name__)

Key = tuple[tuple[str, Any], ...]


class Counts:
    """Cumulative counts by attribute set, observed at each collection."""

    def __init__(self, meter: Meter, name: str, *, unit: str, description: str) -> None:
        self._counts: dict[Key, int] = {}
        self._lock = threading.Lock()
        # The meter keeps the callback, hence the counts, as it would a synchronous counter's
        # aggregation: after uninstrument() the totals counted so far are still reported.
        meter.create_observable_counter(name, callbacks=[self._observe], unit=unit, description=description)
        process.renew_at_fork(self)

    def add(self, amount: int, attributes: Mapping[str, Any]) -> None:
        key = tuple(attributes.items())
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def _observe(self, options: CallbackOptions) -> Iterable[Observation]:
        try:
            with self._lock:
                items = list(self._counts.items())
            return [Observation(count, dict(key)) for key, count in items]
        except Exception:  # never raise into the SDK's collection
            _log.debug("otel_toolcalls: could not report a counter", exc_info=True)
            return []

    def after_fork_in_child(self) -> None:
        # The counts stay (the child's exporter starts from the parent's, as a synchronous counter's
        # aggregation would); the lock is new, as a thread of the parent may have held it.
        self._lock = threading.Lock()


_BY_METER: weakref.WeakKeyDictionary[Any, dict[str, Counts]] = process.COUNTS_BY_METER


def counts_for(meter: Meter, name: str, *, unit: str, description: str) -> Counts:
    """The counts behind ``name`` on ``meter``: one per meter and name. The SDK hands a second
    instrument() on the same meter provider the meter and the instrument it made the first time
    (keeping the first callback only), as it hands back a synchronous counter and its aggregation:
    the counts go on where the first instrumentation left them."""
    with process.LOCKS.meters:
        try:
            by_name = _BY_METER.setdefault(meter, {})
        except TypeError:  # a meter that cannot be a weak key: counts of its own
            return Counts(meter, name, unit=unit, description=description)
        found = by_name.get(name)
        if found is None:
            found = by_name[name] = Counts(meter, name, unit=unit, description=description)
        return found
