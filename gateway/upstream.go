package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// UpstreamConfig is one MCP server behind the gateway: a command run over
// stdio, or a streamable-HTTP URL.
type UpstreamConfig struct {
	Name    string
	Command string
	Args    []string
	Env     []string // KEY=VALUE, added to the gateway's environment
	URL     string
}

// upstream is a live connection to an upstream, restarted with back-off
// when it dies.
type upstream struct {
	cfg     UpstreamConfig
	version string // the harness's, in the client information it gives
	stderr  io.Writer
	changed func() // the upstream's tools changed (or it came back)
	logf    func(string, ...any)

	mu      sync.Mutex
	client  *client.Client
	tools   []mcp.Tool
	down    error // why it is down; nil when up
	closed  bool
	backoff time.Duration
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

func newUpstream(cfg UpstreamConfig, version string, stderr io.Writer, logf func(string, ...any), changed func()) *upstream {
	return &upstream{cfg: cfg, version: version, stderr: stderr, logf: logf, changed: changed, backoff: minBackoff}
}

// start connects, or schedules reconnection if it cannot.
func (u *upstream) start(ctx context.Context) error {
	err := u.connect(ctx)
	if err != nil {
		u.markDown(ctx, err)
	}
	return err
}

func (u *upstream) connect(ctx context.Context) error {
	var t transport.Interface
	if u.cfg.URL != "" {
		h, err := transport.NewStreamableHTTP(u.cfg.URL)
		if err != nil {
			return err
		}
		t = httpKeeping{h}
	} else {
		t = stdioKeeping{transport.NewStdioWithOptions(u.cfg.Command, u.cfg.Env, u.cfg.Args, transport.WithCommandStderrWriter(u.stderr))}
	}
	// The classic handshake: every MCP server speaks it.
	c := client.NewClient(t, client.WithLegacyProtocolOnly())
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent-harness", Version: u.version}
	ictx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := c.Initialize(ictx, init); err != nil {
		c.Close()
		return fmt.Errorf("initialize: %w", err)
	}
	tools, err := listRaw(ictx, t)
	if err != nil {
		c.Close()
		return fmt.Errorf("tools/list: %w", err)
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			go u.refresh(context.Background())
		}
	})
	c.OnConnectionLost(func(err error) { u.markDown(context.Background(), err) })
	u.mu.Lock()
	u.client, u.tools, u.down, u.backoff = c, tools, nil, minBackoff
	u.mu.Unlock()
	return nil
}

// listRaw reads tools/list as the upstream wrote it: mcp-go's typed client
// drops schema keywords it does not model, so the input schema of each tool
// is kept as raw JSON and passed on untouched.
func listRaw(ctx context.Context, t transport.Interface) ([]mcp.Tool, error) {
	var out []mcp.Tool
	cursor := ""
	for page := 0; page < 1000; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		resp, err := t.SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(fmt.Sprintf("harness-tools-%d", page)),
			Method: string(mcp.MethodToolsList), Params: params,
		})
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, resp.Error.AsError()
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return nil, err
		}
		for _, raw := range res.Tools {
			var t mcp.Tool
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, fmt.Errorf("tool %s: %w", raw, err)
			}
			var schemas struct {
				Input  json.RawMessage `json:"inputSchema"`
				Output json.RawMessage `json:"outputSchema"`
			}
			json.Unmarshal(raw, &schemas)
			// Only the raw schemas: setting the typed ones too breaks tools/list.
			t.InputSchema, t.RawInputSchema = mcp.ToolInputSchema{}, schemas.Input
			t.OutputSchema, t.RawOutputSchema = mcp.ToolOutputSchema{}, schemas.Output
			out = append(out, t)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, errors.New("tools/list: too many pages")
}

// refresh reads the tool list again after the upstream said it changed.
func (u *upstream) refresh(ctx context.Context) {
	u.mu.Lock()
	c := u.client
	u.mu.Unlock()
	if c == nil {
		return
	}
	tools, err := listRaw(ctx, c.GetTransport())
	if err != nil {
		u.logf("upstream %s: tools/list: %v", u.cfg.Name, err)
		return
	}
	u.mu.Lock()
	u.tools = tools
	u.mu.Unlock()
	u.changed()
}

// markDown records that the upstream is gone and starts reconnecting.
func (u *upstream) markDown(ctx context.Context, err error) {
	u.mu.Lock()
	if u.closed || u.down != nil {
		u.mu.Unlock()
		return
	}
	u.down = err
	c := u.client
	u.client = nil
	u.mu.Unlock()
	if c != nil {
		go c.Close()
	}
	u.logf("upstream %s is down: %v; restarting", u.cfg.Name, err)
	go u.reconnect(ctx)
}

func (u *upstream) reconnect(ctx context.Context) {
	for {
		u.mu.Lock()
		wait, closed := u.backoff, u.closed
		u.backoff = min(u.backoff*2, maxBackoff)
		u.mu.Unlock()
		if closed {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		err := u.connect(ctx)
		if err == nil {
			u.logf("upstream %s is back", u.cfg.Name)
			u.changed()
			return
		}
		u.mu.Lock()
		u.down = err
		u.mu.Unlock()
		u.logf("upstream %s: restart failed: %v", u.cfg.Name, err)
	}
}

// ErrUpstreamDown is the error of a call to an upstream that is not up.
var ErrUpstreamDown = errors.New("upstream is down")

// call calls a tool of the upstream. A dead connection is an
// ErrUpstreamDown (and a restart); the upstream's own errors, tool errors
// and JSON-RPC errors, come back as they are.
func (u *upstream) call(ctx context.Context, name string, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	u.mu.Lock()
	c, down := u.client, u.down
	u.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUpstreamDown, u.cfg.Name, down)
	}
	req.Params.Name = name
	req.Params.Meta = upstreamMeta(req.Params.Meta)
	var rpcErr UpstreamError
	res, err := c.CallTool(context.WithValue(ctx, errorSlot{}, &rpcErr), req)
	var terr *transport.Error
	switch {
	case errors.As(err, &terr) && ctx.Err() == nil:
		u.markDown(context.Background(), err)
		return nil, fmt.Errorf("%w: %s: %v", ErrUpstreamDown, u.cfg.Name, err)
	case err != nil && rpcErr.Code != 0:
		return nil, &rpcErr
	}
	return res, err
}

// upstreamMeta is the agent's _meta for the upstream: without the keys of
// the agent's own connection (io.modelcontextprotocol/..., such as the
// protocol version of a stateless client), as the gateway's connection to
// the upstream has its own; a progress token and other keys are kept.
func upstreamMeta(m *mcp.Meta) *mcp.Meta {
	if m == nil {
		return nil
	}
	out := &mcp.Meta{ProgressToken: m.ProgressToken}
	for k, v := range m.AdditionalFields {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			if out.AdditionalFields == nil {
				out.AdditionalFields = map[string]any{}
			}
			out.AdditionalFields[k] = v
		}
	}
	if out.ProgressToken == nil && out.AdditionalFields == nil {
		return nil
	}
	return out
}

func (u *upstream) snapshot() ([]mcp.Tool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tools, u.down
}

func (u *upstream) close() {
	u.mu.Lock()
	u.closed = true
	c := u.client
	u.client = nil
	u.mu.Unlock()
	if c != nil {
		c.Close()
	}
}
