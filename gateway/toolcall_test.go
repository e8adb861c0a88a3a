package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

// toolCallSeeds are params of tools/call, ordinary and not.
var toolCallSeeds = []string{
	`{"name":"ctx_read","arguments":{"path":"a.go"}}`,
	`{"name":"ctx_read","arguments":{"path":"a.go"},"_meta":{"progressToken":1}}`,
	`{ "name" : "ctx_shell" , "arguments" : { "command" : "ls -la <x> & y" } }`,
	`{"name":"a","name":"b"}`,
	`{"NAME":"upper","arguments":{}}`,
	`{"name":"x","Arguments":{"a":1},"arguments":{"b":2}}`,
	`{"name":5}`,
	`{"name":null,"arguments":null}`,
	`{"name":"\u0063tx_read","arguments":[1,2]}`,
	`{"name":"\ud800","arguments":"\u2028"}`,
	`null`,
	`[]`,
	`{}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/x":1,"k":"\u003c"}}`,
}

// readToolCall reads params as json.Unmarshal does (of valid JSON, which
// is all a message's params can be).
func FuzzReadToolCall(f *testing.F) {
	for _, s := range toolCallSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if !json.Valid([]byte(params)) {
			return
		}
		var want toolCall
		wantErr := json.Unmarshal([]byte(params), &want)
		got, err := readToolCall(json.RawMessage(params))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, json.Unmarshal's %v", params, err, wantErr)
		}
		if err != nil {
			return
		}
		if got.Name != want.Name || !bytes.Equal(got.Arguments, want.Arguments) || !bytes.Equal(got.Meta, want.Meta) {
			t.Fatalf("%s: read %+v, json.Unmarshal read %+v", params, got, want)
		}
	})
}

// toolCallParams writes what mustJSON writes of the map it stands for.
func FuzzToolCallParams(f *testing.F) {
	f.Add("ctx_read", `{"path":"a.go"}`, `{"progressToken":1}`)
	f.Add("a<b>&c\u2028", ` { "command" : "ls -la\t<x>" } `, ``)
	f.Add("x", ``, ``)
	f.Add("n", `{"a":"<b"}`, `{"u":"\u2028"}`)
	f.Add("n", "{\"a\":\"\u2028\"}", `{"b":"x>y"}`)
	f.Add("x\xff", `[1, 2.50, "\u00e9\u2029"]`, `{"k":null}`)
	f.Add("", `null`, `{}`)
	f.Fuzz(func(t *testing.T, name, arguments, meta string) {
		if arguments != "" && !json.Valid([]byte(arguments)) || meta != "" && !json.Valid([]byte(meta)) {
			return
		}
		out := map[string]any{"name": name}
		if arguments != "" {
			out["arguments"] = json.RawMessage(arguments)
		}
		if meta != "" {
			out["_meta"] = json.RawMessage(meta)
		}
		want := mustJSON(out)
		got, err := toolCallParams(name, json.RawMessage(arguments), json.RawMessage(meta))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("toolCallParams(%q, %q, %q) = %s, %v; mustJSON: %s", name, arguments, meta, got, err, want)
		}
	})
}

// requestMessage writes what encoding/json writes of the request, params
// compacted: no line break of the params reaches the upstream's line.
func FuzzRequestMessage(f *testing.F) {
	f.Add(int64(1), "tools/call", `{"name":"x","arguments":{"a":1}}`)
	f.Add(int64(-7), "a<b>&\u2028", "{\n\"a\" :\r\n [1,\t2]}")
	f.Add(int64(1<<62), "ping", ``)
	f.Add(int64(3), "x\xff", `"\u003c"`)
	f.Add(int64(3), "x", `{bad`)
	f.Fuzz(func(t *testing.T, n int64, method, params string) {
		want, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      int64           `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params,omitempty"`
		}{"2.0", n, method, json.RawMessage(params)})
		if err != nil {
			want = nil
		}
		if got := requestMessage(n, method, json.RawMessage(params)); !bytes.Equal(got, want) {
			t.Fatalf("requestMessage(%d, %q, %q) = %s; encoding/json: %s", n, method, params, got, want)
		}
	})
}
