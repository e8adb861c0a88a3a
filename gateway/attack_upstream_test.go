package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// reply is how scriptedUpstream answers a request: an HTTP status, and a
// body in which ID stands for the request's id ("" with status 200: an
// empty result).
type reply struct {
	status int
	body   string
}

// scriptedUpstream is a streamable HTTP upstream named name that answers
// each request by its method as replies says (a result of {} for a
// method it does not name), so that a test can make it fail in any way
// an HTTP upstream can.
func scriptedUpstream(t *testing.T, name string, replies map[string]reply) UpstreamConfig {
	t.Helper()
	return httpUpstream(t, name, func(m message) (int, string) {
		rp, ok := replies[m.Method]
		if !ok {
			rp = reply{http.StatusOK, `{"jsonrpc":"2.0","id":ID,"result":{}}`}
		}
		return rp.status, strings.ReplaceAll(rp.body, "ID", string(m.ID))
	})
}

// upstreamCase is an upstream scripted to answer so, and what the agent
// asks of it.
type upstreamCase struct {
	name    string
	replies map[string]reply
	do      func(*agent) *message
}

// Replies and requests of the upstream cases.
var (
	upstreamOK = func(result string) reply {
		return reply{http.StatusOK, `{"jsonrpc":"2.0","id":ID,"result":` + result + `}`}
	}
	upstreamFail = func(e string) reply { return reply{http.StatusOK, `{"jsonrpc":"2.0","id":ID,"error":` + e + `}`} }
	agentCall    = func(method string, params any) func(*agent) *message {
		return func(a *agent) *message { return a.await(a.request(method, params)) }
	}
	quotedWords = string(mustJSON(attackWords))
)

// noWordsUncharged runs each case for an agent of 100 tokens, and checks
// that the upstream's 10,000 tokens of words did not reach it.
func noWordsUncharged(t *testing.T, cases []upstreamCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100))
			a := stdioAgent(t, b.gateway(t, PrefixNever, scriptedUpstream(t, "x", tt.replies)), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			got := string(mustJSON(tt.do(a)))
			if n := strings.Count(got, "secret words of the upstream"); n > 100 {
				t.Errorf("%d copies of the upstream's words (%d tokens) reached the agent; tokens charged %d (limit 100): %.200s",
					n, tokens(t, attackWords)*int64(n)/2000, b.counters(t, "a", "s").Tokens, got)
			}
		})
	}
}

// TestAttackUpstreamErrorTextUncharged: the error of a connection to an
// upstream quoted the upstream's words, uncharged and without bound: the
// body of an HTTP error, and an error of its handshake (quoted in the
// error of every call while it is down, for which nothing is charged at
// all).
func TestAttackUpstreamErrorTextUncharged(t *testing.T) {
	t.Parallel()
	tools := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}`)
	toolList := upstreamOK(`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	callTool := agentCall("tools/call", map[string]any{"name": "t", "arguments": map[string]any{}})
	noWordsUncharged(t, []upstreamCase{
		{"a call's HTTP error body", map[string]reply{"initialize": tools, "tools/list": toolList, "tools/call": {http.StatusInternalServerError, attackWords}}, callTool},
		{"a call while the handshake fails", map[string]reply{"initialize": {http.StatusInternalServerError, attackWords}}, callTool},
		{"a call while the list fails", map[string]reply{"initialize": tools, "tools/list": upstreamFail(`{"code":-32000,"message":` + quotedWords + `}`)}, callTool},
	})
}

// TestAttackForwardedAnswersUncharged: the answers the gateway passed on
// as they came reached the agent uncharged, though an upstream's JSON-RPC
// error is charged everywhere else: a completion's error, a
// subscription's result (which has nothing to say: {}) or error.
func TestAttackForwardedAnswersUncharged(t *testing.T) {
	t.Parallel()
	prompts := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"prompts":{},"completions":{}},"serverInfo":{"name":"x","version":"1"}}`)
	promptList := upstreamOK(`{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`)
	resources := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true}},"serverInfo":{"name":"x","version":"1"}}`)
	resourceList := upstreamOK(`{"resources":[{"uri":"file:///r","name":"r"}]}`)
	complete := agentCall("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"}, "argument": map[string]string{"name": "a", "value": ""}})
	subscribe := agentCall("resources/subscribe", map[string]any{"uri": "file:///r"})
	unsubscribe := agentCall("resources/unsubscribe", map[string]any{"uri": "file:///r"})
	noWordsUncharged(t, []upstreamCase{
		{"a completion's error message", map[string]reply{"initialize": prompts, "prompts/list": promptList, "completion/complete": upstreamFail(`{"code":-32000,"message":` + quotedWords + `}`)}, complete},
		{"a completion's error data", map[string]reply{"initialize": prompts, "prompts/list": promptList, "completion/complete": upstreamFail(`{"code":-32000,"message":"no","data":` + quotedWords + `}`)}, complete},
		{"a subscription's result", map[string]reply{"initialize": resources, "resources/list": resourceList, "resources/subscribe": upstreamOK(`{"_meta":{"x":` + quotedWords + `}}`)}, subscribe},
		{"an unsubscription's result", map[string]reply{"initialize": resources, "resources/list": resourceList, "resources/unsubscribe": upstreamOK(`{"note":` + quotedWords + `}`)}, unsubscribe},
		{"a subscription's error", map[string]reply{"initialize": resources, "resources/list": resourceList, "resources/subscribe": upstreamFail(`{"code":-32000,"message":` + quotedWords + `}`)}, subscribe},
		{"an unsubscription's error", map[string]reply{"initialize": resources, "resources/list": resourceList, "resources/unsubscribe": upstreamFail(`{"code":-32000,"message":"no","data":{"x":` + quotedWords + `}}`)}, unsubscribe},
	})
}
