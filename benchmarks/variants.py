"""The instrumentations ``make bench`` compares: one module that run.py, instructions.py and
report.py all read (none of them imports another for it)."""

from __future__ import annotations

# (variant, venv, providers it instruments)
VARIANTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("bare", "base", ("openai", "anthropic")),
    ("otel_toolcalls", "base", ("openai", "anthropic")),
    ("anthropic_own", "base", ("anthropic",)),
    ("openllmetry", "openllmetry", ("openai", "anthropic")),
    ("otel_openai_v2", "otel-openai-v2", ("openai",)),
    ("otel_genai_openai", "otel-genai-openai", ("openai",)),
    ("openinference", "openinference", ("openai", "anthropic")),
]
