# Two commands set up everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q

.PHONY: demo test lint typecheck unit wrapt1 lanes versions frameworks bench bench-quick clean promtool \
  redis-server chromium view view-stop screenshots

# Bytecode is written on first import: uv installs none (pip compiled every file of every package),
# and with PYTHONDONTWRITEBYTECODE set each test process (the subprocess apps, each lane) compiled
# the SDKs it imports again from source.
unexport PYTHONDONTWRITEBYTECODE

# uv (the test extra installs it too) installs the venvs: pip took 3.5 minutes for the test extra.
# pip only brings uv itself into a new venv, at the version the main lock holds.
UV := $(VENV)/bin/uv
# Every venv installs from its lock here (tests/locks/lock.py): all packages pinned and hashed, so
# what `make test` installs does not move with the day. `make lock` writes them again.
LOCKS := tests/locks
# $(1): the venv's python, $(2): its lock. Exactly the lock (sync), the package editable on top
# without dependencies, then a check that nothing the lock holds lacks a dependency.
define FROM_LOCK
	$(UV) pip sync -q --require-hashes --python $(1) $(2)
	$(UV) pip install -q --python $(1) --no-deps -e .
	$(UV) pip check -q --python $(1)
endef

$(UV):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install "$$(grep -m1 -o '^uv==[^ ]*' $(LOCKS)/main.txt)"

# The main venv from its lock (the test extra); the demo's packages are a part of it (the same
# pins: tests/repo/test_locks.py), installed alone by `make demo`.
$(VENV)/.stamp-test: pyproject.toml $(LOCKS)/main.txt | $(UV)
	$(call FROM_LOCK,$(PY),$(LOCKS)/main.txt)
	rm -f $(VENV)/.stamp-*; touch $@

$(VENV)/.stamp-demo: pyproject.toml $(LOCKS)/demo.txt | $(UV)
	$(UV) pip install -q --require-hashes --no-deps --python $(PY) -r $(LOCKS)/demo.txt
	$(UV) pip install -q --python $(PY) --no-deps -e .
	$(UV) pip check -q --python $(PY)
	touch $@

# Every lock written again from its inputs (after a change to pyproject.toml, a requirements file or
# a version lane, or to move to today's releases; `make newest` first says what would move).
.PHONY: lock newest
lock: $(VENV)/.stamp-test
	$(PY) tests/locks/lock.py

# Every copy of the surfaces' versions (ADAPTERS, pyproject's extras, package.py, tested_versions.py,
# docs/SUPPORT.md's table, the framework lanes' pins) written from the adapters' REQUIRES
# (tests/helpers/tables.py), then the locks whose inputs that moved, and only those.
.PHONY: tables
tables: | $(VENV)/.stamp-test
	$(PY) tests/helpers/tables.py
	@stale="$$($(PY) tests/locks/lock.py --list | awk '$$1 != "current" {print $$2}')"; \
	  if [ -n "$$stale" ]; then echo "locks to write: $$stale"; $(PY) tests/locks/lock.py $$stale; fi

# The main venv and the newest framework venvs built from today's releases of everything they hold
# (under .newest/), their tests run there, and a drift report: what moved from the locks, what
# failed. Not part of `make test`: CI must not depend on the day.
newest: $(VENV)/.stamp-test
	$(PY) tests/locks/newest.py --framework-tests "$(FW_TESTS)"

promtool:
	@command -v promtool >/dev/null 2>&1 || { \
	  echo "installing Debian's prometheus package for promtool"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null) \
	  || { echo "could not install Debian's prometheus: make test needs it" >&2; exit 1; }; }

# The Celery tests' broker (tests/linking/test_remote_celery.py starts one on a free 127.0.0.1 port).
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing Debian's redis-server package for the Celery tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) \
	  || { echo "could not install Debian's redis-server: make test needs it" >&2; exit 1; }; }

demo: $(VENV)/.stamp-demo
	$(PY) examples/demo.py

# The trace viewer: Arize Phoenix (Elastic License 2.0), a development tool in a venv of its own,
# never a dependency of the package. `make view` starts it on 127.0.0.1:$(VIEWER_PORT) unless one
# runs there already, sends the demo's traces, prints their URLs and leaves it running; `make
# view-stop` stops the one it started (.viewer/phoenix.pid). Its database and log are in .viewer/.
VIEWER_VENV := .venv-viewer
VIEWER_PORT ?= 6006

$(VIEWER_VENV)/.stamp: $(LOCKS)/viewer.txt | $(UV)
	test -x $(VIEWER_VENV)/bin/python || $(UV) venv -q --python $(PYTHON) $(VIEWER_VENV)
	$(UV) pip sync -q --require-hashes --python $(VIEWER_VENV)/bin/python $(LOCKS)/viewer.txt
	touch $@

