package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// UpstreamError is an upstream's JSON-RPC error, which the gateway passes on
// to the agent as it is: code, message and data.
//
// Two things in mcp-go stand in the way, and this file goes round them: its
// client keeps only the message of an error (and not even the kind, for
// codes it does not know), and its server answers every handler error with
// code -32603. So the upstream's transport keeps the error of each call
// whole (keepErrors), the server's error hook notes it under the request's
// id, and what the agent's transport writes has the code and data put back
// (errorStream).
type UpstreamError struct {
	Code    int
	Message string
	Data    any
}

func (e *UpstreamError) Error() string { return e.Message }

// errorSlot is where a call's upstream error is kept: its context carries it
// down to the transport.
type errorSlot struct{}

// keepError notes resp's JSON-RPC error in the slot ctx carries, if any.
func keepError(ctx context.Context, resp *transport.JSONRPCResponse, err error) (*transport.JSONRPCResponse, error) {
	if slot, ok := ctx.Value(errorSlot{}).(*UpstreamError); ok && resp != nil && resp.Error != nil {
		*slot = UpstreamError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp, err
}

// stdioKeeping and httpKeeping are the upstream transports, keeping errors.
// They embed the transports themselves, so that every optional interface
// mcp-go's client looks for is still there.
type stdioKeeping struct{ *transport.Stdio }

func (t stdioKeeping) SendRequest(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Stdio.SendRequest(ctx, r)
	return keepError(ctx, resp, err)
}

type httpKeeping struct{ *transport.StreamableHTTP }

func (t httpKeeping) SendRequest(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, r)
	return keepError(ctx, resp, err)
}

// errorStream puts upstream errors back into the responses of one stream
// of the agent's (the stdio connection, or one HTTP request).
type errorStream struct {
	mu   sync.Mutex
	byID map[string]*UpstreamError // by the request id, as JSON
}

type streamKey struct{}

func withStream(ctx context.Context, s *errorStream) context.Context {
	return context.WithValue(ctx, streamKey{}, s)
}

// note keeps e for the response to request id of the stream ctx carries.
func note(ctx context.Context, id any, e *UpstreamError) {
	s, _ := ctx.Value(streamKey{}).(*errorStream)
	key, err := json.Marshal(id)
	if s == nil || err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*UpstreamError{}
	}
	s.byID[string(key)] = e
}

// rewrite returns p, a JSON-RPC message as a transport writes it (a line,
// or a server-sent event), with an error noted for its id put back.
func (s *errorStream) rewrite(p []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) == 0 || !bytes.Contains(p, []byte(`"error"`)) {
		return p
	}
	i, j := bytes.IndexByte(p, '{'), bytes.LastIndexByte(p, '}')
	if i < 0 || j < i {
		return p
	}
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(p[i:j+1], &msg) != nil || msg.Error == nil {
		return p
	}
	e, ok := s.byID[string(msg.ID)]
	if !ok {
		return p
	}
	delete(s.byID, string(msg.ID))
	out, err := json.Marshal(mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(msg.ID),
		Error:   mcp.NewJSONRPCErrorDetails(e.Code, e.Message, e.Data),
	})
	if err != nil {
		return p
	}
	return append(append(append([]byte{}, p[:i]...), out...), p[j+1:]...)
}

// errorWriter is the agent's stdio stream, errors put back.
type errorWriter struct {
	w io.Writer
	s *errorStream
}

func (e errorWriter) Write(p []byte) (int, error) {
	if _, err := e.w.Write(e.s.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errorResponseWriter is an HTTP response to the agent, errors put back.
type errorResponseWriter struct {
	http.ResponseWriter
	s *errorStream
}

func (e errorResponseWriter) Write(p []byte) (int, error) {
	if _, err := e.ResponseWriter.Write(e.s.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (e errorResponseWriter) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e errorResponseWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }
