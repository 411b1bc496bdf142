#!/usr/bin/env bash
# Runs the benchmarks of docs/performance.md side by side and checks each
# target: one line "target NAME: RATIO (limit L) ok|over" per target, exit
# status 1 when one is over. Not part of CI: figures need a quiet machine.
# COUNT (default 10) sets -count; the raw output is kept in bench.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-10}
out=${OUT:-bench.txt}
{
  # Each group runs in its own process: a group that leaves a large heap
  # behind (a batch of 10,000 entries) would otherwise slow the next one
  # through the collector and the scavenger.
  bench() { go test -run XXX -benchmem "$@" .; }
  bench -count "$count" -bench 'BenchmarkValidateParameters|BenchmarkRun$|BenchmarkRunText'
  bench -count "$count" -bench 'BenchmarkCanonicalJSON|BenchmarkMarshal'
  bench -count "$count" -bench 'BenchmarkRunBatch'
  bench -count "$count" -bench 'BenchmarkTools'
  bench -count "$count" -cpu 1,2 -bench 'BenchmarkRunParallel|BenchmarkValidateParallel|BenchmarkMachineParallel'
  bench -count "$(( (count + 4) / 5 ))" -bench 'BenchmarkRegister'
} | tee "$out" | grep '^Benchmark' >&2
go run ./scripts/benchratio < "$out"
