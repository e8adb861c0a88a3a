package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's runtime profiles (net/http/pprof: goroutines,
// heap, CPU, traces) on addr, which must be a loopback address, for a
// developer looking into a running gateway ($HARNESS_DEBUG_ADDR). It
// returns the address it listens on and a function that stops it.
func serveDebug(addr string) (string, func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("%q: want host:port", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("%q is not a loopback address: the profiles show what the gateway holds, for this machine only", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l) // ends with ErrServerClosed, or the gateway serves on without its profiles
	}()
	return l.Addr().String(), func() { srv.Close(); <-done }, nil
}
