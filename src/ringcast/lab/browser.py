"""Opening the lab's HTML in a real browser: headless Chromium driven by Playwright.

Used by the tests (every chart of the report and of a space-time diagram renders, no
script error) and to take the screenshots of ``docs/lab.md``::

    python -m ringcast.lab.browser out/lab/report.html docs/img/report.png

The browser is the system's Chromium (Debian's package ``chromium``; ``CHROMIUM``
names another executable); Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    """The Chromium executable: ``CHROMIUM`` or the first of :data:`CANDIDATES` on PATH."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageResult:
    """What a page did when loaded: its script errors and its charts."""

    errors: list[str] = field(default_factory=list)
    charts: int = 0
    rendered: int = 0
    failed_requests: list[str] = field(default_factory=list)
    focus: tuple[float, float] | None = None
    """The x range of the page's first chart once loaded (a diagram opened on a
    counterexample zooms to it)."""
    probe: Any = None
    """What the ``probe`` script given to :func:`load` returned once the page loaded."""


@contextmanager
def browser() -> Iterator[Any]:
    """A Playwright browser context on the system's Chromium, with a profile directory
    of its own (removed after)."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        raise RuntimeError("no Chromium found: install Debian's 'chromium' or set CHROMIUM")
    with (
        tempfile.TemporaryDirectory(prefix="ringcast-chromium-") as profile,
        sync_playwright() as pw,
    ):
        # Playwright passes --headless and --user-data-dir itself
        b = pw.chromium.launch_persistent_context(
            profile, executable_path=exe, headless=True, args=list(FLAGS[1:])
        )
        try:
            yield b
        finally:
            b.close()


CHARTS_JS = """() => {
  const divs = Array.from(document.querySelectorAll('.plotly-graph-div'));
  const ok = divs.filter(d => d.querySelector('.main-svg') && d._fullData
                           && d._fullData.length > 0);
  return [divs.length, ok.length];
}"""


RANGE_JS = """() => {
  const d = document.querySelector('.plotly-graph-div');
  return d && d._fullLayout && d._fullLayout.xaxis ? d._fullLayout.xaxis.range : null;
}"""


def load(
    b: Any,
    page_path: Path,
    *,
    fragment: str = "",
    screenshot: Path | None = None,
    width: int = 1200,
    height: int = 900,
    selector: str | None = None,
    full_page: bool = False,
    probe: str | None = None,
    timeout: float = 90.0,
) -> PageResult:
    """Open ``page_path`` (a local file) in ``b``; collect script errors and count the
    Plotly charts that rendered (waiting up to ``timeout`` seconds for all of them);
    run the JavaScript function ``probe`` on the page (its result in
    :attr:`PageResult.probe`); optionally save a PNG of the window (of the whole page
    with ``full_page``, or of ``selector``)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    result = PageResult()
    page = b.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.on("pageerror", lambda e: result.errors.append(str(e)))
    page.on(
        "console",
        lambda m: result.errors.append(f"console: {m.text}") if m.type == "error" else None,
    )
    page.on("requestfailed", lambda r: result.failed_requests.append(r.url))
    try:
        url = Path(page_path).resolve().as_uri() + (f"#{fragment}" if fragment else "")
        page.goto(url, wait_until="load", timeout=timeout * 1000)
        with contextlib.suppress(PlaywrightTimeout):  # counted below, drawn or not
            page.wait_for_function(
                f"() => {{ const [n, ok] = ({CHARTS_JS})(); return n === ok; }}",
                timeout=timeout * 1000,
            )
        result.charts, result.rendered = page.evaluate(CHARTS_JS)
        rng = page.evaluate(RANGE_JS)
        result.focus = (float(rng[0]), float(rng[1])) if rng else None
        if probe is not None:
            result.probe = page.evaluate(probe)
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            if selector:
                page.locator(selector).first.screenshot(path=str(screenshot))
            else:
                page.screenshot(path=str(screenshot), full_page=full_page)
    finally:
        page.close()
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m ringcast.lab.browser PAGE PNG [CSS-SELECTOR] [#FRAGMENT]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    page, png = Path(args[0]), Path(args[1])
    selector = next((a for a in args[2:] if not a.startswith("#")), None)
    fragment = next((a[1:] for a in args[2:] if a.startswith("#")), "")
    with browser() as b:
        r = load(b, page, fragment=fragment, screenshot=png, selector=selector)
    print(f"{page}: {r.rendered}/{r.charts} charts rendered, {len(r.errors)} script errors")
    for e in r.errors:
        print(f"  {e}", file=sys.stderr)
    return 0 if not r.errors and r.rendered == r.charts else 1


if __name__ == "__main__":
    sys.exit(main())
