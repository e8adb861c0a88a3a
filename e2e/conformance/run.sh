#!/usr/bin/env bash
# The official MCP conformance suite's server scenarios (npm
# @modelcontextprotocol/conformance, pinned in package-lock.json here) against
# two servers, each directly over streamable HTTP and through the gateway
# (harness serve --http, with the server behind it over stdio):
#
#   fixture              the fixture upstream (testdata/upstream), which has
#                        the fixtures of every scenario
#   everything           @modelcontextprotocol/server-everything, the
#                        reference server, which lacks most of them
#   fixture-gateway      the fixture through the gateway
#   everything-gateway   server-everything through the gateway
#
# It prints how many scenarios each run passes, and fails unless the fixture
# passes every one directly and every scenario that passes directly passes
# through the gateway too (summary.mjs). The results are written to
# bin/conformance/RUN/ (the suite's checks.json per scenario, its output,
# the servers' logs) and bin/conformance/summary.txt. Every server listens
# on a free loopback port; everything started here is stopped on exit.
#
# `make conformance` builds bin/harness and bin/upstream and installs the npm
# packages (Node 22, which the suite needs, among them) before running this.
# HARNESS_BIN and UPSTREAM_BIN name other binaries; CONFORMANCE_SUITE=all
# adds the scenarios the suite still marks pending.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
harness=${HARNESS_BIN:-$root/bin/harness}
upstream=${UPSTREAM_BIN:-$root/bin/upstream}
suite=${CONFORMANCE_SUITE:-active}
out=$root/bin/conformance
modules=$here/node_modules
node=$modules/node/bin/node
conformance=$modules/@modelcontextprotocol/conformance/dist/index.js
everything=$modules/@modelcontextprotocol/server-everything/dist/index.js
# A run stuck on a scenario that never answers is cut short.
run_timeout=${CONFORMANCE_TIMEOUT:-600}

for f in "$harness" "$upstream" "$node" "$conformance" "$everything"; do
	[[ -e $f ]] || { echo "conformance: $f is missing: make conformance builds and installs what this needs" >&2; exit 2; }
done
"$node" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' ||
	{ echo "conformance: $node is not Node 22 or newer" >&2; exit 2; }

# Each server and suite runs in a session and process group of its own
# (setsid), so that it and its children (the gateway's upstream) are
# stopped together.
servers=()
suites=()
# stop PID...: each process group, politely, then not.
stop() {
	local pid
	for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
	for pid in "$@"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}
trap 'stop "${suites[@]}" "${servers[@]}"' EXIT
trap 'exit 130' INT TERM

free_port() {
	"$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });'
}

# wait_for PORT LOG: until the server started last accepts connections.
wait_for() {
	local pid=${servers[-1]}
	for _ in $(seq 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "conformance: the server logging to $2 exited before it listened:" >&2
			tail -n 20 "$2" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "conformance: nothing listens on 127.0.0.1:$1 after 30 s (see $2)" >&2
	return 1
}

# A home of the gateway's own: the built-in coder role (every tool) for the
# suite's sessions, counters in memory, no logs; and an empty project.
gateway_home() {
	local home=$out/$1/home
	mkdir -p "$home/.lean-ctx" "$out/$1/project"
	cat >"$home/.lean-ctx/harness.toml" <<-'EOF'
		# The gateway of a conformance run.
		[enforcement]
		default_role = "coder"

		[ledger]
		url = "memory:"

		[log]
		events = "off"
		decisions = "off"
	EOF
	echo "$home"
}

# start_direct RUN PORT CMD...: a server listening on PORT itself.
start_direct() {
	local run=$1 port=$2
	shift 2
	mkdir -p "$out/$run"
	setsid "$@" >"$out/$run/server.log" 2>&1 &
	servers+=($!)
	wait_for "$port" "$out/$run/server.log"
}

# start_gateway RUN PORT CMD...: harness serve on PORT, CMD its upstream.
start_gateway() {
	local run=$1 port=$2 home
	shift 2
	home=$(gateway_home "$run")
	setsid env -u XDG_DATA_HOME -u XDG_STATE_HOME -u LEAN_CTX_ROLE -u HARNESS_AGENT -u HARNESS_SESSION HOME="$home" \
		"$harness" serve --http "127.0.0.1:$port" --project "$out/$run/project" -- "$@" \
		>"$out/$run/server.log" 2>&1 &
	servers+=($!)
	wait_for "$port" "$out/$run/server.log"
}

rm -rf "$out"
mkdir -p "$out"
declare -A url
port=$(free_port)
start_direct fixture "$port" "$upstream" --http "127.0.0.1:$port"
url[fixture]=http://127.0.0.1:$port/mcp

# server-everything listens on every interface; the preload binds it to
# loopback.
port=$(free_port)
start_direct everything "$port" env PORT="$port" "$node" --import "$here/loopback.mjs" "$everything" streamableHttp
url[everything]=http://127.0.0.1:$port/mcp

port=$(free_port)
start_gateway fixture-gateway "$port" "$upstream"
url[fixture-gateway]=http://127.0.0.1:$port/mcp

port=$(free_port)
start_gateway everything-gateway "$port" "$node" "$everything" stdio
url[everything-gateway]=http://127.0.0.1:$port/mcp

# The four runs at once: each scenario is a session of its own.
runs=(fixture everything fixture-gateway everything-gateway)
for run in "${runs[@]}"; do
	echo "conformance: $run at ${url[$run]}"
	setsid timeout "$run_timeout" "$node" "$conformance" server --url "${url[$run]}" --suite "$suite" -o "$out/$run" \
		>"$out/$run/suite.log" 2>&1 &
	suites+=($!)
done
for i in "${!suites[@]}"; do
	rc=0
	wait "${suites[$i]}" || rc=$?
	if ((rc == 124)); then echo "conformance: the ${runs[$i]} run was cut short after $run_timeout s" >&2; fi
done
suites=()
stop "${servers[@]}"
servers=()

"$node" "$here/summary.mjs" "$out"
