package gateway

import (
	"context"
	"encoding/json"
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