# Debian's chromium, headless, for the screenshots and the viewer test (like promtool below).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium package"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "could not install Debian's chromium: make test needs it" >&2; exit 1; }; }

view: $(VENV)/.stamp-demo $(VIEWER_VENV)/.stamp
	VIEWER_PORT=$(VIEWER_PORT) $(PY) examples/viewer/view.py up

view-stop:
	@$(PYTHON) examples/viewer/view.py down

# docs/GUIDE.md's pictures of the viewer, taken from the real one by headless chromium.
screenshots: view chromium
	$(VIEWER_VENV)/bin/python examples/viewer/shots.py png --url http://127.0.0.1:$(VIEWER_PORT) --out docs

lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check otel_toolcalls tests examples benchmarks

typecheck: $(VENV)/.stamp-test
	$(VENV)/bin/mypy otel_toolcalls

unit: $(VENV)/.stamp-test promtool redis-server $(VIEWER_VENV)/.stamp chromium
	OTEL_TOOLCALLS_LANE=main $(PY) -m pytest -q -p no:cacheprovider -rfEs

# The main suite runs beside the lanes: its clock-sensitive tests read a simulated clock
# (tests/helpers/sim_clock.py), and serially it kept 0.7 of a core busy. The SDK suites then run
# alone: their own timing tests are the SDKs'. The wrapt 1.x tests are a version lane.
# Everything it runs fails on a missing piece instead of skipping (tests/helpers/markers.py) and on
# a skip tests/skips.toml does not list (tests/helpers/counted_skips.py).
test: export OTEL_TOOLCALLS_REQUIRE_ALL := 1
test: test-setup
	$(MAKE) --no-print-directory -j2 -O unit lanes
	$(MAKE) --no-print-directory sdk-suites

# The old-SDK lanes and the framework venvs use venvs of their own, so they run side by side (each
# target's output kept together): one after the other they took CI past 14 of its 15 minutes.
lanes: $(VENV)/.stamp-test
	$(MAKE) --no-print-directory -j2 -O versions frameworks peer-suites bidi

# Strands' BidiAgent and aws-sdk-bedrock-runtime (Nova Sonic's bidirectional stream) need Python
# 3.12+: venvs on pyenv's 3.12 from their locks (Strands 1.62.0, and 1.58.0 where strands.bidi
# began), and the tests of those two adapters in each; the SDK's newest (0.12, which Strands does not
# take yet) alone, with the provider adapter's tests.
BIDI_VENV := .venv-bidi
BIDI_LANES := $(BIDI_VENV) $(BIDI_VENV)-floor $(BIDI_VENV)-sdk
BIDI_PYTHON ?= /root/.pyenv/versions/3.12.1/bin/python
BIDI_TESTS := tests/providers/test_bedrock_bidi.py tests/frameworks/strands_bidi/test_strands_bidi.py

.PHONY: bidi
bidi: $(addsuffix /.stamp,$(BIDI_LANES))
	OTEL_TOOLCALLS_LANE=$(BIDI_VENV) $(BIDI_VENV)/bin/python -m pytest -q -p no:cacheprovider -rfEs $(BIDI_TESTS)
	OTEL_TOOLCALLS_LANE=$(BIDI_VENV)-floor $(BIDI_VENV)-floor/bin/python -m pytest -q -p no:cacheprovider -rfEs \
	  $(BIDI_TESTS)
	OTEL_TOOLCALLS_LANE=$(BIDI_VENV)-sdk $(BIDI_VENV)-sdk/bin/python -m pytest -q -p no:cacheprovider -rfEs \
	  tests/providers/test_bedrock_bidi.py

# The agent frameworks pin dependencies that conflict with the main venv's SDKs: they get venvs of
# their own, rebuilt when their requirements change. There run their tests, and the lane-aware
# ones (tests/helpers/lanes.py) for the frameworks installed there: their apps under opentelemetry-instrument,
# their declared targets, doctor. CrewAI (with its vector stores and its own opentelemetry and
# pydantic pins) gets venvs apart from the rest. Each at its newest, at the last release of its
# previous tool-execution design (-previous) and at the oldest the adapter covers (-floor).
FW_VENV := .venv-frameworks
CREWAI_VENV := .venv-crewai
# The Claude Agent SDK gets venvs of its own: its wheel carries the Claude Code CLI (a native
# program of ~400 MB), which its tests run; the floor pins mcp 1.x, which the SDK then needed.
CLAUDE_VENV := .venv-claude-agent
FW_LANES := $(FW_VENV) $(FW_VENV)-previous $(FW_VENV)-floor $(CREWAI_VENV) $(CREWAI_VENV)-previous \
  $(CREWAI_VENV)-floor $(FW_VENV)-mid $(CREWAI_VENV)-mid $(CLAUDE_VENV) $(CLAUDE_VENV)-floor
