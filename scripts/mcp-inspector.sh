#!/usr/bin/env bash
# Checks the supplychain example with a real MCP client that this project
# did not write: the MCP Inspector CLI, @modelcontextprotocol/inspector-cli
# 1.0.3, pinned in scripts/inspector/package.json and package-lock.json.
#
# It builds the example and, in each of three modes (over stdio, started
# by the Inspector; over streamable HTTP with sessions; over streamable
# HTTP stateless, `serve -http ADDR -stateless`), checks that:
#   1. tools/list gives exactly the example's visible tools and run_batch;
#   2. a valid tools/call comes back with a result (isError not set);
#   3. an invalid tools/call comes back as a result with isError: true that
#      names the parameter at fault (MCP SEP-1303);
#   4. a call of the hidden action fails with JSON-RPC -32602;
# and over HTTP with `serve -tool-search`, that tools/list gives only the
# pinned tool, the batch tool, tool_search and tool_describe, that a
# search finds a tool not listed, which is then called by name, and that
# no search finds the hidden action.
# Over HTTP it calls as the example's editor (its demo bearer token), and
# then stops the server with SIGTERM, which must drain and exit 0.
# It ends with "mcp-inspector: N passed, M failed" and exits 1 on a failure.
#
# Needs Go, Node.js >= 20 and npm. The Inspector is installed with `npm ci`
# into scripts/inspector/node_modules when it is not there yet.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pkg_dir="$root/scripts/inspector"
cli_dir="$pkg_dir/node_modules/@modelcontextprotocol/inspector-cli"

if [ ! -f "$cli_dir/build/cli.js" ]; then
	npm ci --prefix "$pkg_dir" --no-audit --no-fund >&2
fi
version=$(node -p "require('$cli_dir/package.json').version")
if [ "$version" != "1.0.3" ]; then
	echo "mcp-inspector: found inspector-cli $version, want 1.0.3 (run npm ci --prefix scripts/inspector)" >&2
	exit 1
fi

work=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
bin="$work/supplychain"
(cd "$root" && go build -o "$bin" ./examples/supplychain)

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
	sed 's/^/     | /' "$2"
}

# inspect NAME ARGS... runs the Inspector CLI against the example, over
# stdio when $url is empty, else over HTTP at $url; stdout goes to
# $work/NAME.json, stderr (the Inspector's notices, the server's run
# entries) to $work/NAME.err. It returns the CLI's status.
#
# The 1.0.3 CLI reads its own version from "../package.json" when that
# path exists relative to the working directory, else from
# "../../package.json" relative to its module, which does not exist in an
# npm install. So it must start in a folder whose parent holds a
# package.json: its own build folder is one.
inspect() {
	local name=$1
	shift
	if [ -z "$url" ]; then
		(cd "$cli_dir/build" && node cli.js --cli "$bin" serve "$@") >"$work/$name.json" 2>"$work/$name.err"
	else
		(cd "$cli_dir/build" && node cli.js --cli "$url" --transport http \
			--header "Authorization: Bearer editor-demo-token" "$@") >"$work/$name.json" 2>"$work/$name.err"
	fi
}

# check FILE JS: runs JS with `r` bound to FILE's JSON; JS throws to fail.
check() {
	node -e '
		try {
			const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
			'"$2"'
		} catch (e) {
			console.error("check: " + e.message);
			process.exit(1);
		}
	' "$1"
}

export WANT='["carbon-record_emissions","carbon-total_emissions","run_batch","supply-create_actor","supply-delete_actor","supply-get_actor","supply-list_actors"]'

# checks runs the four checks in the current mode ($mode, $url).
checks() {
	# 1. The tool list.
	if inspect list --method tools/list &&
		check "$work/list.json" '
			const got = JSON.stringify(r.tools.map(t => t.name).sort());
			if (got !== process.env.WANT) throw new Error("tools " + got);
			for (const t of r.tools) {
				const a = t.annotations || {};
				if (typeof a.readOnlyHint !== "boolean" || typeof a.destructiveHint !== "boolean")
					throw new Error(t.name + ": both hints must be written");
			}
			const del = r.tools.find(t => t.name === "supply-delete_actor");
			if (del.annotations.destructiveHint !== true) throw new Error("delete_actor is destructive");
		' 2>"$work/list.check"; then
		pass "$mode: tools/list gives the 6 visible tools and the batch tool, with both hints"
	else
		cat "$work/list.check" >>"$work/list.err" 2>/dev/null || true
		fail "$mode: tools/list" "$work/list.err"
	fi

	# 2. A valid call: an actor named in French, resolved by the ref.
	if inspect valid --method tools/call --tool-name supply-get_actor --tool-arg 'actor=Usine de Lyon' &&
		check "$work/valid.json" '
			if (r.isError) throw new Error("isError is set: " + JSON.stringify(r.content));
			const v = JSON.parse(r.content[0].text);
			if (v.id !== "lyon_plant" || r.structuredContent.id !== "lyon_plant") throw new Error("result " + r.content[0].text);
		' 2>"$work/valid.check"; then
		pass "$mode: tools/call supply-get_actor gives the actor"
	else
		cat "$work/valid.check" >>"$work/valid.err" 2>/dev/null || true
		fail "$mode: tools/call supply-get_actor" "$work/valid.err"
	fi

	# 3. An invalid call: a negative figure breaks the schema's minimum.
	if inspect invalid --method tools/call --tool-name carbon-record_emissions --tool-arg actor=lyon_plant co2_t=-5 &&
		check "$work/invalid.json" '
			if (r.isError !== true) throw new Error("isError is not true");
			const text = r.content[0].text;
			if (!text.includes("invalid_parameters") || !text.includes("/co2_t")) throw new Error("text " + text);
		' 2>"$work/invalid.check"; then
		pass "$mode: tools/call carbon-record_emissions with co2_t=-5 gives isError: true"
	else
		cat "$work/invalid.check" >>"$work/invalid.err" 2>/dev/null || true
		fail "$mode: tools/call carbon-record_emissions (invalid)" "$work/invalid.err"
	fi

	# 4. The hidden action is no tool: the call is a JSON-RPC error.
	if ! inspect hidden --method tools/call --tool-name carbon-clear_emissions --tool-arg actor=act_1 &&
		grep -q -- "-32602" "$work/hidden.err"; then
		pass "$mode: tools/call of the hidden action gives -32602"
	else
		fail "$mode: tools/call carbon-clear_emissions (hidden)" "$work/hidden.err"
	fi
}

