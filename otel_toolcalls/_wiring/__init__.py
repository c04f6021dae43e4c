"""Wiring only: the table of adapters, what each needs of its SDK, waiting for the application's
import, and the instrumentor that ties them to one ``Telemetry``."""
