"""The peer-suites lane (tests/peer_suites/run.py) classes each difference a peer's own test shows by
what the package did in that test, and fails on a second inference span, on a run where the package
recorded nothing, on an internal error, on a difference of class (c), and on a test lost. The sessions
judged are real pytest sessions with the lane's two plugins: a stand-in peer (an instrumentor that
makes a CLIENT span around a real openai stream from the fake server) and the package on the
providers the test hands that peer, after it and before it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "peer_suites_run_lane", Path(__file__).parents[1] / "peer_suites" / "run.py"
)
assert _SPEC is not None and _SPEC.loader is not None
run = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = run  # its dataclass looks its module up
_SPEC.loader.exec_module(run)

PEER_MODULE = """
from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor


class Peer(BaseInstrumentor):
    tracer = None

    def instrumentation_dependencies(self):
        return []

    def _instrument(self, **kwargs):
        type(self).tracer = trace.get_tracer("stand.in.peer", tracer_provider=kwargs["tracer_provider"])

    def _uninstrument(self, **kwargs):
        pass
"""

CONFTEST = '''
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script
from otel_toolcalls.testing._server import FakeProvider
from stand_in_peer import Peer


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    peer = Peer()
    peer.instrument(tracer_provider=provider)
    yield exporter
    peer.uninstrument()


@pytest.fixture
def stream(spans):
    """A streamed request with one tool call inside the peer's CLIENT span (``attributes``: at its start)."""
    fake = FakeProvider().start()

    def streamed(attributes):
        fake.enqueue(tool_call_script([WEATHER]))
        client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
        if attributes is None:  # a request the peer does not trace
            return list(client.chat.completions.create(**request()))
        tracer = Peer.tracer
        with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes):
            for _ in client.chat.completions.create(**request()):
                pass
        ended = spans.get_finished_spans()
        return [span for span in ended if span.instrumentation_scope.name == "stand.in.peer"][0]

    return streamed
