#!/usr/bin/env bash
# Runs warden's cluster profile on one machine: PostgreSQL (Debian's
# `postgresql` package) as an unprivileged cluster on loopback, the
# Temporal server as a process of its own on it (SQL visibility), and
# warden workers that join it with --temporal-address.
#
#   scripts/cluster.sh install     install PostgreSQL when initdb is missing (apt-get)
#   scripts/cluster.sh postgres    initdb (first time) and start PostgreSQL; create the databases
#   scripts/cluster.sh server      start the Temporal server (worker --server-only --postgres ...)
#   scripts/cluster.sh worker N    start warden worker N (workdir $DIR/w-N, metrics port 9470+N)
#   scripts/cluster.sh up          all of the above with $WORKERS workers (default 2)
#   scripts/cluster.sh down        stop workers, server and PostgreSQL (data is kept)
#   scripts/cluster.sh status      what runs
#
# Settings (environment): WARDEN_CLUSTER_DIR (state, logs, pids; default
# /tmp/warden-cluster), PGPORT (55432), TEMPORAL_PORT (7233), UI_PORT
# (8233; 0 for none), SERVER_METRICS (127.0.0.1:9463), WORKERS (2),
# TASK_QUEUE (warden), WORKER_BIN (default: built from ./cmd/worker into
# $DIR/bin), PG_FAST=1 (fsync off: for tests, never for data you keep),
# SERVER_ARGS / WORKER_ARGS (extra flags). Trust authentication on
# loopback: this is a single-machine profile; deploy/ describes production.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

DIR=${WARDEN_CLUSTER_DIR:-/tmp/warden-cluster}
PGPORT=${PGPORT:-55432}
TEMPORAL_PORT=${TEMPORAL_PORT:-7233}
UI_PORT=${UI_PORT:-8233}
SERVER_METRICS=${SERVER_METRICS:-127.0.0.1:9463}
WORKERS=${WORKERS:-2}
TASK_QUEUE=${TASK_QUEUE:-warden}
PGUSER=warden
POSTGRES_URL="postgres://$PGUSER@127.0.0.1:$PGPORT/temporal?max_conns=20"

die() { echo "cluster: $*" >&2; exit 1; }

pgbin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

# as_pg runs a command as the cluster's owner: the invoking user, or the
# package's `postgres` user when running as root (PostgreSQL refuses root).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd_install() {
  if [ -n "$(pgbin)" ]; then echo "postgresql: $(pgbin)"; return; fi
  echo "== postgresql (apt-get)"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  [ -n "$(pgbin)" ] || die "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
  echo "postgresql: $(pgbin)"
}

