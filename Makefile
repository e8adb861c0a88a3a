# Agent Harness: build, install, test, benchmark and lint.
#
#   make build   bin/harness and bin/harness-hook (the small hook binary)
#   make install both into $(PREFIX)/bin (PREFIX=~/.local by default)
#   make test    the whole test suite (builds the opa CLI first if needed)
#   make test-grids  the long grids whole (slow; test runs a sample of
#                them under the race detector; CI runs both)
#   make bench   the benchmarks, with allocations (bench-gateway, bench-memory
#                and bench-hook among them)
#   make bench-compare  one decision, the harness's against cedar-go deciding
#                an equivalent policy in the same run (the bench/ module)
#   make lint    gofmt, go vet (with the build tags of the slow suites too),
#                opa fmt, opa check --strict, no binaries in git
#   make fuzz    the fuzz tests, FUZZTIME each (slow; not part of test)
#   make conformance  the official MCP conformance suite, straight and through
#                the gateway (installs its npm packages, Node 22 among them)
#   make test-redis-cluster   the Redis ledger through failovers (slow; not part of test)
#   make durability   kill -9 of harness serve at random points of its calls,
#                DURABILITY_RUNS times (slow; make test runs 10)
#   make soak    20 clients over HTTP for 60 s, on SQLite and on Redis
#   make chaos   the same while upstreams, Redis and the SQLite file fail

OPA_VERSION ?= v1.22.3
BIN         := $(CURDIR)/bin
OPA         := $(BIN)/opa
HARNESS     := $(BIN)/harness
HARNESS_HOOK := $(BIN)/harness-hook
FUZZTIME    ?= 30s
BENCHTIME   ?= 1s
# make install puts the harness in $(PREFIX)/bin: ~/.local/bin, which needs
# no root (make install PREFIX=/usr/local for every user).
PREFIX      ?= $(HOME)/.local
DURABILITY_RUNS ?= 200
# make bench-hook runs the hook's benchmark HOOK_RUNS times.
HOOK_RUNS   ?= 5

export OPA_BIN := $(OPA)

UPSTREAM    := $(BIN)/upstream

.PHONY: all build install tools redis chromium npm conformance-npm bench-npm bench-memory test test-grids go-test opa-test e2e conformance test-redis-cluster durability soak chaos bench bench-gateway bench-hook bench-compare lint fuzz clean

all: build

# The small hook binary goes beside the harness: it runs that harness, and
# hook install references it when it is there.
build:
	go build -o $(HARNESS) ./cmd/harness
	go build -o $(HARNESS_HOOK) ./cmd/harness-hook

install:
	GOBIN=$(PREFIX)/bin go install ./cmd/harness ./cmd/harness-hook
	@echo "installed $(PREFIX)/bin/harness and $(PREFIX)/bin/harness-hook"

# The real opa CLI, built from the Go module proxy at the pinned version,
# redis-server (Debian's package) for the ledger's Redis tests, which start
# their own server on a free loopback port, and Chromium (Debian's package)
# for the tests that open the HTML report and the live view in a browser.
tools: $(OPA) redis chromium npm

# The official MCP TypeScript SDK, for the end-to-end tests (pinned in
# e2e/package-lock.json).
npm: e2e/node_modules/.package-lock.json

e2e/node_modules/.package-lock.json: e2e/package.json e2e/package-lock.json
	npm ci --prefix e2e --no-audit --no-fund

# The official MCP conformance suite, server-everything and Node 22 (the
# suite needs it; Debian's is 20), from npm, pinned in
# e2e/conformance/package-lock.json.
conformance-npm: e2e/conformance/node_modules/.package-lock.json

e2e/conformance/node_modules/.package-lock.json: e2e/conformance/package.json e2e/conformance/package-lock.json
	npm ci --prefix e2e/conformance --no-audit --no-fund

# The Redis tests use $$HARNESS_TEST_REDIS when it is set, else start
# redis-server; only when neither is there, and as root with apt-get, is
# it installed from Debian's packages.
redis:
	@if [ -n "$$HARNESS_TEST_REDIS" ] || command -v redis-server >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing redis-server from Debian's packages"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	else \
		echo "the ledger's tests need Redis: install redis-server (apt install redis-server, brew install redis)," >&2; \
		echo "or set HARNESS_TEST_REDIS=redis://host:port/db to a server they may write to" >&2; \
		exit 1; \
	fi

# The browser tests use $$HARNESS_CHROMIUM when it is set, else chromium on
# PATH; only when neither is there, and as root with apt-get, is it
# installed from Debian's packages. Without it those tests fail.
chromium:
	@if [ -n "$$HARNESS_CHROMIUM" ] || command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium from Debian's packages"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "the browser tests need Chromium: install it (apt install chromium)," >&2; \
		echo "or set HARNESS_CHROMIUM to a Chromium or Chrome binary" >&2; \
		exit 1; \
	fi

$(OPA):
	GOBIN=$(BIN) go install github.com/open-policy-agent/opa@$(OPA_VERSION)

test: go-test opa-test e2e

