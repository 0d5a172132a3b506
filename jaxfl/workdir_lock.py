"""One process per workdir (:class:`WorkdirLock`): a run, a sweep and their privacy ledger
(:mod:`jaxfl.ledger`, which re-exports these names) are written by one process at a time."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import warnings
from pathlib import Path

from jaxfl import validate

LOCK = ".jaxfl.lock"


class WorkdirLockedError(validate.JaxflValueError):
    """Another process holds the workdir."""


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux), to tell a reused pid from the holder."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WorkdirLock:
    """One process per workdir: ``<workdir>/.jaxfl.lock`` holds the holder's pid, host and
    start time, created exclusively (``O_EXCL``). A lock whose holder is gone (same host, pid
    not running or started later) is stale and taken over with a warning; a lock of another
    host cannot be checked and is refused (delete the file if that host's run is dead)."""

    def __init__(self, workdir):
        self.path = Path(workdir) / LOCK
        self.held = False

    def _payload(self) -> bytes:
        pid = os.getpid()
        return json.dumps({"pid": pid, "host": socket.gethostname(),
                           "start_time": _start_time(pid), "since": time.time()}).encode()

    def acquire(self) -> WorkdirLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is None or not self._stale(holder):
                    who = "an unreadable holder" if holder is None else (
                        f"pid {holder.get('pid')} on host {holder.get('host')}")
                    raise WorkdirLockedError(
                        f"{self.path.parent} is in use by {who} (lock file {self.path}). One run "
                        f"per workdir: wait for it, or delete the lock file if that process is "
                        f"dead.") from None
                warnings.warn(f"Taking over the stale lock of pid {holder.get('pid')} on "
                              f"{self.path.parent} (the process is gone).", stacklevel=2)
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(self._payload())
            self.held = True
            return self
        raise WorkdirLockedError(f"Could not take the lock {self.path}.")

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            # a lock being written this instant: treat as held
            return None

    @staticmethod
    def _stale(holder: dict) -> bool:
        if holder.get("host") != socket.gethostname():
            return False
        pid = int(holder.get("pid", -1))
        if pid <= 0 or not _alive(pid):
            return True
        if pid == os.getpid():
            return False
        recorded, now = holder.get("start_time"), _start_time(pid)
        return recorded is not None and now is not None and recorded != now

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


__all__ = ["LOCK", "WorkdirLock", "WorkdirLockedError"]
