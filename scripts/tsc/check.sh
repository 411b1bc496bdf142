#!/usr/bin/env bash
# tsc --strict over the TypeScript declarations of package declare: the
# golden file of its fixtures, and the example host's declarations with a
# program written against them (program.ts), and the program the example
# host's tests run (a function body in plain JavaScript, checked as
# JavaScript with its JSDoc casts). Each declaration file is checked
# alone, as its names are global. Run `npm ci` here first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
tsc="$here/node_modules/.bin/tsc"
opts=(--noEmit --strict --target es2022 --lib es2022)
"$tsc" "${opts[@]}" "$root/declare/testdata/actions.d.ts"
echo "declare/testdata/actions.d.ts: ok"
"$tsc" "${opts[@]}" "$root/examples/supplychain/testdata/supplychain.d.ts" "$here/program.ts"
echo "examples/supplychain/testdata/supplychain.d.ts with program.ts: ok"
# A program is the body of an async function: wrap it in one to check it.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
{ echo "async function program() {"; cat "$root/examples/supplychain/testdata/program.js"; echo "}"; echo "void program;"; } >"$tmp/program.js"
"$tsc" "${opts[@]}" --allowJs --checkJs "$root/examples/supplychain/testdata/supplychain.d.ts" "$tmp/program.js"
echo "examples/supplychain/testdata/program.js: ok"