go-test: $(OPA) redis chromium
	go vet ./...
	go test -race -count=1 -timeout 30m ./...

# The long grids whole: the policy's differential grids (the quick rules
# and the decision cache held to the rules one by one, the plans of the
# other entry points to topdown, over every role,
# tool kind and usage around each threshold), the soundness grids of role
# inclusion, the tokenizer's long texts and the reports over 100,000
# decisions. Under the race detector, in test, they run a sample (see
# internal/race); CI runs both.
test-grids:
	go test -count=1 -timeout 30m -run '^(TestCacheAgreesWithTheEngine|TestViewsAgreeWithTopdown|TestQuickAgreesWithTheRules|TestQuickAgreesOnOriginsAgentsAndProtection|TestLevelsCacheAgrees|TestFloodOfMessages|TestCoveredByIsSound|TestToolsWithinIsSound|TestAsksWithinIsSound|TestLongPiecesCountNoFewer|TestPartsCountAsTheWhole|TestMemoAnswersAsEncoding|TestLargeLogTotalsEqualTheLedger|TestReportLargeLog)$$' ./policy ./compiler ./budget ./report ./cmd/harness

# The compiled bundle, checked by the real opa CLI: its Rego tests pass, and
# opa build accepts it.
opa-test: $(OPA) build
	rm -rf $(BIN)/bundle
	$(HARNESS) compile --out $(BIN)/bundle
	$(OPA) test $(BIN)/bundle
	$(OPA) build -b $(BIN)/bundle -o $(BIN)/bundle.tar.gz

# The Redis ledger through failovers, on servers the tests start on
# loopback: a Redis Cluster whose master hands its slots to a replica and
# then hangs, and a master with a replica under Sentinels failing over, while
# callers race for shell slots (half a minute).
test-redis-cluster: redis
	go vet -tags failover ./budget
	go test -race -count=1 -tags failover -run 'TestRedisCluster|TestRedisSentinel' ./budget

# The gateway against a real MCP client, over stdio, with the TypeScript SDK.
e2e: build npm
	go build -o $(UPSTREAM) ./testdata/upstream
	HARNESS_BIN=$(HARNESS) UPSTREAM_BIN=$(UPSTREAM) node --test e2e/

# The conformance suite's server scenarios against the fixture upstream and
# server-everything, each straight over HTTP and through harness serve --http;
# fails unless the fixture passes them all and whatever passes straight passes
# through the gateway too. Results in bin/conformance/.
conformance: build conformance-npm
	go build -o $(UPSTREAM) ./testdata/upstream
	HARNESS_BIN=$(HARNESS) UPSTREAM_BIN=$(UPSTREAM) e2e/conformance/run.sh

# No result without its charge: harness serve over stdio, killed with SIGKILL
# at a random point of its calls, DURABILITY_RUNS times; the ledger must hold
# every received result's charge and no charge twice.
durability:
	HARNESS_DURABILITY_RUNS=$(DURABILITY_RUNS) go test -count=1 -timeout 60m -run '^TestKilledGatewayLosesNoCharge$$' -v ./cmd/harness

# The gateway under load (internal/soak, build tag soak): SOAK_CLIENTS
# clients (20) over HTTP for SOAK_DURATION (60s) with mixed calls, once on
# the SQLite ledger and once on a Redis of its own; chaos kills the
# upstreams meanwhile, restarts Redis and locks the SQLite file for 2 s.
# Each run checks the ledger against what the clients were charged, and
# reports calls, latency, memory and goroutines (also in bin/soak/).
soak: redis
	SOAK_OUT=$(BIN)/soak go test -tags soak -count=1 -timeout 20m -run '^(TestUnread|TestSoak)$$' -v ./internal/soak

chaos: redis
	SOAK_OUT=$(BIN)/soak go test -tags soak -count=1 -timeout 20m -run '^TestChaos$$' -v ./internal/soak

bench: $(OPA) redis
	go test -run '^$$' -bench . -skip 'GatewayLatency|GatewayMemory|HookCall|HookStart' -benchmem -benchtime $(BENCHTIME) ./...
	$(MAKE) bench-gateway bench-memory bench-hook

# A plain MCP proxy that governs nothing, supergateway, from npm (pinned in
# e2e/supergateway/package-lock.json): the reference point of the gateway
# over HTTP.
bench-npm: e2e/supergateway/node_modules/.package-lock.json

e2e/supergateway/node_modules/.package-lock.json: e2e/supergateway/package.json e2e/supergateway/package-lock.json
	npm ci --prefix e2e/supergateway --no-audit --no-fund

# One decision of the harness (evaluated, and from its decision cache)
# against cedar-go deciding an equivalent role/tool/budget policy, in one
# run, with the ratios: bench/ is a module of its own, so that cedar-go is
# no dependency of the harness. Its test holds the two policies' decisions
# equal first. COMPARE_RUNS runs of each benchmark.
COMPARE_RUNS ?= 3

bench-compare:
	cd bench && go test -count=1 . && go run . -runs $(COMPARE_RUNS)

