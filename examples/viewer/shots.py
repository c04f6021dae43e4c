"""Headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) on the Phoenix viewer.

`png --out docs`: the screenshots in docs/GUIDE.md, from the demo's traces in a running viewer.
`text --span ID`: what the page shows of one span (Info and Attributes tabs) as JSON, for the test.
Runs in .venv-viewer. Every request off loopback is refused and reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, Route, sync_playwright

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from examples.viewer.control import get_json

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOOPBACK = {"127.0.0.1", "localhost", "[::1]"}
TIMEOUT_MS = 60_000


@contextmanager
def browser(refused: list[str]) -> Iterator[BrowserContext]:
    """A headless Chromium with a fresh profile; requests off loopback are aborted into refused."""

    def guard(route: Route) -> None:
        if urllib.parse.urlsplit(route.request.url).hostname in LOOPBACK:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    with tempfile.TemporaryDirectory(prefix="viewer-chromium-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        context.set_default_timeout(TIMEOUT_MS)
        context.route("**/*", guard)
        try:
            yield context
        finally:
            context.close()


def open_span(page: Page, *, url: str, span_id: str) -> None:
    """The span's trace, the span selected: Phoenix resolves an OTel span id to its page."""
    page.goto(f"{url}/redirects/spans/{span_id}")
    page.wait_for_url("**selectedSpanNodeId=**")
    page.get_by_text(span_id, exact=True).first.wait_for()
    page.wait_for_load_state("networkidle")


def show_attributes(page: Page) -> None:
    """The selected span's Attributes tab (clicked again if the page was not yet listening)."""
    tab = page.get_by_role("tab", name="Attributes")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while tab.get_attribute("aria-selected") != "true":
        if time.monotonic() > deadline:
            raise TimeoutError("the Attributes tab did not open")
        tab.click()
        page.wait_for_timeout(200)
    page.get_by_text("toolcall.outcome").first.wait_for()


def read_span(*, url: str, span_id: str) -> dict[str, Any]:
    refused: list[str] = []
    with browser(refused) as context:
        page = context.new_page()
        open_span(page, url=url, span_id=span_id)
        info = page.inner_text("body")
        show_attributes(page)
        attributes = page.inner_text("body")
    return {"info": info, "attributes": attributes, "refused": refused}


def _spans(url: str, project: str, **query: str) -> list[dict[str, Any]]:
    encoded = urllib.parse.urlencode({"limit": 1000, **query})
    return get_json(f"{url}/v1/projects/{urllib.parse.quote(project)}/spans?{encoded}")["data"]


def _turn(url: str, project: str, title: str) -> dict[str, dict[str, Any]]:
    """The newest trace of one demo turn: its spans by name."""
    (root, *_) = _spans(url, project, name=f"demo: {title}")
    spans = _spans(url, project, trace_id=root["context"]["trace_id"])
    return {span["name"]: span for span in spans}


def screenshots(*, url: str, project: str, out: Path) -> list[Path]:
    cut = _turn(url, project, "server cut mid-arguments: refused")
    refused: list[str] = []
    with browser(refused) as context:
        page = context.new_page()
        open_span(page, url=url, span_id=cut["execute_tool get_weather"]["context"]["span_id"])
        page.screenshot(path=out / "viewer-trace.png")
        open_span(page, url=url, span_id=cut["tool_call get_weather"]["context"]["span_id"])
        show_attributes(page)
        page.screenshot(path=out / "viewer-aborted-call.png")
    if refused:
        raise SystemExit(f"the viewer's pages asked for addresses off loopback: {refused}")
    return [out / "viewer-trace.png", out / "viewer-aborted-call.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", choices=["png", "text"])
    parser.add_argument("--url", default="http://127.0.0.1:6006")
    parser.add_argument("--project", default="otel-toolcalls-demo")
    parser.add_argument("--out", type=Path, default=Path("docs"))
    parser.add_argument("--span", help="text: the OTel span id to open")
    args = parser.parse_args()
    if args.command == "text":
        print(json.dumps(read_span(url=args.url, span_id=args.span)))
        return
    for path in screenshots(url=args.url, project=args.project, out=args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
