package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/explain"
)

// sessionTool answers ctx_session: never refused, its switches decided by
// the switch rules. What it says comes from the governor; this renders
// it. Its answers are the harness's own and are not charged: an agent
// whose budget is spent can still see why.
func (s *session) sessionTool(ctx context.Context, raw json.RawMessage) json.RawMessage {
	var a struct {
		Action string `json:"action"`
		Value  string `json:"value"`
		Tool   string `json:"tool"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return textResult("[harness] ctx_session: its arguments are not an object of strings: "+err.Error(), true, nil, nil)
		}
	}
	gov, id := s.g.o.Governor, s.id
	fail := func(err error) json.RawMessage { return textResult("[harness] "+err.Error(), true, nil, nil) }
	switch {
	case a.Action == "role" && a.Value != "":
		// A switch starts from the session's role: one that is new opens
		// in its identity's, not in the default role.
		if _, err := gov.Session(ctx, id.key(), id.StartRole); err != nil {
			return textResult("[harness] the switch could not be made: "+err.Error(), true, nil, nil)
		}
		o, err := gov.Switch(ctx, id.key(), a.Value, contract.ByAgent)
		if err != nil {
			return textResult("[harness] the switch could not be made: "+err.Error(), true, nil, nil)
		}
		if !o.Decision.Allowed {
			var b strings.Builder
			fmt.Fprintf(&b, "[harness] switch to %s refused; you stay in role %s.\n", a.Value, o.Counters.Role)
			for _, r := range o.Decision.Reasons {
				fmt.Fprintf(&b, "- %s (%s): %s\n", r.Code, r.Rule, r.Message)
			}
			return textResult(b.String(), true, nil, map[string]any{DecisionMeta: o.Decision})
		}
		text := fmt.Sprintf("Role switched: %s → %s. Usage is kept; the new role's limits apply.\n%s", o.Decision.From, o.Decision.To, o.Status.StatusLine())
		if !o.Switched {
			text = fmt.Sprintf("You are already in role %s.\n%s", a.Value, o.Status.StatusLine())
		}
		s.listsChanged("tools/list", "resources/list", "prompts/list") // the new role may see other things
		return textResult(text, false, o.Decision, nil)
	case a.Action == "role":
		info, err := gov.RoleInfo(ctx, id.key(), id.StartRole)
		if err != nil {
			return fail(err)
		}
		r := info.Role
		if r == nil {
			return fail(fmt.Errorf("your role %s is not defined", info.Status.Role))
		}
		text := fmt.Sprintf("Role %s: %s\nshell_policy %s; allowed tools: %s; denied: %s\nYou may switch to: %s (only an operator can give you: %s)\nSession %s of agent %s\n%s",
			r.Name, r.Description, r.ShellPolicy, list(r.Allowed), list(r.Denied), list(info.MayEnter()), list(info.OperatorOnly()),
			id.Session, id.Agent, info.Status.StatusLine())
		return textResult(text, false, map[string]any{"role": r, "may_switch_to": info.MayEnter(), "budget": info.Status.Budget,
			"signal": info.Status.Signal, "session": id.Session, "agent": id.Agent}, nil)
	case a.Action == "roles":
		info, err := gov.RoleInfo(ctx, id.key(), id.StartRole)
		if err != nil {
			return fail(err)
		}
		var b strings.Builder
		for _, t := range info.Targets {
			mark := "  "
			switch {
			case t.Current:
				mark = "* "
			case !t.Open:
				mark = "x "
			}
			fmt.Fprintf(&b, "%s%s: %s\n", mark, t.Name, t.Description)
		}
		b.WriteString("(* your role; x: only an operator can switch you to it)\n")
		return textResult(b.String(), false, nil, nil)
	case a.Action == "budget":
		st, err := gov.Status(ctx, id.key(), id.StartRole)
		if err != nil {
			return fail(err)
		}
		return textResult(st.StatusLine(), false, map[string]any{"role": st.Role, "signal": st.Signal, "budget": st.Budget}, nil)
	case a.Action == "explain" && a.Tool != "":
		x, err := gov.Explain(ctx, id.key(), id.StartRole, a.Tool, nil)
		if err != nil {
			return fail(err)
		}
		d := x.Decision
		var b strings.Builder
		fmt.Fprintf(&b, "%s would be: %s (without arguments; policies on arguments may decide otherwise)\n", a.Tool, d.Decision)
		for _, r := range append(d.Reasons, d.Warnings...) {
			fmt.Fprintf(&b, "- %s: %s\n", r.Code, r.Message)
		}
		explain.Write(&b, x.Explanation, x.Role)
		return textResult(b.String(), false, d, nil)
	}
	return textResult(`[harness] ctx_session: want action=role (value=NAME to switch), action=roles, action=budget, or action=explain tool=NAME`, true, nil, nil)
}

func list(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}
