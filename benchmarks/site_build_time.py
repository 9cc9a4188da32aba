"""How long the course website takes to build, and how heavy its lesson pages are.

Build: `mkdocs build --strict` from a cold notebook cache (HOOKED_SITE_CACHE=false), next to
its floor: executing the same notebooks (every page of Lessons and Solutions) with nbclient,
one after another. (The build runs them side by side on all cores, then renders them.)
Goal: build <= 1.3x the floor.

Weight: each notebook page's HTML (figures are inlined as PNG) plus the stylesheets, scripts
and images it links and the search worker's script, uncompressed and without the search
index, which the whole site shares
(goal <= 1.5 MB per page); and gzipped, as GitHub Pages serves it, with the search index (goal
<= 500 KiB; tests/site/test_weight.py checks it on every page, with what the page really loads).

Usage: python benchmarks/site_build_time.py [--repeat N]
Exits 1 when a goal is missed."""

import argparse
import base64
import gzip
import importlib.util
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD_GOAL = 1.3
WEIGHT_GOAL = 1.5e6
GZIPPED_GOAL = 500 * 1024


def _hooks():
    """website/hooks.py, the build hooks: what each page is made of, and how it is executed."""
    spec = importlib.util.spec_from_file_location("hooked_site_hooks", ROOT / "website" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebooks():
    """{(folder, lesson name): text} of every page of Lessons and Solutions, as the site makes them."""
    return _hooks().page_texts()


def floor_seconds():
    hooks = _hooks()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for (kind, name), text in notebooks().items():
            hooks.execute(text, pathlib.Path(folder), f"{kind}/{name}.py")
    return time.perf_counter() - started


def build_seconds(site_dir):
    env = dict(os.environ, HOOKED_SITE_CACHE="false", NO_MKDOCS_2_WARNING="1")
    started = time.perf_counter()
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                            "--site-dir", str(site_dir)], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if build.returncode != 0:
        sys.exit(f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}")
    return seconds


def gzipped(data):
    return len(gzip.compress(data, compresslevel=6))  # the usual level of web servers


def page_weight(site_dir, page):
    """(total bytes, html bytes, [figure bytes], gzipped bytes with the search index) of one built page."""
    html = page.read_bytes()
    total, packed = len(html), gzipped(html) + gzipped((site_dir / "search" / "search_index.json").read_bytes())
    # what the page links, and the search worker's script, which Material's script starts
    # (named in the page's __config) and which loads the search index
    for url in re.findall(r'<(?:link[^>]+rel="(?:stylesheet|icon)"[^>]+href|script[^>]+src|img[^>]+src)="([^"]+)"'
                          r'|"search":\s*"([^"]+)"', html.decode("utf-8")):
        url = url[0] or url[1]
        if url.startswith(("data:", "http:", "https:", "//")):
            continue
        resource = (page.parent / url.split("#")[0].split("?")[0]).resolve()
        if resource.is_file() and resource.is_relative_to(site_dir):
            total += resource.stat().st_size
            packed += gzipped(resource.read_bytes())
    figures = [len(base64.b64decode(data)) for data in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)",
                                                                   html.decode("utf-8"))]
    return total, len(html), figures, packed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, the median counts (default 1)")
    args = parser.parse_args()

    pages = notebooks()
    print(f"{len(pages)} notebook pages: {', '.join(f'{folder}/{name}' for folder, name in pages)}")
    floors, builds = [], []
    with tempfile.TemporaryDirectory() as temporary:
        site_dir = pathlib.Path(temporary) / "site"
        for _ in range(args.repeat):
            floors.append(floor_seconds())
            builds.append(build_seconds(site_dir))
        floor, build = statistics.median(floors), statistics.median(builds)
        ratio = build / floor
        print(f"floor, the notebooks executed with nbclient: {floor:6.1f} s")
        print(f"mkdocs build --strict, cold cache:           {build:6.1f} s  ({ratio:.2f}x the floor; "
              f"goal <= {BUILD_GOAL}x)")
        width = max(len(f"{folder}/{name}") for folder, name in pages)
        print(f"\n{'page':{width}} {'weight':>9} {'html':>9} {'gzipped':>9}  figures (PNG)")
        heaviest = heaviest_gzipped = 0
        for folder, name in pages:
            page = site_dir / folder / name / "index.html"
            total, html, figures, packed = page_weight(site_dir.resolve(), page)
            heaviest, heaviest_gzipped = max(heaviest, total), max(heaviest_gzipped, packed)
            shown = ", ".join(f"{size / 1e3:.0f} kB" for size in figures) or "none"
            print(f"{folder + '/' + name:{width}} {total / 1e6:7.2f} MB {html / 1e3:6.0f} kB "
                  f"{packed / 1024:5.0f} KiB  {shown}")
        index = (site_dir / "search" / "search_index.json").read_bytes()
        print(f"(weight: uncompressed, without the search index; gzipped: with it. The search index, "
              f"shared by every page: {len(index) / 1e3:.0f} kB, {gzipped(index) / 1024:.0f} KiB gzipped)")
        print(f"goals: weight <= {WEIGHT_GOAL / 1e6:.1f} MB, gzipped <= {GZIPPED_GOAL // 1024} KiB")
    missed = ratio > BUILD_GOAL or heaviest > WEIGHT_GOAL or heaviest_gzipped > GZIPPED_GOAL
    print("\ngoals met" if not missed else "\na goal was missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
