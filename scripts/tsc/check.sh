#!/usr/bin/env bash
# tsc --strict over the TypeScript declarations of package declare: the
# golden file of its fixtures, and the example host's declarations with a
# program written against them (program.ts). Each declaration file is
# checked alone, as its names are global. Run `npm ci` here first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
tsc="$here/node_modules/.bin/tsc"
opts=(--noEmit --strict --target es2022 --lib es2022)
"$tsc" "${opts[@]}" "$root/declare/testdata/actions.d.ts"
echo "declare/testdata/actions.d.ts: ok"
"$tsc" "${opts[@]}" "$root/examples/supplychain/testdata/supplychain.d.ts" "$here/program.ts"
echo "examples/supplychain/testdata/supplychain.d.ts with program.ts: ok"
