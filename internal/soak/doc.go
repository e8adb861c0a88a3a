// Package soak holds the gateway's soak and chaos runs (issue 14, item 9),
// behind the build tag soak, so that make test does not run them:
//
//	go test -tags soak -run TestSoak -v ./internal/soak    # make soak
//	go test -tags soak -run TestChaos -v ./internal/soak   # make chaos
//
// Each run builds the real binaries and starts harness serve --http with
// the fixture upstream behind it and a ledger in SQLite or a redis-server
// of its own; $SOAK_CLIENTS clients (20) make mixed calls over HTTP for
// $SOAK_DURATION (60s), and the chaos runs meanwhile kill the upstreams,
// restart Redis and lock the SQLite file from another process. Each run
// reports the calls served, their latency, the gateway's memory, threads
// and goroutines, and checks that the ledger holds exactly what the
// clients were charged and that every refusal says why.
package soak