'''

PEER_TESTS = """
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}


def test_counts_spans(stream, spans):
    stream(CHAT)
    assert len(spans.get_finished_spans()) == 1


def test_exact_attributes(stream):
    assert dict(stream(CHAT).attributes) == CHAT


def test_something_else(stream):
    assert "toolcall.outcome" not in stream(CHAT).attributes


def test_span_without_attributes(stream):
    stream({})


def test_untraced_request(stream, spans):
    stream(None)
    assert spans.get_finished_spans() == ()


def test_no_request(spans):
    pass
"""


def session(tmp_path: Path, order: str, files: dict[str, str] | None = None) -> dict:
    """A pytest session of the stand-in peer's tests with the lane's plugins, as run.py runs one."""
    for path, text in {"pytest.ini": "[pytest]\n", "stand_in_peer.py": PEER_MODULE, "conftest.py": CONFTEST,
                       "test_peer.py": PEER_TESTS, **(files or {})}.items():  # fmt: skip
        (tmp_path / path).write_text(text)
    out = tmp_path / "results" / order
    out.parent.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "OTEL_"))}
    path = [str(run.HERE), str(tmp_path), env.get("PYTHONPATH", "")]
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", SDK_SUITE_MODE="bare", PEER_SUITE_ORDER=order,
               PEER_SUITE_INSTRUMENTOR="stand_in_peer:Peer", PYTHONPATH=os.pathsep.join(path))  # fmt: skip
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "outcome_plugin", "-p",
           "peer_plugin", "--continue-on-collection-errors", "-W", "ignore::DeprecationWarning"]  # fmt: skip
    return run.with_facts(run.suites.pytest_session(cmd, out, tmp_path / "log", tmp_path, env), out)


PEER = run.Peer("stand-in", "stand-in-peer", "1.0", "stand_in_peer:Peer", lambda tree: [])


@pytest.mark.parametrize("order", ["after", "before"])
def test_each_difference_is_classed_by_what_the_package_did(tmp_path, order, capsys) -> None:
    bare = session(tmp_path, "bare")
    assert set(bare["outcomes"].values()) == {"passed"} and bare["recorded"] == 0
    beside = session(tmp_path, order)
    classes = {name.split("::")[1]: run.classify(name, bare, beside) for name in beside["outcomes"]}
    assert classes == {
        "test_counts_spans": "a",
        "test_exact_attributes": "b",
        "test_something_else": "c",
        "test_span_without_attributes": "second",
        "test_untraced_request": "a",  # the package's inference span, the peer making none
        "test_no_request": "c",  # not changed: judge never asks
    }
    assert beside["facts"]["test_peer.py::test_counts_spans"]["own_under_peer"] == 1
    assert {"toolcall.outcome", "toolcall.count"} <= set(
        beside["facts"]["test_peer.py::test_exact_attributes"]["annotated"]
    )
    assert not run.judge(PEER, order, bare, beside, print)
    said = capsys.readouterr().out
    assert (
        f"stand-in 1.0 {order}: 6 tests, 4 differ from bare (2 a, 1 b, 1 c, 0 second inference span); "
        in said
    )
    assert "a second inference span: test_peer.py::test_span_without_attributes: bare passed" in said
    assert "(c) anything else: test_peer.py::test_something_else: bare passed" in said


def test_a_run_with_only_by_design_differences_is_green(tmp_path, capsys) -> None:
    bare = session(tmp_path, "bare")
    after = session(tmp_path, "after")
    kept = {
        name
        for name in after["outcomes"]
        if name.split("::")[1] in ("test_counts_spans", "test_exact_attributes")
    }
    for run_ in (bare, after):
        run_["outcomes"] = {name: outcome for name, outcome in run_["outcomes"].items() if name in kept}
    after["facts"] = {name: facts for name, facts in after["facts"].items() if name in kept}
    assert run.judge(PEER, "after", bare, after, print)
    assert "2 differ from bare (1 a, 1 b, 0 c, 0 second inference span)" in capsys.readouterr().out


def test_an_internal_error_fails_the_run(tmp_path, capsys) -> None:
    # The package's own reporting path, as a failing step of it would take.
    erring = "from otel_toolcalls._core.errors import report\n\n"
    erring += "def test_errs(spans):\n    report('a.site', ValueError())\n"
    files = {"test_peer.py": PEER_TESTS.split("def test_something_else")[0], "test_errs.py": erring}
    bare = session(tmp_path, "bare", files)
    after = session(tmp_path, "after", files)
    assert after["facts"]["test_errs.py::test_errs"]["errors"] == {"a.site": 1}
    assert not run.judge(PEER, "after", bare, after, print)
    assert "internal errors at a.site: 1" in capsys.readouterr().out


def test_a_run_where_the_package_recorded_nothing_fails(tmp_path, capsys) -> None:
    files = {"test_peer.py": "def test_no_request(spans):\n    pass\n"}
    bare = session(tmp_path, "bare", files)
    after = session(tmp_path, "after", files)
    assert after["outcomes"] == bare["outcomes"] == {"test_peer.py::test_no_request": "passed"}
    assert not run.judge(PEER, "after", bare, after, print)
    assert "the package recorded nothing in after" in capsys.readouterr().out


def test_a_test_lost_in_one_order_fails_the_lane(tmp_path) -> None:
    files = {
        "test_peer.py": "import os\n\ndef test_dies(spans):\n    os._exit(1)\n\n"
        "def test_after_it():\n    pass\n"
    }
    bare = {
        **run.suites.empty_record(),
        "status": 0,
        "collected": ["test_peer.py::test_dies", "test_peer.py::test_after_it"],
    }
    after = session(tmp_path, "after", files)
    assert run.lost_tests(bare, {"after": after}) == [
        "after: exit 1 (tests failed) and no failure recorded",
        "after: 2 tests it ran have no outcome: test_peer.py::test_after_it, test_peer.py::test_dies",
    ]
    only = {**bare, "collected": ["test_peer.py::test_dies"]}
    assert run.lost_tests(only, {"before": {**only, "collected": bare["collected"]}}) == [
        "before: 1 tests collected instrumented only: test_peer.py::test_after_it"
    ]


@pytest.mark.parametrize(
    ("failure", "own", "annotated", "expected"),
    [
        ("E       assert 3 == 2\nE        +  where 3 = len([...])", 1, [], "a"),
        ("E       assert 4 == 2\nE        +  where 4 = len([...])", 1, [], "c"),  # more than its own spans
        ("E       assert 2 == 3\nE        +  where 2 = len([...])", 1, [], "c"),  # fewer spans
        ("E       AssertionError: assert 'tool_call get_weather' == 'chat gpt-4o-mini'", 1, [], "a"),
        ("E       AssertionError: assert 'chat gpt-4o' == 'chat gpt-4o-mini'", 1, [], "c"),
        (
            "self = {'gen_ai.provider.name': 'openai', 'toolcall.tool.name': 'get_weather'}\n"
            "E       KeyError: 'gen_ai.tool.definitions'",
            1,
            [],
            "a",
        ),  # it read the package's span
        ("E       KeyError: 'gen_ai.tool.definitions'", 1, [], "c"),
        (
            "E       assert (<opentelemet...f6ec335b050>,) == ()\nE         \n"
            "E         Left contains one more item: <opentelemetry.sdk.trace.ReadableSpan object at 0x7f>",
            1,
            [],
            "a",
        ),
        (
            "E       assert (<opentelemet...f6ec335b050>,) == ()\nE         \n"
            "E         Left contains one more item: <opentelemetry.sdk.trace.ReadableSpan object at 0x7f>",
            0,
            [],
            "c",
        ),
        (
            "E       AssertionError: assert {'a': 1, 'toolcall.outcome': 'completed'} == {'a': 1}\n"
            "E         Omitting 1 identical items, use -vv to show\n"
            "E         Left contains 1 more item:\nE         {'toolcall.outcome': 'completed'}",
            0,
            ["toolcall.outcome"],
            "b",
        ),
        (
            "E       AssertionError: assert {'a': 1, 'toolcall.x': 'completed'} == {'a': 1}\n"
            "E         Omitting 1 identical items, use -vv to show\n"
            "E         Left contains 1 more item:\nE         {'toolcall.x': 'completed'}",
            0,
            ["toolcall.outcome"],
            "c",
        ),  # a key the package did not set
    ],
    ids=[
        "count",
        "count-beyond",
        "count-fewer",
        "name",
        "other-name",
        "own-attributes",
        "other-key-error",
        "one-more-span",
        "one-more-span-not-its",
        "annotation",
        "unknown-key",
    ],
)
def test_the_classes_of_a_failure(failure, own, annotated, expected) -> None:
    name = "t.py::t"
    bare = {"outcomes": {name: "passed"}}
    beside = {"outcomes": {name: "failed"}, "failures": {name: failure},
              "facts": {name: {"own_under_peer": own, "annotated": annotated, "second": []}}}  # fmt: skip
    assert run.classify(name, bare, beside) == expected
