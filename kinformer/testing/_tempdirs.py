"""Temporary directories that a later process removes once their owner is gone.

A process killed with ``SIGKILL`` runs no cleanup, so a plain temporary directory outlives it.
An :class:`OwnedDirectory` holds an exclusive ``flock`` on a file inside it for as long as its
process lives; the kernel releases that lock however the process ends, so :func:`sweep` (which
``kinformer serve`` runs at every start) can tell a live owner's directory from a dead one's
without trusting process ids, which are reused and differ between containers sharing a
``/tmp``. :class:`~kinformer.testing.FakeAPIServer` keeps its TLS material in one, and
``kinformer serve`` its kubeconfig when it is given no path.

Where ``fcntl`` is missing (Windows), directories are still removed at a clean exit, and
:func:`sweep` removes nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import sys
import tempfile
import weakref

log = logging.getLogger(__name__)

LOCK = "owner.lock"  # held by the owner; present only once held, so a sweep never races its making


def _hold(directory: str) -> int | None:
    """Create ``directory``'s lock file, already locked by this process; its descriptor."""
    if sys.platform == "win32":
        return None
    import fcntl

    pending = os.path.join(directory, LOCK + ".new")
    fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, f"{os.getpid()}\n".encode())  # for a reader; the lock is what counts
        os.replace(pending, os.path.join(directory, LOCK))  # the lock moves with the file
    except BaseException:
        os.close(fd)
        raise
    return fd


def _remove(directory: str, fd: int | None) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


class OwnedDirectory:
    """A new directory under the temporary directory (``$TMPDIR``), named ``prefix`` plus a
    random suffix, held by this process until :meth:`cleanup`, garbage collection or exit.

    Like :class:`tempfile.TemporaryDirectory`; and when the process ends without cleaning up,
    :func:`sweep` in a later process removes it.
    """

    def __init__(self, prefix: str) -> None:
        self.name = tempfile.mkdtemp(prefix=prefix)
        try:
            fd = _hold(self.name)
        except BaseException:
            shutil.rmtree(self.name, ignore_errors=True)
            raise
        self._finalizer = weakref.finalize(self, _remove, self.name, fd)

    def cleanup(self) -> None:
        """Remove the directory and release it; later calls do nothing."""
        self._finalizer()

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc_info: object) -> None:
        self.cleanup()


def sweep(prefix: str) -> list[str]:
    """Remove this user's directories named ``prefix*`` under the temporary directory whose owner
    is gone (their lock is free); returns the paths removed. A directory without the lock file
    (being made, or not an :class:`OwnedDirectory`) and one that cannot be read are left alone."""
    if sys.platform == "win32":
        return []
    import fcntl

    root = tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        directory = os.path.join(root, name)
        try:
            found = os.lstat(directory)  # a symlink is not followed, and not ours to remove
            if found.st_uid != os.getuid() or not stat.S_ISDIR(found.st_mode):
                continue
            fd = os.open(os.path.join(directory, LOCK), os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its owner lives
            os.close(fd)
            continue
        _remove(directory, fd)
        log.info("removed %s: the process that made it is gone", directory)
        removed.append(directory)
    return removed
