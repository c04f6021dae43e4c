"""The provider-neutral core; it imports no SDK.

A chunk's path: ``request`` (one streamed request, from the SDK call to its iterator) -> ``stream``
(the finalize-once wrapper) -> the adapter's translator, through ``sink`` -> ``state`` (the state
machine) -> ``calls`` (one block's end: registry, metrics, span; ``revocation`` holds the span
and metrics of a call its server may still take back) and, once per stream, the inference span and
its metrics.
``metrics`` owns every instrument and records every signal (one method each); ``telemetry`` holds
the tracer, the metrics and the settings; ``owners`` what is kept beside an object the user holds
(a value for it, its collection watched); ``process`` every process-wide table, with the one
at-fork hook and the one reset for tests.
"""
