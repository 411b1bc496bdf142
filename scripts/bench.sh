#!/usr/bin/env bash
# Runs the benchmarks of docs/performance.md side by side and checks each
# target: one line "target NAME: RATIO (limit L) ok|over" per target, exit
# status 1 when one is over. Not part of CI: figures need a quiet machine.
# COUNT (default 10) samples of each benchmark, taken in PROCS (default 5)
# processes; the raw output is kept in bench.txt (OUT to change).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-10}
procs=${PROCS:-5}
per=$(( (count + procs - 1) / procs ))
out=${OUT:-bench.txt}
if [ -z "${ACTIONS_TEST_POSTGRES:-}" ]; then
  eval "$(ACTIONS_PG_FSYNC=on scripts/pg-cluster.sh start)"
  trap 'scripts/pg-cluster.sh stop "$ACTIONS_PG_DIR"' EXIT
fi
{
  # The run's machine and load, for the figures' record.
  echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(go version | cut -d' ' -f3-4) $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2-) nproc=$(nproc)"
  echo "# uptime at start: $(uptime)"
  # Each group runs in its own processes: a group that leaves a large heap
  # behind (a batch of 10,000 entries) would otherwise slow the next one
  # through the collector and the scavenger. And each group runs in PROCS
  # processes of COUNT/PROCS samples: on a shared VM a whole process can
  # run 30% slower than the next, which samples from one process hide.
  bench() { go test -run XXX -benchmem "$@" "${pkg:-.}"; }
  rep() { for _ in $(seq "$procs"); do bench -count "$per" "$@"; done; }
  rep -bench 'BenchmarkValidateParameters|BenchmarkRun$|BenchmarkRunText'
  rep -bench 'BenchmarkCanonicalJSON|BenchmarkMarshal'
  rep -bench 'BenchmarkRunBatch'
  rep -bench 'BenchmarkTools'
  rep -bench 'BenchmarkRunTyped|BenchmarkOutputCheck'
  rep -cpu 1,2 -bench 'BenchmarkRunParallel|BenchmarkValidateParallel|BenchmarkMachineParallel'
  # One MCP tools/call end to end (SDK client and server, in-memory
  # transports): the bare SDK's typed tool against the same tool served
  # by mcpserver.AddTools with the gate and the output check.
  pkg=./mcpserver rep -bench 'BenchmarkToolCall'
  # Registration: 1,000 actions against bare compiles, then 100 to
  # 10,000 actions registered and listed (per action time, heap held).
  bench -count "$(( (count + 4) / 5 ))" -bench 'BenchmarkRegister'
  # The SQL store (docs/database.md): entries appended per second, one
  # writer and eight, and the store's cost per call (against the host's
  # transaction with no record, and against hand-tx), on SQLite (a WAL file
  # in a temp dir) and on PostgreSQL (ACTIONS_TEST_POSTGRES, or a
  # throwaway cluster started here with fsync on). Few samples: each
  # commit waits on the disk.
  go test -run XXX -benchmem -count "$(( (count + 4) / 5 ))" -bench 'BenchmarkAppend|BenchmarkCallStore' ./sqlstore
  # The store's cost per call against the floor a host would write by
  # hand (hand-tx: one transaction doing the body's same UPDATE and
  # inserting the same record's bytes into a table), in the group above
  # on an SQLite file and PostgreSQL, and here with no disk under it
  # (SQLite in memory), beside the same hand transaction into the
  # store's own table and indexes (hand-tx-log) and the registry's call
  # with no store (registry-alone); and a batch's time per step, 1,000
  # steps against 10.
  pkg=./sqlstore rep -bench 'BenchmarkCallMemory|BenchmarkBatchMemory'
  # The load benchmark (clients, replicas, tails) is scripts/load.sh.
  echo "# uptime at end: $(uptime)"
} | tee "$out" | grep '^Benchmark\|^# ' >&2
go run ./scripts/benchratio < "$out"
