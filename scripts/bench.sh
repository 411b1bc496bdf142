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
  go test -run XXX -benchmem -count "$count" \
    -bench 'BenchmarkValidateParameters|BenchmarkRun$|BenchmarkRunText|BenchmarkCanonicalJSON|BenchmarkMarshal|BenchmarkRunBatch|BenchmarkTools' .
  go test -run XXX -benchmem -count "$count" -cpu 1,2 -bench 'BenchmarkRunParallel|BenchmarkValidateParallel|BenchmarkMachineParallel' .
  go test -run XXX -benchmem -count "$(( (count + 4) / 5 ))" -bench 'BenchmarkRegister' .
} | tee "$out" | grep '^Benchmark' >&2
go run ./scripts/benchratio < "$out"
