package alerts

import (
	"strings"
	"testing"

	"github.com/agentharness/harness/events"
)

// The Slack form goes to Slack and to what takes its form (Mattermost's
// incoming webhooks, Discord's /slack): there an @everyone, @channel or
// @here in the text notifies everyone in the channel, and [text](url) is
// a link that shows only its text. A tool's name and a refusal's reason
// (which quotes it) are the agent's: they must not page the operator's
// whole channel, nor put a disguised link before them.
func TestAttackSlackTextMentionsAndLinks(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{
		"@everyone",
		"@channel",
		"@here",
		"@all",
		"[Approve](https://evil.example/harness/approve)",
	} {
		e := events.Event{Type: events.PolicyViolation, Agent: "a", Session: "s", Role: "coder",
			Violation: &events.Violation{Tool: tool, Reason: "tool_not_allowed: tool '" + tool + "' is not allowed"}}
		got := Text(e)
		for _, bad := range []string{"@everyone", "@channel", "@here", "@all", "](http"} {
			if strings.Contains(got, bad) {
				t.Errorf("tool %q: the text holds %q: %s", tool, bad, got)
			}
		}
		if !strings.Contains(got, "refused ") || !strings.Contains(got, "tool_not_allowed") {
			t.Errorf("tool %q: %s", tool, got)
		}
	}
}
