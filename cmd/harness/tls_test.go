package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their files and a pool that trusts it.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "harness test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, key, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	parsed, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}

// With --tls-cert and --tls-key the gateway serves HTTPS, and a bearer
// token travels only inside it; off loopback it refuses to start without
// them.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	harnessBin, upstreamBin := buildBinaries(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[[gateway.tokens]]\nagent = \"ci\"\ntoken = \"tls-token-0123456789abcdef\"\n")
	cert, key, pool := selfSigned(t)
	addr := freeAddr(t)
	srv := exec.Command(harnessBin, "serve", "--http", addr, "--tls-cert", cert, "--tls-key", key, "--project", t.TempDir(), "--", upstreamBin)
	srv.Env = append(os.Environ(), "HOME="+home)
	srv.Stderr = testWriter{t}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	httpsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr + "/mcp"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := httpsClient.Post(url, "application/json", strings.NewReader("{}")); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("harness serve --tls-cert never listened")
		}
	}
	// Plain HTTP on the same port is not answered as MCP.
	if resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader("{}")); err == nil {
		if resp.StatusCode != http.StatusBadRequest { // Go's answer to plain HTTP on a TLS port
			t.Errorf("plain HTTP: %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(httpsClient),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer tls-token-0123456789abcdef"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	if res := call(t, c, "ctx_read", map[string]any{"path": "x"}); res.IsError || text(res) != "contents of x\n" {
		t.Errorf("over TLS: %v %s", res.IsError, text(res))
	}

	// Off loopback, no TLS: refused before it listens.
	_, stderr, code := harnessIn(t, home, nil, "serve", "--http", "0.0.0.0:0", "--allow-remote", "--", upstreamBin)
	if code == exitOK || !strings.Contains(stderr, "needs TLS (--tls-cert and --tls-key)") {
		t.Errorf("a remote bind without TLS: exit %d\n%s", code, stderr)
	}
}
