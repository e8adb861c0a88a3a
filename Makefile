# Agent Harness: build, test, benchmark and lint.
#
#   make test    the whole test suite (builds the opa CLI first if needed)
#   make bench   the benchmarks, with allocations
#   make lint    gofmt, go vet, opa fmt and opa check --strict
#   make fuzz    the fuzz tests, FUZZTIME each (slow; not part of test)

OPA_VERSION ?= v1.22.3
BIN         := $(CURDIR)/bin
OPA         := $(BIN)/opa
HARNESS     := $(BIN)/harness
FUZZTIME    ?= 30s
BENCHTIME   ?= 1s

export OPA_BIN := $(OPA)

.PHONY: all build tools redis test go-test opa-test bench lint fuzz clean

all: build

build:
	go build -o $(HARNESS) ./cmd/harness

# The real opa CLI, built from the Go module proxy at the pinned version, and
# redis-server (Debian's package) for the ledger's Redis tests, which start
# their own server on a free loopback port.
tools: $(OPA) redis

redis:
	@command -v redis-server >/dev/null || { \
		echo "installing redis-server from Debian's packages"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

$(OPA):
	GOBIN=$(BIN) go install github.com/open-policy-agent/opa@$(OPA_VERSION)

test: go-test opa-test

go-test: $(OPA) redis
	go vet ./...
	go test -race -count=1 ./...

# The compiled bundle, checked by the real opa CLI: its Rego tests pass, and
# opa build accepts it.
opa-test: $(OPA) build
	rm -rf $(BIN)/bundle
	$(HARNESS) compile --out $(BIN)/bundle
	$(OPA) test $(BIN)/bundle
	$(OPA) build -b $(BIN)/bundle -o $(BIN)/bundle.tar.gz

bench: $(OPA) redis
	go test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

lint: $(OPA)
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: the files above need formatting"; exit 1; }
	go vet ./...
	$(OPA) fmt --list --fail rego/ examples/policies/
	$(OPA) check --strict rego/ examples/policies/

fuzz:
	go test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./roles
	go test -run '^$$' -fuzz FuzzDecide -fuzztime $(FUZZTIME) ./policy
	go test -run '^$$' -fuzz FuzzConfig -fuzztime $(FUZZTIME) ./config

clean:
	rm -rf $(BIN)