FW_TESTS := -W ignore::DeprecationWarning --framework-venv tests/frameworks tests/wiring/test_import_order.py \
  tests/wiring/test_missing_targets.py tests/tooling/test_doctor.py
FW_PYTEST := -m pytest -q -p no:cacheprovider -rfEs $(FW_TESTS)

# uv builds them too: pip took 1.5 and 3.5 minutes from an empty venv. Each from its lock
# (tests/locks/venv-<name>.txt, written from tests/frameworks/requirements*.txt). $(1): the venv,
# $(2): its interpreter.
define FW_VENV_RULE
$(1)/.stamp: $(LOCKS)/$(patsubst .%,%,$(1)).txt pyproject.toml $(VENV)/.stamp-test
	test -x $(1)/bin/python || $(UV) venv -q --python $(2) $(1)
	$$(call FROM_LOCK,$(1)/bin/python,$$<)
	touch $$@
endef
$(foreach venv,$(FW_LANES),$(eval $(call FW_VENV_RULE,$(venv),$(PYTHON))))
# The bidi lanes' (above) on their interpreter.
$(foreach venv,$(BIDI_LANES),$(eval $(call FW_VENV_RULE,$(venv),$(BIDI_PYTHON))))

frameworks: $(addsuffix /.stamp,$(FW_LANES))
	OTEL_TOOLCALLS_LANE=$(FW_VENV) $(FW_VENV)/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(FW_VENV)-previous $(FW_VENV)-previous/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(FW_VENV)-floor $(FW_VENV)-floor/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(CREWAI_VENV) $(CREWAI_VENV)/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(CREWAI_VENV)-previous $(CREWAI_VENV)-previous/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(CREWAI_VENV)-floor $(CREWAI_VENV)-floor/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(FW_VENV)-mid $(FW_VENV)-mid/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(CREWAI_VENV)-mid $(CREWAI_VENV)-mid/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(CLAUDE_VENV) $(CLAUDE_VENV)/bin/python $(FW_PYTEST)
	OTEL_TOOLCALLS_LANE=$(CLAUDE_VENV)-floor $(CLAUDE_VENV)-floor/bin/python $(FW_PYTEST)

# wrapt 1.x and 2.x are both supported: the adapters' tests run again on the newest wrapt 1.x, in a
# venv of its own (the version lane "wrapt-1"), so they run beside the rest.
wrapt1: $(VENV)/.stamp-test
	$(PY) tests/versions/run.py wrapt-1

# Each SDK's adapter tests on the oldest version pyproject.toml accepts (and where its stream design
# changed), each in its own venv under .version-venvs/, two at a time (tests/versions/run.py).
versions: $(VENV)/.stamp-test
	$(PY) tests/versions/run.py

# The openai and anthropic SDKs' own tests (their tests/lib, from the sdists on PyPI, at the newest
# versions _wiring/tested_versions.py states) with the package instrumented, in venvs of their own under
# .sdk-suites/; those that did not pass run again bare and instrumented. Fails on a test whose
# outcome differs, or on any toolcall.internal_errors. After the lanes, alone: the SDKs' own
# timing tests fail beside other jobs on two cores. SDK_SUITE_FULL=1 runs the whole suite bare too.
.PHONY: sdk-suites
sdk-suites: $(VENV)/.stamp-test
	$(PY) tests/sdk_suites/run.py

# The peers' own test suites (those whose sdists carry their tests: openai-v2 with its cassettes,
# OpenLLMetry's openai), bare and with the package instrumented on the peer's own providers, after
# the peer and before it, in venvs of their own under .peer-suites/ (tests/peer_suites/run.py).
# Fails on a second inference span, on a run where the package recorded nothing, on any
# toolcall.internal_errors, on any test lost, and on a difference from bare other than the package's
# own spans under the peer's and its toolcall.* annotations on the peer's span.
.PHONY: peer-suites
peer-suites: $(VENV)/.stamp-test
	$(PY) tests/peer_suites/run.py

# Each peer goes into its own venv under .bench-venvs/ (benchmarks/venvs.py): they patch the same SDKs.
bench: $(VENV)/.stamp-test
	$(PY) benchmarks/run.py

bench-quick: $(VENV)/.stamp-test
	$(PY) benchmarks/run.py --quick

bench-providers: $(VENV)/.stamp-test
	$(PY) benchmarks/providers.py