cmd_postgres() {
  local bin; bin=$(pgbin) || die "PostgreSQL is not installed: run scripts/cluster.sh install"
  local pg="$DIR/pg"
  mkdir -p "$pg"
  chmod 755 "$DIR"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$pg"
  if [ ! -f "$pg/data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$pg/data" -U "$PGUSER" --auth=trust -E UTF8 --no-instructions >"$DIR/initdb.log" 2>&1 ||
      { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
  fi
  local opts="-c listen_addresses=127.0.0.1 -p $PGPORT -k $pg -c max_connections=400 -c shared_buffers=256MB"
  [ "${PG_FAST:-}" = "1" ] && opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  if ! as_pg "$bin/pg_ctl" -D "$pg/data" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$pg/data" -l "$pg/postgres.log" -w -t 60 -o "$opts" start >/dev/null ||
      { tail -20 "$pg/postgres.log" >&2; die "PostgreSQL did not start"; }
  fi
  for db in temporal temporal_visibility; do
    if ! "$bin/psql" -h 127.0.0.1 -p "$PGPORT" -U "$PGUSER" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$db'" | grep -q 1; then
      "$bin/createdb" -h 127.0.0.1 -p "$PGPORT" -U "$PGUSER" "$db"
    fi
  done
  echo "postgres $POSTGRES_URL (data $pg/data)"
}

worker_bin() {
  if [ -n "${WORKER_BIN:-}" ]; then echo "$WORKER_BIN"; return; fi
  mkdir -p "$DIR/bin"
  (cd "$root" && go build -o "$DIR/bin/worker" ./cmd/worker) >&2
  echo "$DIR/bin/worker"
}

# start NAME READY ARGS...: starts a process in its own session with its
# output in $DIR/NAME.log and waits for the READY line.
start() {
  local name=$1 ready=$2; shift 2
  if [ -f "$DIR/$name.pid" ] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then
    echo "$name already runs (pid $(cat "$DIR/$name.pid"))"; return
  fi
  : >"$DIR/$name.log"
  setsid "$@" >>"$DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/$name.pid"
  for _ in $(seq 1 600); do
    if grep -q "$ready" "$DIR/$name.log"; then grep -v '^$' "$DIR/$name.log" | sed "s/^/$name: /" | head -8; return; fi
    kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null || { tail -20 "$DIR/$name.log" >&2; die "$name exited"; }
    sleep 0.2
  done
  tail -20 "$DIR/$name.log" >&2; die "$name not ready after 120 s"
}

cmd_server() {
  local bin; bin=$(worker_bin)
  mkdir -p "$DIR"
  # The server's data directory holds only its keys here (state is in
  # PostgreSQL): auth/worker.key for the workers, auth/operator.key for
  # starter and other clients.
  printf 'server: {data_dir: %s}\n' "$DIR/server" >"$DIR/server.yaml"
  # shellcheck disable=SC2086
  start server "server only" "$bin" --server-only --config "$DIR/server.yaml" --postgres "$POSTGRES_URL" \
    --port "$TEMPORAL_PORT" --ui-port "$UI_PORT" --metrics-addr "$SERVER_METRICS" ${SERVER_ARGS:-}
}

cmd_worker() {
  local n=${1:?worker number}
  local bin; bin=$(worker_bin)
  mkdir -p "$DIR/w-$n"
  # Workers share one content store: a turn's conversation is kept by
  # reference outside history, and any worker may take the turn over.
  [ -f "$DIR/worker.yaml" ] || printf 'content: {dir: %s}\n' "$DIR/content" >"$DIR/worker.yaml"
  # shellcheck disable=SC2086
  start "worker-$n" "^worker " "$bin" --config "$DIR/worker.yaml" --temporal-address "127.0.0.1:$TEMPORAL_PORT" \
    --key-file "$DIR/server/auth/worker.key" \
    --task-queue "$TASK_QUEUE" --workdir "$DIR/w-$n" --metrics-addr "127.0.0.1:$((9470 + n))" ${WORKER_ARGS:-}
}

stop() {
  local name=$1 pid
  [ -f "$DIR/$name.pid" ] || return 0
  pid=$(cat "$DIR/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/$name.pid"
}

cmd_down() {
  for f in "$DIR"/worker-*.pid; do [ -e "$f" ] && stop "$(basename "$f" .pid)"; done
  stop server
  local bin; bin=$(pgbin) || return 0
  if [ -f "$DIR/pg/data/PG_VERSION" ]; then
    as_pg "$bin/pg_ctl" -D "$DIR/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  echo "stopped (data kept in $DIR)"
}

cmd_status() {
  for f in "$DIR"/*.pid; do
    [ -e "$f" ] || continue
    local pid; pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then echo "$(basename "$f" .pid): pid $pid"; else echo "$(basename "$f" .pid): gone"; fi
  done
  local bin; bin=$(pgbin) || { echo "postgresql: not installed"; return; }
  as_pg "$bin/pg_ctl" -D "$DIR/pg/data" status 2>/dev/null | head -1 || echo "postgresql: stopped"
}

case "${1:-}" in
  install) cmd_install ;;
  postgres) cmd_postgres ;;
  server) cmd_server ;;
  worker) shift; cmd_worker "$@" ;;
  up)
    cmd_install
    mkdir -p "$DIR"
    cmd_postgres
    WORKER_BIN=$(worker_bin); export WORKER_BIN
    cmd_server
    for n in $(seq 1 "$WORKERS"); do cmd_worker "$n"; done
    cat <<MSG

cluster up: Temporal on 127.0.0.1:$TEMPORAL_PORT (PostgreSQL 127.0.0.1:$PGPORT), $WORKERS workers on task queue $TASK_QUEUE
  go run ./cmd/starter run --address 127.0.0.1:$TEMPORAL_PORT --task-queue $TASK_QUEUE --script examples/demo.yaml
  go run ./cmd/starter approvals list --address 127.0.0.1:$TEMPORAL_PORT --task-queue $TASK_QUEUE
  logs and pids in $DIR; stop with scripts/cluster.sh down
MSG
    ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