# Latency the gateway adds: the same calls straight to the upstream and
# through harness serve, 2000 of each over stdio; then over HTTP, through
# harness serve --http and through supergateway --stateful in front of the
# same upstream, 500 of each at result sizes from 20 bytes to 100 KB.
bench-gateway: bench-npm
	go test -run '^$$' -bench 'GatewayLatency$$' -benchtime 2000x ./cmd/harness
	SUPERGATEWAY_BIN=$(CURDIR)/e2e/supergateway/node_modules/supergateway/dist/index.js \
		go test -run '^$$' -bench GatewayLatencyHTTP -benchtime 500x ./cmd/harness

# The gateway's resident memory after 10,000 calls across 100 sessions.
bench-memory:
	go test -run '^$$' -bench GatewayMemory -benchtime 1x ./cmd/harness

# One hook call as Claude Code makes it (a new process each time): from the
# process's start to its answer with the hook daemon up, the small hook
# binary and harness hook claude-code against a trivial Go binary that reads
# stdin and dials a unix socket, in turn within each iteration, HOOK_RUNS
# runs (p50 and p99 of each, and the ratios to the floor); then the harness
# with the daemon, without it, and the opa CLI deciding the same call.
bench-hook: $(OPA)
	go test -run '^$$' -bench HookStart -benchtime 200x -count $(HOOK_RUNS) ./cmd/harness
	go test -run '^$$' -bench HookCall -benchtime 200x ./cmd/harness

lint: $(OPA)
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: the files above need formatting"; exit 1; }
	@! git ls-files -z | xargs -0 file --mime-type | grep -E ': *application/x-(executable|pie-executable|sharedlib|object)' \
		|| { echo "lint: compiled files are committed (build outputs belong in bin/)"; exit 1; }
	go vet ./...
	go vet -tags failover,soak ./...    # the tests behind build tags (make test-redis-cluster, soak, chaos)
	$(OPA) fmt --list --fail rego/ examples/policies/
	$(OPA) check --strict rego/ examples/policies/

fuzz:
	go test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./roles
	go test -run '^$$' -fuzz FuzzDecide -fuzztime $(FUZZTIME) ./policy
	go test -run '^$$' -fuzz FuzzCacheAgrees -fuzztime $(FUZZTIME) ./policy
	go test -run '^$$' -fuzz FuzzQuickAgreesWithTheRules -fuzztime $(FUZZTIME) ./policy
	go test -run '^$$' -fuzz FuzzPlanAgrees -fuzztime $(FUZZTIME) ./policy/plan
	go test -run '^$$' -fuzz FuzzShortcutsAreOPAs -fuzztime $(FUZZTIME) ./policy/plan
	go test -run '^$$' -fuzz FuzzViewsAgree -fuzztime $(FUZZTIME) ./policy
	go test -run '^$$' -fuzz FuzzSuspectCoversProtection -fuzztime $(FUZZTIME) ./policy
	go test -run '^$$' -fuzz FuzzMatcherRegex -fuzztime $(FUZZTIME) ./compiler
	go test -run '^$$' -fuzz FuzzConfig -fuzztime $(FUZZTIME) ./config
	go test -run '^$$' -fuzz FuzzPieces -fuzztime $(FUZZTIME) ./budget
	go test -run '^$$' -fuzz FuzzBPE -fuzztime $(FUZZTIME) ./budget
	go test -run '^$$' -fuzz FuzzPartsCountAsTheWhole -fuzztime $(FUZZTIME) ./budget
	go test -run '^$$' -fuzz FuzzMaskAndBound -fuzztime $(FUZZTIME) ./events
	go test -run '^$$' -fuzz FuzzAppendEntry -fuzztime $(FUZZTIME) ./events
	go test -run '^$$' -fuzz FuzzAppendInput -fuzztime $(FUZZTIME) ./events
	go test -run '^$$' -fuzz FuzzAppend -fuzztime $(FUZZTIME) ./internal/jsonstr
	go test -run '^$$' -fuzz FuzzImageSize -fuzztime $(FUZZTIME) ./internal/media
	go test -run '^$$' -fuzz FuzzRawJSON -fuzztime $(FUZZTIME) ./gateway
	go test -run '^$$' -fuzz FuzzUnquote -fuzztime $(FUZZTIME) ./gateway
	go test -run '^$$' -fuzz FuzzQuickMessage -fuzztime $(FUZZTIME) ./gateway
	go test -run '^$$' -fuzz FuzzValidJSON -fuzztime $(FUZZTIME) ./gateway
	go test -run '^$$' -fuzz FuzzAmbiguity -fuzztime $(FUZZTIME) ./internal/ijson
	go test -run '^$$' -fuzz FuzzFoldCase -fuzztime $(FUZZTIME) ./internal/ijson
	go test -run '^$$' -fuzz FuzzKeyForm -fuzztime $(FUZZTIME) ./internal/ijson
	go test -run '^$$' -fuzz FuzzEncodeRequest -fuzztime $(FUZZTIME) ./hookclient

clean:
	rm -rf $(BIN)
