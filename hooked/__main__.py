"""`python -m hooked` and the installed `hooked` command. The command's modules are imported
inside `run`, so that Ctrl-C while they load ends quietly too, as it does later."""

import sys


def run():
    try:
        from hooked.command.cli import main
    except KeyboardInterrupt:
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
