package gateway

import (
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
)

// What an upstream asks of the agent's client (a sampling request's
// messages, an elicitation's message) is text the gateway delivers to
// the agent's client, as a tool result is: the agent controls that
// client and reads it. It is charged to the context before it goes, or
// it does not go; whatever the client answers (here: an error, so that
// no model ran and no cost is charged either).
func TestAttackRelayedRequestTextIsCharged(t *testing.T) {
	t.Parallel()
	want, err := budget.NewTokenizer().Count(upstreamWords)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"sampling/createMessage", "elicitation/create"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100000))
			up := rawUpstreamConfig(t, "raw")
			up.Env = []string{"GATEWAY_RAW_UPSTREAM=completions"}
			a := stdioAgent(t, b.gateway(t, PrefixNever, up), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}})
			id := a.request("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
				"argument": map[string]string{"name": "a", "value": "ask-long:" + method}})
			var reached bool
			select {
			case ask := <-a.requests:
				reached = strings.Contains(string(ask.Params), "the upstream's own words")
				a.send(errorMessage(ask.ID, &rpcError{Code: codeRefused, Message: "no"}))
			case m := <-a.waitingFor(id):
				t.Logf("not asked: %s", mustJSON(m))
				return
			}
			a.await(id)
			b.gov.Wait()
			if c := b.counters(t, "a", "s"); reached && c.Tokens < want {
				t.Errorf("%s: the upstream's %d tokens of text reached the agent's client; %d tokens were charged (%d micro-dollars)", method, want, c.Tokens, c.CostMicros)
			}
		})
	}
}

// waitingFor is the channel the response to request id comes on.
func (a *agent) waitingFor(id string) chan *message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting[id]
}

// A sampling request's cost is charged at the prices of the model the
// agent's client says it used: the client is the agent's, and names the
// cheapest model in the price table whatever model ran. The charge is not
// to fall below the configured default model's prices on its word.
func TestAttackSamplingModelNamedByTheClient(t *testing.T) {
	t.Parallel()
	answer := strings.Repeat("the model's long answer ", 2000)
	cost := func(model string) int64 {
		b := newBench(t, nil)
		up := rawUpstreamConfig(t, "raw")
		up.Env = []string{"GATEWAY_RAW_UPSTREAM=completions"}
		a := stdioAgent(t, b.gateway(t, PrefixNever, up), Identity{Agent: "a", Session: "s"})
		a.initialize(map[string]any{"sampling": map[string]any{}})
		id := a.request("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
			"argument": map[string]string{"name": "a", "value": "ask:sampling/createMessage"}})
		ask := <-a.requests
		a.send(resultMessage(ask.ID, mustJSON(map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": answer}, "model": model})))
		a.await(id)
		b.gov.Wait()
		return b.counters(t, "a", "s").CostMicros
	}
	unpriced, cheap := cost("a-model-of-no-price-table"), cost("gemini-2.5-flash-lite")
	if cheap < unpriced {
		t.Errorf("the client named a cheap model: %d micro-dollars charged, %d at the default model's prices", cheap, unpriced)
	}
}
