"""Who holds a thread's single-writer lock, and whether that holder is still alive.

A holder is named by its owner string plus its process: host name, pid, and the process's
start time (from ``/proc`` where available) so that a recycled pid is not mistaken for the
holder. On the same host a lock is stale exactly when its process is gone (or a zombie);
a holder on another host can only be judged by the age of its lease.
"""

from __future__ import annotations

import os
import socket

from attrs import frozen

LEASE_TTL_S = 300.0
"""How long a lease held from *another host* stays valid after its last renewal (each
append renews it). Holders on this host are checked by pid instead and never expire."""


@frozen
class Holder:
    """A writer process holding (or asking for) a thread."""

    owner: str
    """Who writes, as given to ``open_thread`` (e.g. an actor id)."""
    host: str
    """The holder's host name."""
    pid: int
    """The holder's process id."""
    start: str
    """The process's start time in clock ticks since boot (``""`` when unknown)."""

    def describe(self) -> str:
        """A one-line description for error messages: ``'owner' (pid 1234 on host)``."""
        return f"{self.owner!r} (pid {self.pid} on {self.host})"


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """``(state, start ticks)`` of a Linux process, or None when /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ")".
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


def current_holder(owner: str) -> Holder:
    """This process, as the holder of a lock taken on behalf of ``owner``."""
    pid = os.getpid()
    stat = _proc_stat(pid)
    return Holder(owner, socket.gethostname(), pid, stat[1] if stat else "")


def process_alive(pid: int, start: str) -> bool:
    """Whether the process ``pid`` (started at ``start``, if known) runs on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by someone else
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, started = stat
    if state in ("Z", "X"):
        return False
    return not start or started == start


def holder_alive(holder: Holder, renewed_at: float, now: float) -> bool:
    """Whether ``holder``'s lease, last renewed at ``renewed_at`` (Unix time), still holds."""
    if holder.host == socket.gethostname():
        return process_alive(holder.pid, holder.start)
    return now - renewed_at < LEASE_TTL_S
