"""Timestamped backups of a learner's lesson files, made before the generator or
`hooked reset` replaces them, so that no work is ever lost."""

import datetime
import shutil

from hooked.course import ROOT

BACKUP_DIR = ROOT / ".hooked-backups"


def back_up(paths, into):
    """Copy those of `paths` that exist into a new folder in `into`, named after the time
    (e.g. 20261129-165636-125223); return that folder, or None when none exists."""
    existing = [path for path in paths if path.exists()]
    if not existing:
        return None
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    folder, number = into / stamp, 1
    while True:  # a clock that ticks coarsely (Windows) can give two backups the same time
        try:
            folder.mkdir(parents=True)
            break
        except FileExistsError:
            number += 1
            folder = into / f"{stamp}-{number}"
    for path in existing:
        shutil.copy2(path, folder / path.name)
    return folder