# search_checks runs the tool search checks (serve -tool-search): the
# list is the pinned tool, the batch tool and the two search tools; a
# search finds a tool that is not listed, which is then called by name;
# the hidden action is never found.
search_checks() {
	if inspect slist --method tools/list &&
		check "$work/slist.json" '
			const got = JSON.stringify(r.tools.map(t => t.name).sort());
			if (got !== JSON.stringify(["run_batch","supply-get_actor","tool_describe","tool_search"])) throw new Error("tools " + got);
		' 2>"$work/slist.check"; then
		pass "$mode: tools/list gives the pinned tool, the batch tool, tool_search and tool_describe"
	else
		cat "$work/slist.check" >>"$work/slist.err" 2>/dev/null || true
		fail "$mode: tools/list" "$work/slist.err"
	fi

	if inspect found --method tools/call --tool-name tool_search --tool-arg 'query=record emissions' &&
		check "$work/found.json" '
			if (r.isError) throw new Error("isError is set: " + JSON.stringify(r.content));
			const names = r.structuredContent.tools.map(t => t.name);
			if (names[0] !== "carbon-record_emissions") throw new Error("found " + JSON.stringify(names));
			if (!r.structuredContent.tools[0].inputSchema.properties.co2_t) throw new Error("no input schema");
		' 2>"$work/found.check"; then
		pass "$mode: tool_search finds carbon-record_emissions first, with its input schema"
	else
		cat "$work/found.check" >>"$work/found.err" 2>/dev/null || true
		fail "$mode: tool_search" "$work/found.err"
	fi

	if inspect byname --method tools/call --tool-name carbon-record_emissions --tool-arg actor=lyon_plant co2_t=2 &&
		check "$work/byname.json" '
			if (r.isError) throw new Error("isError is set: " + JSON.stringify(r.content));
		' 2>"$work/byname.check"; then
		pass "$mode: the found tool, not listed, is called by name"
	else
		cat "$work/byname.check" >>"$work/byname.err" 2>/dev/null || true
		fail "$mode: tools/call of the found tool" "$work/byname.err"
	fi

	if inspect shidden --method tools/call --tool-name tool_search --tool-arg 'query=clear emissions' &&
		check "$work/shidden.json" '
			const names = (r.structuredContent.tools || []).map(t => t.name);
			if (names.includes("carbon-clear_emissions")) throw new Error("the hidden action was found");
			if (!names.includes("carbon-record_emissions")) throw new Error("found " + JSON.stringify(names));
		' 2>"$work/shidden.check"; then
		pass "$mode: tool_search never finds the hidden action"
	else
		cat "$work/shidden.check" >>"$work/shidden.err" 2>/dev/null || true
		fail "$mode: tool_search (hidden)" "$work/shidden.err"
	fi
}

# start_http ARGS... starts the example's HTTP server on a free port and
# sets $url; the address comes from its first line on standard error.
start_http() {
	"$bin" serve -http 127.0.0.1:0 "$@" 2>"$work/server.err" &
	server_pid=$!
	url=
	for _ in $(seq 100); do
		url=$(sed -n 's/.*serving MCP at \(http:[^ ]*\).*/\1/p' "$work/server.err" | head -n 1)
		[ -n "$url" ] && return 0
		sleep 0.1
	done
	echo "mcp-inspector: the HTTP server did not start" >&2
	cat "$work/server.err" >&2
	return 1
}

# stop_http sends SIGTERM and checks that the server drains and exits 0.
stop_http() {
	kill -TERM "$server_pid"
	if wait "$server_pid"; then
		pass "$mode: SIGTERM: the server drains and exits 0"
	else
		fail "$mode: SIGTERM: the server exit status" "$work/server.err"
	fi
	server_pid=
}

mode=stdio url=
checks
mode=http
start_http
checks
stop_http
mode=http-stateless
start_http -stateless
checks
stop_http
mode=http-tool-search
start_http -tool-search
search_checks
stop_http

echo "mcp-inspector: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
