package metrics

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Paths are what Handler serves: the metrics in Prometheus's formats,
// liveness and readiness.
var Paths = []string{"/metrics", "/healthz", "/readyz"}

// DefaultReadyTimeout bounds a readiness check: /readyz answers within it
// whatever the ledger does.
const DefaultReadyTimeout = time.Second

// HandlerOptions say who may read the metrics and what ready means.
//
// The metrics name agents, roles, tools and reason codes, and say what each
// agent spent: nothing of a call's arguments or results, but more than one
// agent should see of another. So /metrics is open only to a loopback
// listener's clients when no token is configured (the operator scraping
// from this machine, as with node_exporter); with a token (the user's
// [metrics] token or token_sha256) it wants "Authorization: Bearer TOKEN"
// on any listener; off loopback without one it is refused. The agents'
// own bearer tokens never open it. /healthz and /readyz are always open:
// they say ok or not, and a readiness failure's detail only to a caller
// /metrics would admit.
type HandlerOptions struct {
	// Token is the bearer token /metrics wants, TokenSHA256 its SHA-256
	// in hex instead; "" for none.
	Token, TokenSHA256 string
	// Loopback says the listener is on loopback: without a token the
	// metrics are open, and the Host header must be a loopback name
	// (against DNS rebinding: a page of another site whose name points
	// here).
	Loopback bool
	// Ready is nil when the harness can decide (the policy is loaded and
	// the ledger answers), else why not; nil Ready is always ready.
	Ready func(context.Context) error
	// ReadyTimeout bounds Ready (DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Logf hears of refused scrapes and failed readiness checks.
	Logf func(format string, args ...any)
}

// Handler serves Paths: GET /metrics (behind the token, see
// HandlerOptions), GET /healthz (200 while the process serves), GET
// /readyz (200 when ready, else 503). Each answers at once.
func (m *Metrics) Handler(o HandlerOptions) http.Handler {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var digest []byte
	switch {
	case o.TokenSHA256 != "":
		digest, _ = hex.DecodeString(strings.ToLower(o.TokenSHA256))
	case o.Token != "":
		sum := sha256.Sum256([]byte(o.Token))
		digest = sum[:]
	}
	// authorized says whether r may read the metrics, and if not the
	// status and why.
	authorized := func(r *http.Request) (int, string) {
		if digest == nil {
			if o.Loopback {
				return 0, ""
			}
			return http.StatusForbidden, "/metrics off loopback needs a token: set [metrics] token_sha256 (or token) in ~/.lean-ctx/harness.toml"
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], digest) != 1 {
			return http.StatusUnauthorized, "/metrics needs the bearer token of [metrics] in harness.toml"
		}
		return 0, ""
	}
	var reg http.Handler = http.NotFoundHandler()
	if m != nil {
		reg = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: log.New(logWriter(o.Logf), "", 0), Timeout: 10 * time.Second})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if status, why := authorized(r); status != 0 {
			o.Logf("metrics: %d %s from %s: %s", status, r.URL.Path, r.RemoteAddr, why)
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agent-harness metrics"`)
			}
			http.Error(w, why, status)
			return
		}
		reg.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		err := ready(r.Context(), o.Ready, o.ReadyTimeout)
		if err == nil {
			fmt.Fprintln(w, "ready")
			return
		}
		o.Logf("readyz: not ready: %v", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		if status, _ := authorized(r); status == 0 {
			fmt.Fprintf(w, "not ready: %v\n", err)
		} else {
			fmt.Fprintln(w, "not ready")
		}
	})
	return hostCheck(o.Loopback, mux)
}

// ready runs check within timeout: an answer that does not come in time
// is "not ready", at the timeout.
func ready(ctx context.Context, check func(context.Context) error, timeout time.Duration) error {
	if check == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- check(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within %v", timeout)
	}
}

// loopbackNames are the Host names of this machine that a DNS rebinding
// cannot take.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// hostCheck refuses, on a loopback listener, a Host header that is not a
// loopback name.
func hostCheck(loopback bool, h http.Handler) http.Handler {
	if !loopback {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.Trim(host, "[]")
		for _, n := range loopbackNames {
			if strings.EqualFold(host, n) {
				h.ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, fmt.Sprintf("host %q is not this machine's loopback name", host), http.StatusForbidden)
	})
}

// IsLoopback says whether addr (host:port) is on loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr keeps a metrics listener (--metrics ADDR) on loopback unless
// told otherwise (allowRemote); off loopback it needs a metrics token and
// TLS, since the token must not travel in clear text.
func CheckAddr(addr string, allowRemote, token, tls bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--metrics %s: want host:port, such as 127.0.0.1:9464", addr)
	}
	switch {
	case IsLoopback(addr):
		return nil
	case !allowRemote:
		return fmt.Errorf("--metrics %s is not a loopback address: add --allow-remote to serve other machines", addr)
	case !token:
		return fmt.Errorf("--metrics %s: serving other machines needs a token ([metrics] token_sha256 in ~/.lean-ctx/harness.toml)", addr)
	case !tls:
		return fmt.Errorf("--metrics %s: serving other machines needs TLS (--tls-cert and --tls-key): the token must not travel in clear text", addr)
	}
	return nil
}

// ListenOptions are a metrics listener's.
type ListenOptions struct {
	// Addr is host:port; see CheckAddr.
	Addr        string
	AllowRemote bool
	// TLSCert and TLSKey serve HTTPS (PEM files).
	TLSCert, TLSKey string
	// Handler are the handler's options; Loopback is worked out from
	// Addr.
	Handler HandlerOptions
}

// Server is a listener serving Handler.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Listen checks the address (CheckAddr), listens on it and serves Handler
// in the background until Close.
func (m *Metrics) Listen(o ListenOptions) (*Server, error) {
	tls := o.TLSCert != "" || o.TLSKey != ""
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	token := o.Handler.Token != "" || o.Handler.TokenSHA256 != ""
	if err := CheckAddr(o.Addr, o.AllowRemote, token, tls); err != nil {
		return nil, err
	}
	o.Handler.Loopback = IsLoopback(o.Addr)
	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	logf := o.Handler.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Server{addr: l.Addr(), done: make(chan struct{}), srv: &http.Server{
		Handler:           m.Handler(o.Handler),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter(logf), "", 0),
	}}
	go func() {
		defer close(s.done)
		if tls {
			s.srv.ServeTLS(l, o.TLSCert, o.TLSKey)
		} else {
			s.srv.Serve(l)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops the server, giving scrapes under way a second to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// logWriter is a logf as an io.Writer, a line a call.
type logWriter func(string, ...any)

func (l logWriter) Write(p []byte) (int, error) {
	l("metrics: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
