"""``python _before.py app_a.py app_b.py ...``: every app's module (its SDK imports) first, then what
``opentelemetry-instrument``'s sitecustomize does, then each app's ``main()`` in turn.

One process for all: importing the SDKs is most of a run's cost, and each app streams its own call
id. An app that fails prints ``APP FAILED <app>`` and its traceback; the others still run.
"""

import importlib.util
import sys
import traceback
from pathlib import Path

from opentelemetry.instrumentation.auto_instrumentation import initialize

apps = []
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    assert spec is not None and spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = app
    spec.loader.exec_module(app)
    apps.append(app)
initialize()
for app in apps:
    try:
        app.main()
    except Exception:
        print("APP FAILED", app.__name__, flush=True)
        traceback.print_exc()
