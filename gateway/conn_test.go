package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// A response an upstream sends after a notification reaches its caller only
// once the notification was handed on (to the agent), whether the
// notification is still being handed on or already was: a call's log and
// progress messages come before its result, also now that a response read
// with nothing queued before it goes to its caller without deliver.
func TestResponseAfterItsNotifications(t *testing.T) {
	const (
		note     = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"n"}}`
		response = `{"jsonrpc":"2.0","id":1,"result":{}}`
		request  = `{"jsonrpc":"2.0","id":"up-1","method":"ping"}`
	)
	for _, tc := range []struct {
		name string
		// lines the upstream writes once it has read the call; the last
		// is its request, which tells the test that every line before
		// it was read.
		lines []string
		// held: the first notification is being handed on when the
		// response is read, so the call must wait for it.
		held bool
	}{
		{"notification being handed on", []string{note, response, request}, true},
		{"notifications handed on before", []string{note, note, request, response}, false},
		{"response alone", []string{response, request}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := "read line; printf '%s\\n'"
			for _, l := range tc.lines {
				script += " '" + l + "'"
			}
			script += "; read done"
			entered, release := make(chan struct{}, len(tc.lines)), make(chan struct{})
			requested := make(chan struct{}, 1)
			notes := 0
			c, err := dialStdio(UpstreamConfig{Command: "sh", Args: []string{"-c", script}}, nil, connHandlers{
				notification: func(string, json.RawMessage) {
					notes++
					entered <- struct{}{}
					if tc.held && notes == 1 {
						<-release
					}
				},
				request: func(context.Context, string, json.RawMessage) (json.RawMessage, *rpcError) {
					requested <- struct{}{}
					return json.RawMessage(`{}`), nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			type answer struct {
				m     *message
				notes int
			}
			got := make(chan answer, 1)
			go func() {
				m, err := c.call(context.Background(), "tools/call", json.RawMessage(`{}`))
				if err != nil {
					t.Error(err)
				}
				got <- answer{m, notes}
			}()
			<-requested // every line before the request was read
			if tc.held {
				<-entered
				select {
				case a := <-got:
					t.Fatalf("the response reached its caller while its notification was being handed on: %+v", a.m)
				default:
				}
				close(release)
			}
			a := <-got
			if a.m == nil || string(a.m.Result) != "{}" {
				t.Fatalf("response: %+v", a.m)
			}
			want := 0
			for _, l := range tc.lines {
				if l == note {
					want++
				}
			}
			if tc.lines[len(tc.lines)-1] == response && a.notes != want {
				t.Errorf("the response came after %d notifications handed on, want %d", a.notes, want)
			}
		})
	}
}

// readLine gives each line whole, in a buffer of its own, without its
// line break (LF or CRLF). A line longer than the reader's buffer (a
// result of 100 KB, read through 64 KiB) is gathered in a buffer that
// doubles as it fills: one allocation up to twice the reader's buffer,
// not one each time it fills, each copying what came before.
func TestReadLine(t *testing.T) {
	const size = 64 << 10 // the reader's buffer, as the gateway's
	text := func(n int) string { return strings.Repeat("0123456789abcdef", n/16+1)[:n] }
	for _, tc := range []struct {
		name   string
		input  string
		want   []string
		allocs float64 // at most, reading the first line
	}{
		{name: "short", input: "{}\n", want: []string{"{}"}, allocs: 1},
		{name: "CRLF", input: "{}\r\n[]", want: []string{"{}", "[]"}, allocs: 1},
		{name: "the buffer's size", input: text(size-1) + "\n", want: []string{text(size - 1)}, allocs: 1},
		{name: "a byte past the buffer", input: text(size) + "\n", want: []string{text(size)}, allocs: 1},
		{name: "100 KB", input: text(100<<10) + "\n{}\n", want: []string{text(100 << 10), "{}"}, allocs: 1},
		{name: "100 KB, the last line", input: text(100 << 10), want: []string{text(100 << 10)}, allocs: 1},
		{name: "five buffers", input: text(5*size) + "\n", want: []string{text(5 * size)}, allocs: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readLines(t, bufio.NewReaderSize(strings.NewReader(tc.input), size))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %d lines (%d bytes first), want %d (%d bytes first)", len(got), len(first(got)), len(tc.want), len(first(tc.want)))
			}
			src := strings.NewReader(tc.input)
			r := bufio.NewReaderSize(src, size)
			allocs := testing.AllocsPerRun(20, func() {
				src.Reset(tc.input)
				r.Reset(src)
				readLine(r)
			})
			if allocs > tc.allocs {
				t.Errorf("%v allocations to read a line of %d bytes, want at most %v", allocs, len(tc.want[0]), tc.allocs)
			}
		})
	}
}

// readLines reads r's lines with readLine to its end.
func readLines(t *testing.T, r *bufio.Reader) []string {
	t.Helper()
	var got []string
	for {
		line, err := readLine(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return got
		}
		got = append(got, string(line))
	}
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// A line past maxLine is refused, not gathered whole.
func TestReadLineBound(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", maxLine+1)+"\n"), 64<<10)
	if line, err := readLine(r); err == nil {
		t.Fatalf("read a line of %d bytes, more than maxLine (%d)", len(line), maxLine)
	}
}

// FuzzReadLine holds readLine to a reference: the input split at each
// LF, a CR before it dropped, no line after a final LF; read through
// buffers of 16 bytes and up, so that lines span several of them.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{}\n[]\r\n"), uint8(0))
	f.Add([]byte(strings.Repeat("0123456789", 10)+"\r\n\n\rx"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		var want []string
		for rest := string(data); rest != ""; {
			line, after, found := strings.Cut(rest, "\n")
			if found {
				line = strings.TrimSuffix(line, "\r")
			}
			want, rest = append(want, line), after
		}
		got := readLines(t, bufio.NewReaderSize(bytes.NewReader(data), 16+int(size)))
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
