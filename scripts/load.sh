#!/usr/bin/env bash
# The load benchmark of docs/performance.md: scripts/load drives the SQL
# store's units at 1/4/16 clients over 1 and 2 replicas, on SQLite in
# memory, an SQLite WAL file and PostgreSQL with fsync on (a throwaway
# cluster started here by scripts/pg-cluster.sh unless
# ACTIONS_TEST_POSTGRES is set), and prints one table row per cell.
# Arguments go to the program: -dur 2s (per cell), -engines, -mode,
# -clients, -replicas, -work; -target host,bare drives the example host
# and the bare-SDK server over HTTP instead (docs/performance.md). It
# prints nproc and the load average first: the figures mean little
# without them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${ACTIONS_TEST_POSTGRES:-}" ]; then
  eval "$(ACTIONS_PG_FSYNC=on scripts/pg-cluster.sh start)"
  trap 'scripts/pg-cluster.sh stop "$ACTIONS_PG_DIR"' EXIT
fi
echo "nproc $(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ), $(git rev-parse --short HEAD)"
go run ./scripts/load -mode "${MODE:-plain,queue,commit,locks}" "$@"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
