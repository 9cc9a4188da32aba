"""The course website, built and served for a real browser (run with `pytest --site tests/site`).

The site is built with `mkdocs build --strict` into a temporary folder (notebook cache off),
or taken from HOOKED_SITE_DIR when that names a folder already built that way (CI builds it
once), and served on 127.0.0.1 at a free port. Chromium is Debian's (/usr/bin/chromium),
driven by Playwright for Python, which never downloads a browser of its own."""

import functools
import http.server
import importlib.util
import os
import pathlib
import subprocess
import sys
import threading
import urllib.parse

import pytest

from hooked.course import ROOT

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def hooks():
    """website/hooks.py, the build hooks, as a module."""
    spec = importlib.util.spec_from_file_location("hooked_site_hooks", ROOT / "website" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def _built(tmp_path_factory):
    """(the built site's folder, its build log or None). HOOKED_SITE_LOG names the log of the
    build that HOOKED_SITE_DIR holds (`mkdocs build ... 2>&1 | tee FILE`)."""
    given = os.environ.get("HOOKED_SITE_DIR")
    if given:
        path = pathlib.Path(given).resolve()
        assert (path / "index.html").is_file(), f"HOOKED_SITE_DIR={given}: no built site there"
        log = os.environ.get("HOOKED_SITE_LOG")
        return path, pathlib.Path(log).read_text(encoding="utf-8") if log else None
    path = tmp_path_factory.mktemp("site")
    env = dict(os.environ, HOOKED_SITE_CACHE="false", NO_MKDOCS_2_WARNING="1")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(path)],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}"
    return path, build.stdout


@pytest.fixture(scope="session")
def site_dir(_built):
    return _built[0]


@pytest.fixture(scope="session")
def build_log(_built):
    if _built[1] is None:
        pytest.skip("HOOKED_SITE_DIR was given without HOOKED_SITE_LOG, the log of its build")
    return _built[1]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def base_url(site_dir):
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install -y chromium`).")
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run"])
        yield browser
        browser.close()


class Visit:
    """One browser tab that records console errors, failed requests and any request
    that leaves 127.0.0.1 (the site must work offline); `check()` asserts there were none."""

    def __init__(self, browser, base_url, scheme="light", width=1280, height=900):
        self.base_url = base_url
        self.context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
        self.page = self.context.new_page()
        self.errors, self.outside = [], []
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        # A request the browser itself cancelled (net::ERR_ABORTED: the page moved on before the
        # favicon arrived) is no fault of the site; any other failure is.
        self.page.on("requestfailed", lambda request: request.url in self.outside
                     or "ERR_ABORTED" in (request.failure or "")
                     or self.errors.append(f"request failed: {request.url} ({request.failure})"))
        self.context.route("**/*", self._only_local)

    def _only_local(self, route):
        host = urllib.parse.urlsplit(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def open(self, path, every_cell=True):
        """The page at `path`, loaded, with every notebook cell rendered: as a reader sees it on
        scrolling through (the browser skips code cells off the screen, content-visibility, and
        their text and colours are then out of reach of innerText and axe). every_cell=False:
        as the browser shows it on arrival."""
        response = self.page.goto(self.base_url + path, wait_until="load")
        assert response is not None and response.status == 200, f"{path}: {response and response.status}"
        if every_cell:
            self.page.add_style_tag(content=".jupyter-wrapper .jp-Cell { content-visibility: visible !important; }")
        return self.page

    def weight(self):
        """Bytes the open page loaded, uncompressed: its HTML (figures are inlined) and every
        stylesheet, script and image; not the search index, which the whole site shares."""
        return self.page.evaluate("""() => performance.getEntriesByType("navigation")
            .concat(performance.getEntriesByType("resource"))
            .filter(entry => !entry.name.endsWith("/search/search_index.json"))
            .reduce((sum, entry) => sum + entry.decodedBodySize, 0)""")

    def check(self):
        assert not self.outside, f"requests to other hosts (the site must work offline): {self.outside}"
        assert not self.errors, f"console errors: {self.errors}"

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, base_url):
    """A fresh tab; a test ends with `visit.check()`."""
    tab = Visit(browser, base_url)
    yield tab
    tab.close()


@pytest.fixture
def open_tab(browser, base_url):
    """open_tab(scheme="light"|"dark", width=..., height=...): a fresh tab whose browser prefers
    that colour scheme (the site's palette follows it) at that viewport; closed after the test."""
    tabs = []

    def make(**options):
        tabs.append(Visit(browser, base_url, **options))
        return tabs[-1]

    yield make
    for tab in tabs:
        tab.close()
