#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benchmarks that need one.
#
#   eval "$(scripts/pg-cluster.sh start)"   # starts one, prints the exports
#   scripts/pg-cluster.sh stop "$ACTIONS_PG_DIR"
#
# start installs the Debian package postgresql when no server is found
# (as root), creates a temp dir, runs initdb there as a non-root user (the
# server refuses root: the user postgres, or actions-pg created for it),
# and starts the server on a unix socket in that dir only (no TCP port, so
# no port to collide with). It prints two export lines: ACTIONS_PG_DIR (the
# dir, for stop) and ACTIONS_TEST_POSTGRES (the DSN, for pgx). stop stops
# the server at once and removes the dir.
set -euo pipefail

pgbin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

# as USER CMD...: run CMD as USER when we are root, else as ourselves.
as() {
  local user=$1; shift
  if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

start() {
  local bin
  bin=$(pgbin)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "pg-cluster: installing the Debian package postgresql" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    bin=$(pgbin)
  fi
  local user
  user=$(id -un)
  if [ "$(id -u)" = 0 ]; then
    user=postgres
    if ! id "$user" >/dev/null 2>&1; then
      user=actions-pg
      id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    fi
  fi
  local dir
  dir=$(mktemp -d /tmp/actions-pg.XXXXXX)
  chmod 755 "$dir"
  [ "$(id -u)" = 0 ] && chown "$user" "$dir"
  as "$user" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  # fsync off: the cluster is thrown away; the benchmarks say when they
  # ran with it on.
  as "$user" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 -c fsync=${ACTIONS_PG_FSYNC:-off}" \
    start >&2 || { cat "$dir/server.log" >&2; exit 1; }
  echo "export ACTIONS_PG_DIR='$dir'"
  echo "export ACTIONS_TEST_POSTGRES='postgres://postgres@/postgres?host=$dir&sslmode=disable'"
}

stop() {
  local dir=$1 bin user
  bin=$(pgbin)
  [ -d "$dir/data" ] || return 0
  user=$(stat -c %U "$dir/data")
  as "$user" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:?stop needs the dir that start printed}" ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac
