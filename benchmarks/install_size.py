"""The size of a learner's install, next to the goal: a virtual environment within 1,400 MiB
(issue 13's "1.4 GB", in the units of its figures, du's: its "2.05 GB" venv is 2,048 MiB, its
"754 MB" torch the 754M of `du -sh`).

    python benchmarks/install_size.py                      # requirements.txt, what a learner installs
    python benchmarks/install_size.py --requirements requirements-dev.txt   # the authors' install
    python benchmarks/install_size.py --pypi-linux-cuda    # also: what PyPI's torch brings on Linux

Makes a fresh virtual environment in a temporary folder (deleted afterwards), upgrades pip in it as
.ci/run does, installs the requirements from the course's folder with the pip configuration of this
machine, and prints the environment's size as `du` counts it (disk blocks, in MiB), its largest
packages, and the goal. torch comes from wherever pip finds `torch==2.13.*`: on macOS and Windows,
PyPI's CPU build; on Linux, PyPI's CUDA build, unless the CPU build from PyTorch's CPU wheel index is
already there (see README, "Quick start"); on the course's own machines, a CPU wheel cached on disk.

--pypi-linux-cuda reads, without downloading them, what PyPI's torch 2.13.0 pulls in on Linux
x86_64 for Python 3.11 (the requirements that apply on Linux only: NVIDIA's CUDA libraries and
triton): each wheel's download size from PyPI's file list, and its unpacked size from the zip
directory at the wheel's end (HTTP range requests). Not a test; exits 1 when the goal is missed.
"""

import argparse
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOAL_MIB = 1400
MIB = 1 << 20


def disk_bytes(path):
    """What `du -s` counts: the disk blocks of every file and folder, each hard-linked file once."""
    seen, total = set(), 0
    for folder, _, files in os.walk(path):
        for entry in [folder, *(os.path.join(folder, name) for name in files)]:
            info = os.lstat(entry)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
    return total


def largest(venv, count):
    """The largest entries of site-packages (packages, their .libs and dist-info folders), and bin/."""
    (site,) = venv.glob("lib/python3*/site-packages") or venv.glob("Lib/site-packages")
    sizes = {entry.name: disk_bytes(entry) for entry in site.iterdir()}
    for other in ("bin", "Scripts", "share"):
        if (venv / other).is_dir():
            sizes[f"({other}/)"] = disk_bytes(venv / other)
    return sorted(sizes.items(), key=lambda item: -item[1])[:count]


def _pip(python, arguments, environment):
    """Run pip in the course's folder (requirements.txt says `-e .`); its output only if it fails."""
    done = subprocess.run([str(python), "-m", "pip", *arguments], cwd=ROOT, env=environment,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"pip {' '.join(arguments)} failed:\n{done.stdout}{done.stderr}")


def measure(requirements, count):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="hooked-install-size-"))
    venv = folder / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        environment = dict(os.environ, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
        _pip(python, ["install", "--upgrade", "pip"], environment)
        started = time.perf_counter()
        _pip(python, ["install", "-r", str(requirements)], environment)
        seconds = time.perf_counter() - started
        torch = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return disk_bytes(venv), largest(venv, count), seconds, torch
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- what PyPI's torch brings on Linux

def _linux_tags():
    from packaging.tags import compatible_tags, cpython_tags
    platforms = ([f"manylinux_2_{minor}_x86_64" for minor in range(40, 4, -1)]
                 + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"])
    return {*cpython_tags((3, 11), abis=["cp311", "abi3", "none"], platforms=platforms),
            *compatible_tags((3, 11), "cp311", platforms=platforms)}


LINUX = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64", "os_name": "posix",
         "python_version": "3.11", "python_full_version": "3.11.0", "implementation_name": "cpython",
         "platform_python_implementation": "CPython"}
MACOS = dict(LINUX, platform_system="Darwin", sys_platform="darwin", platform_machine="arm64")


def _get(url, headers=None):
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=120).read()


def _pick_wheel(requirement, tags):
    """(version, file entry, its absolute URL) of the newest release that satisfies `requirement`
    with a wheel for Linux x86_64 and Python 3.11 (pre-releases only when the specifier names one)."""
    from packaging.utils import parse_wheel_filename
    from packaging.version import InvalidVersion, Version
    base = f"https://pypi.org/pypi/{requirement.name}/json"
    releases = json.loads(_get(base))["releases"]
    candidates = []
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not requirement.specifier.contains(version, prereleases=None):
            continue
        for entry in files:
            if entry["filename"].endswith(".whl") and not entry.get("yanked"):
                if set(parse_wheel_filename(entry["filename"])[3]) & tags:
                    candidates.append((version, entry))
    if not candidates:
        raise SystemExit(f"PyPI has no Linux x86_64 wheel for {requirement}")
    version, entry = max(candidates, key=lambda item: item[0])
    return version, entry, urllib.parse.urljoin(base, entry["url"])


