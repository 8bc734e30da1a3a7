"""A throwaway PostgreSQL cluster for the tests: ``initdb`` in a temporary folder, listening
on a free port of 127.0.0.1 only (its socket in that folder too), stopped and removed at the end.

PostgreSQL refuses to run as root: as root, the cluster runs as the ``postgres`` user (which
Debian's package creates) through ``runuser``. Connections from 127.0.0.1 are trusted, except
for :data:`PASSWORD_USER`, who must give :data:`PASSWORD` (the wrong-password test needs one).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

PASSWORD_USER = "withpassword"
"""A role that logs in only with :data:`PASSWORD`."""
PASSWORD = "right-password"


def find_bin() -> Path | None:
    """The folder of PostgreSQL's server programs (``initdb``, ``pg_ctl``), or None."""
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(found) / "pg_ctl").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    if initdb and (Path(initdb).resolve().parent / "pg_ctl").exists():
        return Path(initdb).resolve().parent
    return None


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A running cluster: make databases in it, get their URLs."""

    def __init__(self, bin_dir: Path, folder: Path, port: int, as_user: list[str]) -> None:
        self.bin_dir = bin_dir
        self.folder = folder
        self.port = port
        self._as_user = as_user

    def url(self, database: str = "postgres", user: str = "postgres", password: str | None = None) -> str:
        """The ``postgresql://`` URL of ``database``."""
        who = f"{user}:{password}" if password is not None else user
        return f"postgresql://{who}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str) -> None:
        """Run ``statement`` as the superuser in the database ``postgres`` (outside a transaction)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]

    def new_database(self) -> str:
        """A fresh, empty database's name."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.sql(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, closing its connections."""
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def run(self, *args: str) -> None:
        """Run a server program of the cluster (as its user)."""
        subprocess.run([*self._as_user, str(self.bin_dir / args[0]), *args[1:]], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def stop(self) -> None:
        """Stop the server (fast: its connections are closed)."""
        with contextlib.suppress(subprocess.SubprocessError):
            self.run("pg_ctl", "stop", "-D", str(self.folder / "data"), "-m", "fast", "-w")


@contextlib.contextmanager
def throwaway_cluster(*, fsync: bool = False) -> Iterator[Cluster]:
    """Start a cluster (see the module docstring); stop and remove it when the block ends.

    ``fsync``: whether the server flushes its WAL to the disk at each commit (off by default:
    the tests need no crash safety from a cluster they throw away, and run faster without).

    Raises:
        FileNotFoundError: PostgreSQL's server programs are not installed.
    """
    bin_dir = find_bin()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL is not installed (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="livecontext-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # (initdb and postgres refuse root)
        account = pwd.getpwnam("postgres")
        os.chown(folder, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    cluster = Cluster(bin_dir, folder, port, as_user)
    data = folder / "data"
    try:
        cluster.run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        hba = f"host all {PASSWORD_USER} 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n" \
              "local all all trust\n"
        (data / "pg_hba.conf").write_text(hba)
        options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder}" \
            f" -c fsync={'on' if fsync else 'off'}"
        cluster.run("pg_ctl", "start", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w")
        try:
            cluster.sql(f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'")
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
