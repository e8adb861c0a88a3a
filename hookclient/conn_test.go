package hookclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// encodingJSON is a request as json.Encoder writes it: what the daemon
// read before the request was written by hand.
func encodingJSON(t testing.TB, req Request) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(req); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A request is written byte for byte as json.Encoder writes it, whatever
// its strings hold.
func TestEncodeRequestAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		req  Request
	}{
		{"a hook call", NewRequest([]byte(pre), "/p", Env{WorkDir: "/w", Home: "/h", Getenv: func(k string) string { return "v-" + k }})},
		{"no env", Request{Payload: []byte(`{}`)}},
		{"an empty env", Request{Payload: []byte(`[]`), Env: map[string]string{}}},
		{"no payload", Request{Project: "p", Env: map[string]string{"A": "1"}}},
		{"a payload to compact", Request{Payload: []byte(" {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\": \"x y\" } ")}},
		{"HTML in the payload", Request{Payload: []byte(`{"cmd":"a<b>c&d\u2028","s":"<\u2029>"}`)}},
		{"escapes", Request{Payload: []byte(`"\"\\\/\b\f\n\r\t\u0000"`), Project: "\"\\/\b\f\n\r\t\x00\x01\x1f\x7f"}},
		{"HTML in strings", Request{Payload: []byte(`1`), WorkDir: "<script>&amp;</script>", Env: map[string]string{"<k>": "&v"}}},
		{"line and paragraph separators", Request{Payload: []byte(`1`), Project: "a\u2028b\u2029c\u2027d\u202a"}},
		{"invalid UTF-8", Request{Payload: []byte(`1`), Project: "a\xffb\xc3(c\xe2\x82d\xed\xa0\x80e", Env: map[string]string{"\xfe": "\xc0\xaf"}}},
		{"not ASCII", Request{Payload: []byte(`{"é":"日本語 😀"}`), WorkDir: "/home/ünï/日本/😀"}},
		{"keys in order", Request{Payload: []byte(`1`), Env: map[string]string{"b": "2", "a": "1", "B": "3", "": "0", "ab": "4"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := encodingJSON(t, tt.req)
			if got := appendRequest(nil, tt.req); !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func FuzzEncodeRequest(f *testing.F) {
	f.Add([]byte(pre), "/p", "/w", "HOME", "/h")
	f.Add([]byte(` {"a" : "<&>\u2028"} `), "\x00\"\\", "\xff\xfe", "\u2029", "é")
	f.Fuzz(func(t *testing.T, payload []byte, project, workDir, k, v string) {
		if !json.Valid(payload) {
			return // Call sends none
		}
		req := Request{Payload: payload, Project: project, WorkDir: workDir, Env: map[string]string{k: v, "HOME": v + k}}
		if got, want := appendRequest(nil, req), encodingJSON(t, req); !bytes.Equal(got, want) {
			t.Errorf("got\n%q\nwant\n%q", got, want)
		}
	})
}

// listen is a unix socket in a directory of the test's, and its path.
func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// serve answers the first connection to l with f on a goroutine of its
// own, and closes it after.
func serve(l net.Listener, f func(net.Conn)) {
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		f(c)
	}()
}

// A connection's reads and writes end at its deadline, with a peer that
// takes the connection and neither reads nor answers.
func TestConnDeadline(t *testing.T) {
	t.Parallel()
	l, path := listen(t)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := dialUnix(path, time.Second, time.Now().Add(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-accepted
	defer peer.Close()
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, errTimeout) {
		t.Errorf("a read from a silent peer: %v", err)
	}
	// Larger than any socket buffer: the peer reads nothing.
	if n, err := c.Write(make([]byte, 64<<20)); !errors.Is(err, errTimeout) || n == 64<<20 {
		t.Errorf("a write to a peer that reads nothing: %d, %v", n, err)
	}
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, errTimeout) {
		t.Errorf("a read past the deadline: %v", err)
	}
}

// The deadline is the connection's, not each read's: a peer that sends a
// byte now and then, each before a read would time out, does not keep the
// connection past it.
func TestConnDeadlineIsNotPerRead(t *testing.T) {
	t.Parallel()
	l, path := listen(t)
	const bytes, every = 30, 50 * time.Millisecond // 1.5 s in all
	serve(l, func(c net.Conn) {
		for range bytes {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(every) // the peer's pace, not the test's synchronisation
		}
	})
	c, err := dialUnix(path, time.Second, time.Now().Add(6*every))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if !errors.Is(err, errTimeout) || len(got) >= bytes {
		t.Errorf("read %d of the peer's %d bytes, then %v: the deadline did not end the reads", len(got), bytes, err)
	}
}

// A daemon that answers without end is refused once its answer passes the
// payload's bound, not read for ever.
func TestCallBoundsTheAnswer(t *testing.T) {
	t.Parallel()
	l, path := listen(t)
	serve(l, func(c net.Conn) {
		json.NewDecoder(c).Decode(new(Request))
		io.WriteString(c, `{"Stderr":"`)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for range MaxPayload>>20 + 2 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(c, `","Exit":0}`)
	})
	r, ok := Call(path, Request{Payload: []byte(pre)}, "")
	if !ok || r.Exit != ExitRefused || !strings.Contains(r.Stderr, "the hook daemon did not answer") {
		t.Errorf("got exit %d, %.200q, %v", r.Exit, r.Stderr, ok)
	}
}

// A write is written whole, however little the peer reads at a time; the
// peer's answer is read to its end; a peer that has gone is an error, not
// a signal that kills the process.
func TestConnWritesAndReads(t *testing.T) {
	t.Parallel()
	l, path := listen(t)
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	serve(l, func(c net.Conn) {
		var b bytes.Buffer
		buf := make([]byte, 1000)
		for b.Len() < len(msg) {
			n, err := c.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
		io.WriteString(c, "the answer")
	})
	c, err := dialUnix(path, time.Second, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Write(msg); n != len(msg) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, msg) {
		t.Errorf("the peer read %d bytes, not the %d written", len(b), len(msg))
	}
	answer, err := io.ReadAll(c)
	if string(answer) != "the answer" || err != nil {
		t.Errorf("read %q, %v", answer, err)
	}
	// The peer has closed: writing fails with EPIPE (or a reset), and the
	// test process lives on.
	var werr error
	for range 10 {
		if _, werr = c.Write([]byte("more")); werr != nil {
			break
		}
	}
	if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
		t.Errorf("writing to a closed peer: %v", werr)
	}
}

// No socket, or a path that is no socket, is no connection.
func TestDialNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "none.sock"), file, dir, "", strings.Repeat("x", 200)} {
		if c, err := dialUnix(path, time.Second, time.Now().Add(time.Second)); err == nil {
			c.Close()
			t.Errorf("dialled %q", path)
		}
	}
}

// A daemon that takes the request and closes without an answer answers a
// refusal: the request was sent, so the call is not decided again.
func TestCallWithoutAnswer(t *testing.T) {
	t.Parallel()
	l, path := listen(t)
	serve(l, func(c net.Conn) {
		json.NewDecoder(c).Decode(new(Request))
	})
	r, ok := Call(path, Request{Payload: []byte(pre)}, "")
	if !ok || r.Exit != ExitRefused || !strings.Contains(r.Stderr, "the hook daemon did not answer") {
		t.Errorf("got %+v, %v", r, ok)
	}
}