clean:
	rm -rf $(VENV) $(FW_LANES) $(BIDI_LANES) $(VIEWER_VENV) .version-venvs .sdk-suites .peer-suites .newest .pytest_cache .mypy_cache .ruff_cache

# ---- The pipeline users run (issue 30): Jaeger v2 and the repo's Collector, built from their
# Go modules into .pipeline/bin (ignored). Each binary is its own stamp: rebuilt only when its
# module's go.mod/go.sum (a pinned version) or main.go changes. Jaeger v1.75.0 is Jaeger v2.12.0;
# the Collector (collector-config/go/agent, contrib v0.161.0) runs both the agents and the
# gateways: its tail sampler decides a stopping gateway's pending traces (main.go says why).
PIPELINE := .pipeline
PIPELINE_BIN := $(PIPELINE)/bin
GO ?= go
GO_BUILD := CGO_ENABLED=0 $(GO) build -trimpath
JAEGER_MOD := collector-config/go/jaeger
AGENT_MOD := collector-config/go/agent

.PHONY: pipeline-bins alertmanager pipeline-test pipeline-load jaeger jaeger-stop jaeger-clean

$(PIPELINE_BIN)/jaeger: $(JAEGER_MOD)/go.mod $(JAEGER_MOD)/go.sum
	cd $(JAEGER_MOD) && $(GO_BUILD) -o $(CURDIR)/$@ github.com/jaegertracing/jaeger/cmd/jaeger

$(PIPELINE_BIN)/otelcol-agent: $(AGENT_MOD)/go.mod $(AGENT_MOD)/go.sum $(AGENT_MOD)/main.go
	cd $(AGENT_MOD) && $(GO_BUILD) -o $(CURDIR)/$@ .

pipeline-bins: $(PIPELINE_BIN)/jaeger $(PIPELINE_BIN)/otelcol-agent

# Debian's Alertmanager, for the pipeline test's alert (like promtool above).
alertmanager:
	@command -v prometheus-alertmanager >/dev/null 2>&1 || { \
	  echo "installing Debian's prometheus-alertmanager package"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus-alertmanager >/dev/null) \
	  || { echo "could not install Debian's prometheus-alertmanager: make test needs it" >&2; exit 1; }; }

# The main suite holds the configs' validate test and the pipeline test: they need the binaries.
unit: pipeline-bins alertmanager

# `make test` from a clean clone: the Go builds take minutes of CPU from cold caches, so they run
# beside lint, typecheck and the main suite's installs (apt, the viewer venv), which time nothing;
# the main suite and the lanes then find them built. The installs go one at a time: two apt-gets
# at once would race for dpkg's lock.
TEST_SETUP := lint typecheck promtool redis-server alertmanager $(VIEWER_VENV)/.stamp chromium
.PHONY: test-setup test-setup-steps

test-setup:
	$(MAKE) --no-print-directory -j2 -O pipeline-bins test-setup-steps

test-setup-steps: $(VENV)/.stamp-test
	@for step in $(TEST_SETUP); do $(MAKE) --no-print-directory $$step || exit 1; done

pipeline-test: $(VENV)/.stamp-test pipeline-bins promtool alertmanager
	$(PY) -m pytest -q -p no:cacheprovider tests/downstream/test_collector_validate.py tests/downstream/test_pipeline.py

# Load and faults through the pipeline (tests/pipeline/load.py): numbers for the note, not a test.
pipeline-load: $(VENV)/.stamp-test pipeline-bins
	$(PY) tests/pipeline/load.py

# Jaeger v2, built above, on 127.0.0.1 with the demo's traces in its Badger store
# (.pipeline/jaeger-data); the API URLs are printed (the module build serves a placeholder UI page).
# `make jaeger-stop` stops it and keeps the traces for the next `make jaeger`; `make jaeger-clean`
# stops it and wipes them.
jaeger: $(VENV)/.stamp-demo pipeline-bins
	$(PY) examples/viewer/jaeger.py up

jaeger-stop:
	@$(PYTHON) examples/viewer/jaeger.py down

jaeger-clean:
	@$(PYTHON) examples/viewer/jaeger.py clean

# ---- The fast inner loop (issue 33): lint, typecheck and the main suite without the `e2e` tests
# (tests/helpers/markers.py): no apt, no browser, no Go, no venv but the main one.
# `-m "not e2e and not timing"` drops the load-sensitive ones too.
.PHONY: check
CHECK_MARK ?= not e2e
check: $(VENV)/.stamp-test lint typecheck
	$(PY) -m pytest -q -p no:cacheprovider -m "$(CHECK_MARK)"
