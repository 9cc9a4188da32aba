"""Lighthouse 12.2.3 scores of the built website, one page of each kind (home, lesson, solution,
cheat sheet, grading, authors): performance, accessibility, best practices and SEO, on
Lighthouse's mobile profile (a slow phone on a slow network, simulated) unless --desktop. The
site is served gzipped, as GitHub Pages and most static hosts serve it. The lesson and the
solution measured are the heaviest of their kind (the most bytes gzipped).

Goals (issue 13): accessibility 100 and mobile performance >= 90 on every kind of page.
Not a test: performance depends on the machine and on what else runs on it (Lighthouse scales
the time the page's scripts took here by 4, as for a phone). Exits 1 when a goal is missed.

Needs Lighthouse from npm, pinned in benchmarks/package-lock.json (13 needs node 22):
`npm ci --prefix benchmarks`; and Chromium (CHROME_PATH, default /usr/bin/chromium).

Usage: mkdocs build --strict --site-dir site && python benchmarks/lighthouse.py [--site-dir site]
       [--desktop] [--runs N] [--reports FOLDER] [--only lesson,solution,...]
       [--path lessons/01_tensor_hooks/ ...]"""

import argparse
import functools
import gzip
import http.server
import io
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / "benchmarks" / "node_modules" / ".bin" / "lighthouse"
CHROME_FLAGS = "--headless=new --no-sandbox --disable-background-networking --disable-component-update --no-first-run"
CATEGORIES = {"performance": "performance", "accessibility": "accessibility",
              "best-practices": "best practices", "seo": "SEO"}
GOALS = {"performance": 90, "accessibility": 100}  # mobile
# What the performance score is made of: {audit: (label, scale to the unit shown, decimals)}
METRICS = {"first-contentful-paint": ("FCP s", 1e-3, 1), "largest-contentful-paint": ("LCP s", 1e-3, 1),
           "total-blocking-time": ("TBT ms", 1, 0), "cumulative-layout-shift": ("CLS", 1, 2),
           "speed-index": ("SI s", 1e-3, 1)}
COMPRESSED = {".html", ".css", ".js", ".json", ".svg", ".xml", ".txt", ".py", ".ipynb"}


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """The site's files, text ones gzipped when the browser accepts it (as static hosts do)."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = pathlib.Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        if (path.suffix not in COMPRESSED or not path.is_file()
                or "gzip" not in self.headers.get("Accept-Encoding", "")):
            return super().send_head()  # also the redirect of a folder without its final /
        body = _gzipped(path)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@functools.cache
def _gzipped(path):
    return gzip.compress(path.read_bytes(), compresslevel=6)  # the usual level of web servers


def pages(site):
    """{kind: path on the site}, a lesson and a solution the heaviest of their kind."""
    def heaviest(folder):
        built = sorted((site / folder).glob("*/index.html"))
        if not built:
            sys.exit(f"{site}: no pages in {folder}/")
        return max(built, key=lambda page: len(gzip.compress(page.read_bytes()))).parent.relative_to(site)

    return {"home": "", "lesson": f"{heaviest('lessons').as_posix()}/",
            "solution": f"{heaviest('solutions').as_posix()}/", "cheat sheet": "cheatsheet/",
            "grading": "grading/", "authors": "authors/"}


def chosen_pages(paths):
    """{name: path on the site} of the pages given by --path, each named by its path ("home" for
    "" or "/")."""
    return {path.strip("/") or "home": f"{path.strip('/')}/" if path.strip("/") else "" for path in paths}


def scores(url, desktop, report):
    """{category: score 0..100, metric audit: value} of one Lighthouse run on `url`; its whole
    report is written to `report`."""
    command = [str(LIGHTHOUSE), url, "--output=json", f"--output-path={report}", "--quiet",
               f"--chrome-flags={CHROME_FLAGS}", f"--only-categories={','.join(CATEGORIES)}"]
    if desktop:
        command.append("--preset=desktop")
    env = dict(os.environ, CHROME_PATH=os.environ.get("CHROME_PATH", "/usr/bin/chromium"))
    for _ in range(3):  # a run now and then finds no largest paint (NO_LCP) and scores nothing
        run = subprocess.run(command, env=env, capture_output=True, text=True)
        if run.returncode != 0 or not report.is_file():
            sys.exit(f"lighthouse failed on {url}:\n{run.stderr[-2000:]}")
        result = json.loads(report.read_text(encoding="utf-8"))
        if all(result["categories"][name]["score"] is not None for name in CATEGORIES):
            found = {name: round(100 * result["categories"][name]["score"]) for name in CATEGORIES}
            return found | {name: result["audits"][name]["numericValue"] for name in METRICS}
    errors = {name: audit["errorMessage"] for name, audit in result["audits"].items() if audit.get("errorMessage")}
    sys.exit(f"lighthouse scored no {url} in 3 runs: {list(errors.items())[:3]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-dir", default=str(ROOT / "site"), help="the built site (default: site/)")
    parser.add_argument("--desktop", action="store_true", help="Lighthouse's desktop profile instead of mobile")
    parser.add_argument("--runs", type=int, default=1, help="runs per page, the median counts (default 1)")
    parser.add_argument("--reports", help="a folder for each run's whole report (default: none kept)")
    parser.add_argument("--only", help="the kinds of page to measure, comma-separated (default: all), "
                                       "e.g. lesson,solution")
    parser.add_argument("--path", action="append", default=[],
                        help="a page to measure by its path on the site, e.g. lessons/06_cnn_activations/ "
                             "(repeatable; instead of one page of each kind)")
    args = parser.parse_args()
    site = pathlib.Path(args.site_dir).resolve()
    if not (site / "index.html").is_file():
        sys.exit(f"{site}: no built site (mkdocs build --strict --site-dir {args.site_dir})")
    if not LIGHTHOUSE.is_file():
        sys.exit(f"{LIGHTHOUSE} is missing: npm ci --prefix benchmarks")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(GzipHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"Lighthouse 12.2.3, {'desktop' if args.desktop else 'mobile'}, served gzipped from {site}, "
          f"median of {args.runs} run(s)")
    print(f"{'page':12} {'path':37}" + "".join(f"{label:>15}" for label in CATEGORIES.values())
          + "".join(f"{label:>8}" for label, _, _ in METRICS.values()))
    missed = []
    reports = pathlib.Path(args.reports or tempfile.mkdtemp(prefix="lighthouse-"))
    reports.mkdir(parents=True, exist_ok=True)
    try:
        for kind, path in (chosen_pages(args.path) or pages(site)).items():
            if args.only and not args.path and kind not in args.only.split(","):
                continue
            runs = [scores(base + path, args.desktop, reports / f"{re.sub('[ /]', '-', kind)}-{run + 1}.json")
                    for run in range(args.runs)]
            median = {name: statistics.median(run[name] for run in runs) for name in {**CATEGORIES, **METRICS}}
            print(f"{kind:12} {'/' + path:37}" + "".join(f"{round(median[name]):15}" for name in CATEGORIES)
                  + "".join(f"{median[name] * scale:8.{decimals}f}" for name, (_, scale, decimals) in METRICS.items()))
            missed += [f"{kind} {name} {median[name]:.0f} < {goal}" for name, goal in GOALS.items()
                       if median[name] < goal and (name == "accessibility" or not args.desktop)]
    finally:
        server.shutdown()
        server.server_close()
        if not args.reports:
            shutil.rmtree(reports)
    print("\ngoals met (accessibility 100, mobile performance >= 90)" if not missed
          else "\ngoals missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
