package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// responses are responses of every form sendResponse writes: results
// small and of 300 KB (more than a pipe holds, so that a write is cut and
// waits), with line breaks between their values or none, ids of every
// kind (one with a carriage return in it), and errors.
func responses() []*response {
	big, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": strings.Repeat("line 42 of the file: the quick brown fox\n", 300<<10/41)}}})
	return []*response{
		{id: json.RawMessage(`1`), result: json.RawMessage(`{}`)},
		{id: json.RawMessage(`"a-7"`), result: json.RawMessage(`{"content":[{"type":"text","text":"a\nb"}]}`)},
		{id: json.RawMessage("{\"k\":\r1}"), result: json.RawMessage(`[1,2]`)},
		{id: json.RawMessage(`2`), result: json.RawMessage("{\"a\":\n1,\r\n\"b\":2}")},
		{id: json.RawMessage(`3`), result: json.RawMessage("{\"a\":1}\r")},
		{id: json.RawMessage(`4`), result: big},
		{id: json.RawMessage(`5`), result: append(append(json.RawMessage(nil), big[:len(big)-1]...), " \n}"...)},
		{id: json.RawMessage(`6`), err: &rpcError{Code: codeInvalidRequest, Message: "no\nline"}},
	}
}

// sendResponse writes what sendOwned writes of the response as one
// message, byte for byte, and leaves the result as it was: to a writer
// without a file descriptor, and to a pipe (in non-blocking mode, through
// the poller), whose writes of 300 KB are cut.
func TestSendResponseWritesTheMessage(t *testing.T) {
	t.Parallel()
	for _, r := range responses() {
		var want bytes.Buffer
		(&lineWriter{w: &want}).sendOwned(r.message())
		if !bytes.HasSuffix(want.Bytes(), []byte("\n")) || bytes.Count(want.Bytes(), []byte("\n")) != 1 {
			t.Fatalf("sendOwned wrote %d line breaks", bytes.Count(want.Bytes(), []byte("\n")))
		}
		before := bytes.Clone(r.result)

		var plain bytes.Buffer
		if err := (&lineWriter{w: &plain}).sendResponse(r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain.Bytes(), want.Bytes()) {
			t.Errorf("id %s, to a buffer: wrote %.80q…, want %.80q…", r.id, plain.Bytes(), want.Bytes())
		}

		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		var wg sync.WaitGroup
		wg.Go(func() { got, _ = io.ReadAll(pr) })
		l := &lineWriter{w: pw}
		err = l.sendResponse(r)
		if err2 := l.sendResponse(r); err == nil { // a second: the descriptor is looked up once
			err = err2
		}
		pw.Close()
		wg.Wait()
		pr.Close()
		if err != nil {
			t.Fatal(err)
		}
		if twice := append(bytes.Clone(want.Bytes()), want.Bytes()...); !bytes.Equal(got, twice) {
			t.Errorf("id %s, to a pipe: wrote %d bytes %.80q…, want %d %.80q…", r.id, len(got), got, len(twice), twice)
		}
		if r.err == nil && !bytes.ContainsAny(r.result, "\r\n") && l.raw == nil {
			t.Errorf("a pipe was not written through its descriptor")
		}
		if !bytes.Equal(r.result, before) {
			t.Errorf("id %s: the result changed", r.id)
		}
	}
}

// FuzzSendResponse holds what sendResponse writes to a pipe equal to what
// sendOwned writes of the response as one message, for ids and results
// of any bytes: line breaks and carriage returns anywhere, JSON or not.
func FuzzSendResponse(f *testing.F) {
	f.Add([]byte(`1`), []byte(`{"content":[{"type":"text","text":"a\nb"}]}`))
	f.Add([]byte("{\"k\":\r1}"), []byte("[1,\n2]"))
	f.Add([]byte(`"x"`), []byte("\r"))
	pr, pw, err := os.Pipe()
	if err != nil {
		f.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	l := &lineWriter{w: pw}
	f.Fuzz(func(t *testing.T, id, result []byte) {
		r := &response{id: id, result: result}
		var want bytes.Buffer
		(&lineWriter{w: &want}).sendOwned(r.message())
		before := bytes.Clone(result)
		got := make([]byte, want.Len())
		var wg sync.WaitGroup
		wg.Go(func() { io.ReadFull(pr, got) })
		err := l.sendResponse(r)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("id %q, result %q: wrote %q, want %q", id, result, got, want.Bytes())
		}
		if !bytes.Equal(result, before) {
			t.Fatalf("the result changed: %q, was %q", result, before)
		}
	})
}

// A response that cannot be written fails as a line that cannot be: the
// error of the write (a broken pipe), told once, and nothing is written
// after it.
func TestSendResponseFailsAsAWrite(t *testing.T) {
	t.Parallel()
	for _, r := range responses() {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pr.Close()
		var told []error
		l := &lineWriter{w: pw, failed: func(err error) { told = append(told, err) }}
		err = l.sendResponse(r)
		if !errors.Is(err, syscall.EPIPE) {
			t.Errorf("id %s: %v, want a broken pipe", r.id, err)
		}
		var pe *os.PathError
		if !errors.As(err, &pe) {
			t.Errorf("id %s: %v (%T), want the error of a write to the file", r.id, err, err)
		}
		if err2 := l.sendResponse(r); err2 != err {
			t.Errorf("id %s: a second response: %v, want %v again", r.id, err2, err)
		}
		if len(told) != 1 || told[0] != err {
			t.Errorf("id %s: told %v, want %v once", r.id, told, err)
		}
		pw.Close()
	}
}

// BenchmarkSendResponse writes the answer of a 100 KB result to a pipe
// that a goroutine drains, as the gateway answers a stdio client:
// "message" makes the response one message and writes it (sendOwned, the
// reference: how every answer was written before), "response" writes the
// result from where it is (sendResponse).
func BenchmarkSendResponse(b *testing.B) {
	text := strings.Repeat("line 42 of the file: the quick brown fox jumps over the lazy dog\n", 100<<10/66)
	result, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
	r := &response{id: json.RawMessage(`17`), result: result}
	for _, c := range []struct {
		name string
		send func(*lineWriter) error
	}{
		{"message", func(l *lineWriter) error { return l.sendOwned(r.message()) }},
		{"response", func(l *lineWriter) error { return l.sendResponse(r) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Go(func() { io.Copy(io.Discard, pr) })
			l := &lineWriter{w: pw}
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.send(l); err != nil {
					b.Fatal(err)
				}
			}
			pw.Close()
			wg.Wait()
			pr.Close()
		})
	}
}
