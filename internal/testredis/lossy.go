package testredis

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// LossyProxy stands between a client and a Redis server and, when told to,
// loses the reply to the next request that holds a given string (a
// script's SHA, one of its arguments): the server has run it, and the
// client's connection is closed before the reply reaches it, as when the
// server dies or the network fails between the two.
type LossyProxy struct {
	// URL is the proxy's redis:// URL.
	URL string

	target string
	armed  atomic.Pointer[[]byte]
	lost   atomic.Int64

	mu    sync.Mutex
	conns []net.Conn
}

// NewLossyProxy starts a proxy to the server of serverURL, until the test
// ends.
func NewLossyProxy(t testing.TB, serverURL string) *LossyProxy {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &LossyProxy{URL: "redis://" + l.Addr().String() + u.Path, target: u.Host}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	return p
}

// LoseReplyTo has the proxy lose the reply to the next request that holds
// s (as the client sends it, in RESP: an argument is a line of its own).
func (p *LossyProxy) LoseReplyTo(s string) {
	b := []byte(s)
	p.armed.Store(&b)
}

// Lost is how many replies the proxy lost.
func (p *LossyProxy) Lost() int { return int(p.lost.Load()) }

func (p *LossyProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *LossyProxy) serve(client net.Conn) {
	p.track(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(server)
	var lose atomic.Bool // the reply now coming from the server is lost
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if want := p.armed.Load(); want != nil && bytes.Contains(buf[:n], *want) && p.armed.CompareAndSwap(want, nil) {
					lose.Store(true)
				}
				if _, err := server.Write(buf[:n]); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		server.Close()
		client.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if lose.Load() {
				p.lost.Add(1)
				break
			}
			if _, err := client.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
	client.Close()
}
