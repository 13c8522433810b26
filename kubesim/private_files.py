"""Files that hold credentials (the kubeconfig's bearer token, the cluster's token and key),
written so that no one else can read them, even for a moment, in a shared directory.

Written through a temporary file that mkstemp creates with O_EXCL and mode 0600 under a random
name next to the target (never a predictable `PATH.tmp` that someone else may have created
first, world-writable, to read the token through), chmod'ed 0600 through its descriptor, synced,
and renamed over the target: readers see the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

PRIVATE_MODE = 0o600


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, readable and writable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, PRIVATE_MODE)  # mkstemp's mode already; said again, whatever the platform
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
