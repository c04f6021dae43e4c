"""The instrumentor: idempotent, reversible, suppressible, loadable by opentelemetry-instrument, and
the interpreter-exit path that ends open calls before the tracer provider shuts down."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import groq
import openai
import pytest
from console_spans import console_spans
from opentelemetry.instrumentation.utils import suppress_instrumentation

from otel_toolcalls._core import names as n
from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

# Captured at import, before any test instruments anything.
ORIGINALS = {
    (cls, name): cls.__dict__[name]
    for cls, name in [
        (openai.Stream, "__stream__"),
        (openai.AsyncStream, "__stream__"),
        (openai.Stream, "close"),
        (openai.AsyncStream, "close"),
        (groq.Stream, "__stream__"),
        (groq.AsyncStream, "close"),
    ]
}


def run_one(fake, telemetry) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    for _ in client.chat.completions.create(**request()):
        pass


def test_instrument_twice_is_harmless(telemetry, instrument, fake, caplog):
    apply = instrument
    instrumentor = apply()
    with caplog.at_level(logging.WARNING):
        instrumentor.instrument(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
    assert any("already instrumented" in r.getMessage() for r in caplog.records)
    run_one(fake, telemetry)
    assert len(telemetry.tool_spans()) == 1
    assert len([s for s in telemetry.spans() if s.name.startswith("chat ")]) == 1
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_uninstrument_restores_originals(telemetry, instrument, fake):
    instrumentor = instrument()
    assert openai.Stream.__dict__["__stream__"] is not ORIGINALS[(openai.Stream, "__stream__")]
    instrumentor.uninstrument()
    for (cls, name), original in ORIGINALS.items():
        assert cls.__dict__[name] is original, (cls, name)
    run_one(fake, telemetry)
    assert telemetry.spans() == []
    assert telemetry.points("toolcall.calls") == []


def test_suppress_instrumentation(telemetry, instrument, fake):
    with suppress_instrumentation():
        run_one(fake, telemetry)
    assert telemetry.spans() == []
    run_one(fake, telemetry)
    assert len(telemetry.tool_spans()) == 1


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def test_opentelemetry_instrument_needs_no_code_change():
    result = subprocess.run(
        [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, str(ROOT / "examples/weather_agent.py")],
        env=_env(
            OTEL_TRACES_EXPORTER="console",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            OTEL_SERVICE_NAME="weather-agent",
        ),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "tool result: Zürich" in result.stdout
    spans = {s["name"]: s for s in console_spans(result.stdout)}
    call = spans["tool_call get_weather"]
    assert call["attributes"][n.TOOLCALL_OUTCOME] == "completed"
    assert call["attributes"][n.TOOLCALL_ARGUMENTS_SIZE] == len(WEATHER.arguments.encode())
    assert call["parent_id"] == spans["chat gpt-4o-mini"]["context"]["span_id"]
    run = spans["execute_tool get_weather"]
    assert run["links"][0]["context"]["span_id"] == call["context"]["span_id"]


EXIT_SCRIPT = textwrap.dedent(
    """
    import openai
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    from otel_toolcalls import ToolCallsInstrumentor
    from otel_toolcalls.testing import FakeProvider
    from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script

    # Batch: a span ended after the provider's atexit shutdown would never be printed.
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(), schedule_delay_millis=60000))
    trace.set_tracer_provider(provider)
    ToolCallsInstrumentor().instrument()

    fake = FakeProvider().start()
    fake.enqueue(tool_call_script([WEATHER], pace=0.2))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    stream = client.chat.completions.create(**request())
    for _ in range(3):
        next(stream)
    print("EXITING", flush=True)
    """
)


def test_interpreter_exit_ends_open_calls_abandoned(tmp_path):
    script = tmp_path / "exit_mid_stream.py"
    script.write_text(EXIT_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script)], env=_env(), capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert "EXITING" in result.stdout
    spans = {s["name"]: s for s in console_spans(result.stdout)}
    call = spans["tool_call get_weather"]["attributes"]
    assert call[n.TOOLCALL_OUTCOME] == "aborted"
    assert call[n.TOOLCALL_ABORT_REASON] == "abandoned"
    assert call[n.TOOLCALL_ARGUMENTS_DELTAS] == 2
    assert spans["chat gpt-4o-mini"]["attributes"][n.TOOLCALL_ABORT_REASON] == "abandoned"


@pytest.mark.parametrize("disabled", ["toolcalls"])
def test_disabled_by_env_under_opentelemetry_instrument(disabled):
    result = subprocess.run(
        [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, str(ROOT / "examples/weather_agent.py")],
        env=_env(
            OTEL_TRACES_EXPORTER="console",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=disabled,
        ),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    names = {s["name"] for s in console_spans(result.stdout)}
    assert "tool_call get_weather" not in names


def _patch_sets(instrumentor):
    from otel_toolcalls._wiring.patches import Patches

    for name, adapter in instrumentor.instrumented_adapters().items():
        for value in vars(adapter).values():
            patches = getattr(value, "_patches", value)
            if isinstance(patches, Patches):
                yield name, patches


def _resolve(module, attr):
    import importlib

    owner = importlib.import_module(module)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)


def test_every_adapter_unwraps_exactly_what_it_wrapped(instrument):
    import importlib

    import wrapt

    # Imported before instrument() (patched at once) or after (patched by the import hook): both.
    # An adapter waits for the modules it patches, which the top package may import lazily.
    for sdk in (
        "anthropic",
        "botocore.client",
        "google.genai",
        "mistralai.client.chat",
        "cohere.v2.client",
        "langchain_core.tools.base",
    ):
        importlib.import_module(sdk)
    instrumentor = instrument()
    made = [(name, m, a) for name, patches in _patch_sets(instrumentor) for m, a in patches._made]
    adapters = {name.rsplit(".", 1)[-1] for name, _, _ in made}
    # Every SDK of the test extra is installed: every adapter patched something.
    assert {"openai", "groq", "anthropic", "bedrock", "gemini", "mistral", "cohere", "langchain"} <= adapters
    for _, module, attr in made:
        assert isinstance(_resolve(module, attr), wrapt.FunctionWrapper), (module, attr)
    instrumentor.uninstrument()
    for _, module, attr in made:
        assert not isinstance(_resolve(module, attr), wrapt.FunctionWrapper), (module, attr)


def test_a_second_instrumentor_object_uninstruments_the_first(telemetry, instrument, fake):
    from otel_toolcalls import ToolCallsInstrumentor

    instrument()
    # BaseInstrumentor is a singleton: constructing it again must not forget the patches.
    ToolCallsInstrumentor().uninstrument()
    for (cls, name), original in ORIGINALS.items():
        assert cls.__dict__[name] is original, (cls, name)
    run_one(fake, telemetry)
    assert telemetry.spans() == []


def test_sdks_are_patched_when_the_application_imports_them():
    """instrument() imports no SDK: each is patched when (and if) the application imports it."""
    script = textwrap.dedent(
        """
        import sys, time
        from otel_toolcalls import ToolCallsInstrumentor
        started = time.perf_counter()
        ToolCallsInstrumentor().instrument()
        sdks = ("openai", "anthropic", "google.genai", "litellm", "botocore", "cohere", "mistralai",
                "langchain_core", "pydantic_ai", "agents", "mcp", "groq")
        print(sorted(m for m in sdks if m in sys.modules))
        import openai, wrapt
        print(isinstance(openai._streaming.Stream.__dict__["__stream__"], wrapt.FunctionWrapper))
        ToolCallsInstrumentor().uninstrument()
        print(isinstance(openai._streaming.Stream.__dict__["__stream__"], wrapt.FunctionWrapper))
        import anthropic  # imported after uninstrument(): its deferred hook must do nothing
        print(isinstance(anthropic._streaming.Stream.__dict__["__stream__"], wrapt.FunctionWrapper))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True, cwd=ROOT
    )
    assert out.stdout.split("\n")[:4] == ["[]", "True", "False", "False"], out.stdout + out.stderr