def _zip_directory(url, size):
    """The entries of a wheel on PyPI, (name, compressed size, size, method, offset), read from the
    zip's central directory at its end with HTTP range requests: the wheel is not downloaded."""
    tail_start = max(0, size - (1 << 20))
    tail = _get(url, {"Range": f"bytes={tail_start}-{size - 1}"})
    end = tail.rfind(b"PK\x05\x06")
    entries, directory_size, directory_start = struct.unpack("<HII", tail[end + 10:end + 20])
    if 0xFFFFFFFF in (directory_size, directory_start) or entries == 0xFFFF:  # zip64
        locator = tail.rfind(b"PK\x06\x07")
        (record,) = struct.unpack("<Q", tail[locator + 8:locator + 16])
        directory_size, directory_start = struct.unpack("<QQ", tail[record - tail_start + 40:record - tail_start + 56])
    if directory_start >= tail_start:
        directory = tail[directory_start - tail_start:directory_start - tail_start + directory_size]
    else:
        directory = _get(url, {"Range": f"bytes={directory_start}-{directory_start + directory_size - 1}"})
    found, at = [], 0
    while directory[at:at + 4] == b"PK\x01\x02":
        (method,) = struct.unpack("<H", directory[at + 10:at + 12])
        packed, file_size = struct.unpack("<II", directory[at + 20:at + 28])
        name_length, extra_length, comment_length = struct.unpack("<HHH", directory[at + 28:at + 34])
        (offset,) = struct.unpack("<I", directory[at + 42:at + 46])
        name = directory[at + 46:at + 46 + name_length].decode("utf-8")
        extra, inner = directory[at + 46 + name_length:at + 46 + name_length + extra_length], 0
        while inner < len(extra):  # zip64: the sizes and offset that did not fit are here, in this order
            field, length = struct.unpack("<HH", extra[inner:inner + 4])
            if field == 1:
                values = list(struct.unpack(f"<{length // 8}Q", extra[inner + 4:inner + 4 + length // 8 * 8]))
                if file_size == 0xFFFFFFFF:
                    file_size = values.pop(0)
                if packed == 0xFFFFFFFF:
                    packed = values.pop(0)
                if offset == 0xFFFFFFFF:
                    offset = values.pop(0)
                break
            inner += 4 + length
        found.append((name, packed, file_size, method, offset))
        at += 46 + name_length + extra_length + comment_length
    return found


def _requirements_of(url, directory):
    """The wheel's Requires-Dist lines: from PyPI's copy of its METADATA (PEP 658), else from the wheel."""
    from packaging.requirements import Requirement
    try:
        metadata = _get(url + ".metadata").decode("utf-8")
    except urllib.error.HTTPError:
        ((_, packed, _, method, offset),) = [entry for entry in directory
                                             if entry[0].endswith(".dist-info/METADATA") and entry[0].count("/") == 1]
        header = _get(url, {"Range": f"bytes={offset}-{offset + 29}"})
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = offset + 30 + name_length + extra_length
        raw = _get(url, {"Range": f"bytes={start}-{start + packed - 1}"})
        metadata = (zlib.decompress(raw, -15) if method == 8 else raw).decode("utf-8")
    return [Requirement(line.split(":", 1)[1].strip()) for line in metadata.splitlines()
            if line.startswith("Requires-Dist:")]


def pypi_linux_cuda(torch_version="2.13.0"):
    """Rows (name, version, download bytes, unpacked bytes): torch's Linux x86_64 wheel on PyPI and
    everything its Linux-only requirements pull in (the requirements it shares with the macOS build,
    sympy, networkx and the like, are left out: every platform gets them)."""
    from packaging.requirements import Requirement
    tags = _linux_tags()
    todo, rows, seen = [(Requirement(f"torch=={torch_version}"), ())], [], {}
    while todo:
        requirement, extras = todo.pop(0)
        name = requirement.name.lower().replace("_", "-")
        if name in seen:
            continue
        version, entry, url = _pick_wheel(requirement, tags)
        seen[name] = version
        directory = _zip_directory(url, entry["size"])
        rows.append((name, str(version), entry["size"], sum(file_size for _, _, file_size, _, _ in directory)))
        for needed in _requirements_of(url, directory):
            applies = lambda environment: needed.marker is None or any(  # noqa: E731
                needed.marker.evaluate(dict(environment, extra=extra)) for extra in (*extras, ""))
            if not applies(LINUX) or (name == "torch" and applies(MACOS)):
                continue
            todo.append((needed, tuple(needed.extras)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requirements", default="requirements.txt", help="the file to install (default: requirements.txt)")
    parser.add_argument("--largest", type=int, default=12, help="how many of the largest packages to list")
    parser.add_argument("--pypi-linux-cuda", action="store_true",
                        help="also read from PyPI what torch 2.13.0 pulls in on Linux x86_64")
    options = parser.parse_args()

    requirements = ROOT / options.requirements
    size, packages, seconds, torch = measure(requirements, options.largest)
    print(f"a fresh virtual environment with {requirements.name} (torch {torch}, installed in {seconds:.0f} s):")
    print(f"  {size / MIB:,.0f} MiB ({size / 1e9:.2f} GB, {size:,} bytes) as du counts it; goal {GOAL_MIB:,} MiB")
    print("  largest:")
    for name, bytes_ in packages:
        print(f"    {bytes_ / MIB:7,.0f} MiB  {name}")

    if options.pypi_linux_cuda:
        rows = pypi_linux_cuda()
        print("\nPyPI's torch 2.13.0 on Linux x86_64, Python 3.11, and what it pulls in on Linux only:")
        for name, version, download, unpacked in rows:
            print(f"  {name:<24} {version:<12} download {download / 1e6:7,.1f} MB  unpacked {unpacked / 1e6:7,.1f} MB")
        print(f"  total: download {sum(row[2] for row in rows) / 1e9:.2f} GB, "
              f"unpacked {sum(row[3] for row in rows) / 1e9:.2f} GB (the sum of the files' sizes; du counts a little more)")

    met = size <= GOAL_MIB * MIB
    print(f"\ngoal {'met' if met else 'MISSED'}: {size / MIB:,.0f} MiB against {GOAL_MIB:,} MiB")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
