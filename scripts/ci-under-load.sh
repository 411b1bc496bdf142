#!/usr/bin/env bash
# Runs .ci/run on a clean clone of HEAD while CPU burners load the
# machine, RUNS times in a row (default 3), and stops at the first
# failure. BURNERS (default 2 per core) busy loops run beside it, as
# `stress -c` would, so that tests which depend on the machine being
# idle (a sleep as a deadline, a goroutine scheduled in time) fail here
# rather than on a shared CI runner. Each run's time and exit status is
# printed; the logs are kept in the clone's parent directory.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
burners=${BURNERS:-$(( 2 * $(nproc) ))}
dir=$(mktemp -d)
chmod 755 "$dir"
git clone -q . "$dir/ci"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq "$burners"); do
  ( while :; do :; done ) &
  pids+=($!)
done
echo "ci-under-load: $(git rev-parse --short HEAD), $burners burners on $(nproc) cores, logs in $dir"
for i in $(seq "$runs"); do
  start=$(date +%s)
  if (cd "$dir/ci" && bash .ci/run) > "$dir/run$i.log" 2>&1; then
    echo "run $i: passed in $(( $(date +%s) - start )) s ($(cut -d' ' -f1-3 /proc/loadavg) load)"
  else
    echo "run $i: FAILED after $(( $(date +%s) - start )) s; see $dir/run$i.log"
    exit 1
  fi
done
