package govern

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// What an agent (through ctx_session) or an operator (through the CLI) may
// ask of a session. Each answer is structured; the surfaces render it.

// UnknownRoleError is a session whose role the rules in force do not
// define (it was removed since, or never existed): every call of it is
// refused, and an operator can set another (harness role set).
type UnknownRoleError struct {
	Role  string
	Known []string
}

func (e *UnknownRoleError) Error() string {
	return fmt.Sprintf("role %q is not defined; known roles: %s", e.Role, strings.Join(e.Known, ", "))
}

// unknownRole is the error of a role r does not define, or nil.
func unknownRole(r *Rules, role string, err error) error {
	if errors.Is(err, policy.ErrUnknownRole) {
		return &UnknownRoleError{Role: role, Known: roleNames(r)}
	}
	return err
}

func roleNames(r *Rules) []string {
	names := make([]string, 0, len(r.Engine.Document().Roles))
	for name := range r.Engine.Document().Roles {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Status is the session's budget as the policy measures it now; a new
// session is shown in its starting role (role, else the default) and not
// created (see view: no view writes the ledger). A role the rules do not
// define is an *UnknownRoleError, with the status of limits 0.
func (g *Governor) Status(ctx context.Context, k budget.Key, role string) (contract.Status, error) {
	r := g.rules.Load()
	period := g.period(r, k.Agent)
	c, err := g.view(ctx, r, k, role, period)
	if err != nil {
		return contract.Status{}, err
	}
	st, err := r.Engine.Status(ctx, statusInput(k, c, period))
	return st, unknownRole(r, c.Role, err)
}

// Visible returns the tools of tools the session's role may call by its
// tool lists and shell policy (exempt tools always): what a listing of
// tools shows it. On an error it shows none.
func (g *Governor) Visible(ctx context.Context, k budget.Key, role string, tools []contract.Tool) (map[string]bool, error) {
	r := g.rules.Load()
	c, err := g.view(ctx, r, k, role, "")
	if err != nil {
		return map[string]bool{}, err
	}
	visible, err := r.Engine.Visible(ctx, c.Role, tools)
	if _, held := r.restrained(k.Agent, c.Role); held && err == nil {
		// A role the session may not act in (see restrained) shows, and
		// so lets through what is decided by what is shown (completions,
		// subscriptions), only the exempt tools.
		exempt := r.Engine.Document().Config.ExemptByOrigin
		for _, t := range tools {
			if !exempt[t.Upstream][t.Name] {
				delete(visible, t.Name)
			}
		}
	}
	return visible, err
}

// Target is a role a session could hold, and whether the agent may switch
// itself into it.
type Target struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Current is the session's role.
	Current bool `json:"current,omitempty"`
	// Open is true when the agent may switch itself into it; only an
	// operator can give it the others.
	Open bool `json:"open"`
}

// RoleInfo is a session's role as ctx_session action=role and `harness
// role` show it.
type RoleInfo struct {
	// Role is the resolved role, with the files that set it (nil when the
	// rules carry no roles).
	Role   *roles.Role     `json:"role"`
	Status contract.Status `json:"status"`
	// Targets are every role, in name order, and whether the agent may
	// switch itself into it.
	Targets []Target `json:"targets"`
}

// MayEnter are the other roles the agent may switch itself into.
func (i RoleInfo) MayEnter() []string { return i.targets(true) }

// OperatorOnly are the other roles only an operator can give the session.
func (i RoleInfo) OperatorOnly() []string { return i.targets(false) }

func (i RoleInfo) targets(open bool) []string {
	var out []string
	for _, t := range i.Targets {
		if !t.Current && t.Open == open {
			out = append(out, t.Name)
		}
	}
	return out
}

// RoleInfo describes the session's role, its budget, and the roles it may
// switch to, as the switch rules say.
func (g *Governor) RoleInfo(ctx context.Context, k budget.Key, role string) (RoleInfo, error) {
	r := g.rules.Load()
	period := g.period(r, k.Agent)
	c, err := g.view(ctx, r, k, role, period)
	if err != nil {
		return RoleInfo{}, err
	}
	st, err := r.Engine.Status(ctx, statusInput(k, c, period))
	if err != nil {
		return RoleInfo{Status: st}, unknownRole(r, c.Role, err)
	}
	open, err := r.Engine.SwitchTargets(ctx, contract.SwitchInput{From: c.Role, By: contract.ByAgent, Session: k.Session, Agent: k.Agent,
		MaxRole: r.AgentMaxRoles[k.Agent]})
	if err != nil {
		return RoleInfo{Status: st}, err
	}
	info := RoleInfo{Role: roleOf(r, c.Role), Status: st}
	doc := r.Engine.Document()
	for _, name := range roleNames(r) {
		info.Targets = append(info.Targets, Target{Name: name, Description: doc.Roles[name].Description, Current: name == c.Role, Open: open[name]})
	}
	return info, nil
}

// roleOf is the resolved role name of the rules, or nil.
func roleOf(r *Rules, name string) *roles.Role {
	if r.Roles == nil {
		return nil
	}
	role, _ := r.Roles.Get(name)
	return role
}

// Explanation is why a call of the session would be decided as it is: the
// policy's explanation, and the resolved role with the files that set
// each of its fields.
type Explanation struct {
	policy.Explanation
	Role *roles.Role `json:"role"`
}

// Explain decides a call of tool with arguments on the session's counters,
// as a question (nothing is reserved or logged), and says why.
func (g *Governor) Explain(ctx context.Context, k budget.Key, role, tool string, args map[string]any) (Explanation, error) {
	r := g.rules.Load()
	period := g.period(r, k.Agent)
	c, err := g.view(ctx, r, k, role, period)
	if err != nil {
		return Explanation{}, err
	}
	x, err := r.Engine.Explain(ctx, g.input(k, c, Call{Tool: tool, Arguments: args}, period))
	if err != nil {
		return Explanation{}, err
	}
	return Explanation{Explanation: x, Role: roleOf(r, c.Role)}, nil
}

// PinProject pins the session to project if it has no project yet, and
// returns the project it is pinned to: a session's project never changes
// while it lives, wherever the agent's working directory goes.
func (g *Governor) PinProject(ctx context.Context, k budget.Key, project string) (string, error) {
	c, err := g.store.PinProject(ctx, k, project)
	if err != nil {
		return "", fmt.Errorf("ledger: %w", err)
	}
	return c.Project, nil
}
