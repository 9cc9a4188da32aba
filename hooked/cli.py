"""The `hooked` command (also `python -m hooked`)."""

import argparse
import sys

from hooked.course import ROOT


def _generate(arguments):
    from hooked.generate import MarkerError, stale_lessons, write_lessons
    try:
        if arguments.check:
            stale = stale_lessons()
            for path in stale:
                print(f"{path.relative_to(ROOT)} differs from what solutions/ generates")
            if stale:
                print("run `python -m hooked generate` to regenerate lessons/")
                return 1
            print("lessons/ matches solutions/")
            return 0
        written = write_lessons()
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path, backup in written:
        saved = f" (the previous version is saved in {backup.relative_to(ROOT)})" if backup else ""
        print(f"wrote {path.relative_to(ROOT)}{saved}")
    if not written:
        print("lessons/ already matches solutions/")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="hooked", description="Hooked, a hands-on course on PyTorch hooks.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    generate = commands.add_parser("generate", help="make lessons/ from solutions/ (for course authors)")
    generate.add_argument("--check", action="store_true",
                          help="change nothing; exit 1 if lessons/ differs from what solutions/ generates")
    generate.set_defaults(run=_generate)
    return parser


def main(argv=None):
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command is None:
        parser.print_help()
        return 0
    return arguments.run(arguments)
