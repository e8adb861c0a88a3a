package gateway

import (
	"context"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestErrorStreamPutsUpstreamErrorsBack(t *testing.T) {
	auth := &UpstreamError{Code: -32042, Message: "URL elicitation required", Data: map[string]any{"elicitations": []any{}}}
	for _, tt := range []struct {
		name     string
		id       any
		in, want string
	}{
		{"a line", float64(7), `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"URL elicitation required"}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32042,"message":"URL elicitation required","data":{"elicitations":[]}}}` + "\n"},
		{"an event", "a-1", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"error\":{\"code\":-32603,\"message\":\"x\"}}\n\n",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"error\":{\"code\":-32042,\"message\":\"URL elicitation required\",\"data\":{\"elicitations\":[]}}}\n\n"},
		{"another request's error", float64(8), `{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"x"}}` + "\n",
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"x"}}` + "\n"},
		{"a result", float64(7), `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\"error\""}]}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\"error\""}]}}` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &errorStream{}
			note(withStream(context.Background(), s), tt.id, auth)
			if got := string(s.rewrite([]byte(tt.in))); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	// Without a stream in the context, nothing is noted (and nothing breaks).
	note(context.Background(), 1, auth)
	note(withStream(context.Background(), nil), 1, auth)
}

func TestUpstreamMeta(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   *mcp.Meta
		want *mcp.Meta
	}{
		{"none", nil, nil},
		{"the agent's connection only", &mcp.Meta{AdditionalFields: map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, nil},
		{"a progress token and a key of the agent's", &mcp.Meta{ProgressToken: "p-1", AdditionalFields: map[string]any{
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "x"}, "trace": "t-1"}},
			&mcp.Meta{ProgressToken: "p-1", AdditionalFields: map[string]any{"trace": "t-1"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := upstreamMeta(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAgentTextCountsTextAndTextResources(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("text "),
		mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///a.go", Text: "package a"}),
		mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///a.png", Blob: "iVBORw0KGgo="}),
		mcp.NewImageContent("iVBORw0KGgo=", "image/png"),
	}}
	if got := agentText(res); got != "text package a" {
		t.Errorf("agentText = %q", got)
	}
}
