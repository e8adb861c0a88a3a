// Package hook governs the built-in tools of a coding agent through its hook
// protocol, Claude Code's first: before a tool runs (PreToolUse) the call is
// decided like any other, with the session's role and live counters, and
// after it (PostToolUse, or PostToolUseFailure when it failed) what reached
// the model is charged: the content of the tool's response, or the error. It is transport
// only: the orchestrator (govern) decides and charges.
package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/hookclient"
	"github.com/agentharness/harness/internal/ijson"
)

// Agent is the agent name of Claude Code's sessions in the ledger.
const Agent = "claude-code"

// DefaultTools maps every tool of Claude Code's tools reference
// (code.claude.com/docs/en/tools-reference), and the older names its
// hooks still send, to the harness's vocabulary, so that roles written
// for ctx_* tools govern them as they describe themselves:
//
//   - ctx_shell: the tools that run a command (Bash, PowerShell, and
//     Monitor, which runs one in the background): the shell policy and
//     the shell budget apply;
//   - ctx_execute: the tools that run code another way: Skill (a skill
//     may run shell commands as it loads, before the model sees it), its
//     older form SlashCommand (a custom command's `!` lines run as it
//     loads) and REPL;
//   - ctx_edit: the tools that change files: Edit, Write, MultiEdit,
//     NotebookEdit, EnterWorktree and ExitWorktree (they create and
//     remove a work tree), and Artifact (it publishes a file);
//   - ctx_read: the tools that read: files (Read, NotebookRead), their
//     names and contents (Grep, Glob, LS, LSP), the web (WebFetch), MCP
//     resources, and the output of background work (BashOutput,
//     TaskOutput);
//   - ctx_search: WebSearch, ToolSearch;
//   - ctx_plan: planning and tracking the work, and asking the user
//     (TodoWrite, the Task* tools, plan mode, Cron*, AskUserQuestion);
//   - ctx_agent: delegating it (Agent, its older name Task, SendMessage,
//     teams) and stopping background work (TaskStop, KillShell), which
//     runs nothing: a subagent's own tool calls come through the hook.
//
// MCP tools (mcp__<server>__<tool>) and tools not listed keep their names.
var DefaultTools = map[string]string{
	"Bash":       "ctx_shell",
	"PowerShell": "ctx_shell",
	"Monitor":    "ctx_shell",

	"Skill":        "ctx_execute",
	"SlashCommand": "ctx_execute",
	"REPL":         "ctx_execute",

	"Edit":          "ctx_edit",
	"Write":         "ctx_edit",
	"MultiEdit":     "ctx_edit",
	"NotebookEdit":  "ctx_edit",
	"EnterWorktree": "ctx_edit",
	"ExitWorktree":  "ctx_edit",
	"Artifact":      "ctx_edit",

	"Read":                 "ctx_read",
	"NotebookRead":         "ctx_read",
	"Grep":                 "ctx_read",
	"Glob":                 "ctx_read",
	"LS":                   "ctx_read",
	"LSP":                  "ctx_read",
	"WebFetch":             "ctx_read",
	"ListMcpResourcesTool": "ctx_read",
	"ReadMcpResourceTool":  "ctx_read",
	"BashOutput":           "ctx_read",
	"TaskOutput":           "ctx_read",

	"WebSearch":  "ctx_search",
	"ToolSearch": "ctx_search",

	"TodoWrite":       "ctx_plan",
	"TodoRead":        "ctx_plan",
	"TaskCreate":      "ctx_plan",
	"TaskGet":         "ctx_plan",
	"TaskList":        "ctx_plan",
	"TaskUpdate":      "ctx_plan",
	"EnterPlanMode":   "ctx_plan",
	"ExitPlanMode":    "ctx_plan",
	"AskUserQuestion": "ctx_plan",
	"CronCreate":      "ctx_plan",
	"CronDelete":      "ctx_plan",
	"CronList":        "ctx_plan",

	"Agent":       "ctx_agent",
	"Task":        "ctx_agent",
	"SendMessage": "ctx_agent",
	"TeamCreate":  "ctx_agent",
	"TeamDelete":  "ctx_agent",
	"TaskStop":    "ctx_agent",
	"KillShell":   "ctx_agent",
	"KillBash":    "ctx_agent",
}

// Options tune what the hook answers for calls the harness allows.
type Options struct {
	// Tools maps agent tools to harness tools (DefaultTools when nil).
	Tools map[string]string
	// Allow is the permissionDecision of an allowed call: "" says nothing,
	// so that Claude Code's own permission rules and prompts still apply
	// (the harness only ever takes permissions away); "allow" skips them.
	Allow string
	// ImagePixelsPerToken, MaxImageTokens and AudioTokensPerKB estimate
	// the images and audio a tool returns ([charge], as the gateway
	// charges them; the gateway's defaults when 0). See Media.
	ImagePixelsPerToken, MaxImageTokens, AudioTokensPerKB int64
}

// Response is what the hook process prints and how it exits (the hook
// daemon sends it to the hook process as it is).
type Response = hookclient.Response

// ClaudeCode answers Claude Code's hook calls.
type ClaudeCode struct {
	Gov  *govern.Governor
	Opts Options

	// pins are the projects sessions are pinned to, as far as this
	// handler has seen them (see Pin).
	pinsMu sync.Mutex
	pins   map[budget.Key]string
}

// maxPins bounds the pins a handler remembers: past it, it starts again.
const maxPins = 1 << 14

// Handle answers one hook payload. It never fails: a payload it cannot read
// is refused with exit code 2 (which blocks a PreToolUse call, Claude Code
// showing the reason), and an event it does not govern is let through.
func (h *ClaudeCode) Handle(ctx context.Context, payload []byte) Response {
	// A finished call's input that cannot be read is not charged: the
	// agent is stopped (a refusal after the tool ran only shows the model
	// a message).
	if !gjson.ValidBytes(payload) {
		return unreadable(payload, "the hook input is not JSON")
	}
	p := gjson.ParseBytes(payload)
	if !p.IsObject() {
		return unreadable(payload, "the hook input is not a JSON object")
	}
	event := p.Get("hook_event_name").String()
	switch event {
	case "PreToolUse", "PostToolUse", "PostToolUseFailure":
	case "":
		return refuse("harness hook: the hook input has no hook_event_name; refusing the call")
	default:
		// SessionStart, Stop and the others are not tool calls.
		return Response{Stderr: fmt.Sprintf("harness hook: %s is not governed; nothing to do\n", event)}
	}
	session, tool := p.Get("session_id").String(), p.Get("tool_name").String()
	if session == "" || tool == "" {
		if event == "PreToolUse" {
			return refuse("harness hook: the hook input lacks session_id or tool_name; refusing the call")
		}
		return hookclient.Uncharged(fmt.Sprintf("the %s input lacks session_id or tool_name", event))
	}
	k := budget.Key{Agent: Agent, Session: session}
	// Where Claude Code records the model's usage: its cost is charged
	// from there (govern.Call.Transcript).
	transcriptPath := p.Get("transcript_path").String()
	// Claude Code runs a call it asked the person about without asking
	// again: its shell slot is taken with the ask.
	// Claude Code's tools run in its cwd: a relative path of an edit is
	// resolved from there.
	call := govern.Call{Session: k, Tool: h.mapTool(tool), Reserve: true, ReserveOnAsk: true, Transcript: transcriptPath, Dir: p.Get("cwd").String()}
	call.Upstream, call.UpstreamTool = Origin(tool)
	input := p.Get("tool_input")
	switch event {
	case "PreToolUse":
		return h.pre(ctx, call, tool, input)
	case "PostToolUseFailure":
		// The failure's text reaches the model as the tool's result.
		return h.post(ctx, event, k, call.Tool, transcriptPath, input, p.Get("error").String(), 0)
	}
	response := p.Get("tool_response")
	return h.post(ctx, event, k, call.Tool, transcriptPath, input, Content(tool, response), Media(tool, response, h.Opts))
}

// Pin pins the session of payload to the project root, when the session
// has no project yet, and returns the project it is pinned to: a session's
// project never changes while it lives, wherever the agent's cd takes its
// working directory. A root of "" (no project) pins nothing, but a
// session pinned before keeps its project; a payload without a session
// pins nothing and returns root.
//
// A pin never changes once made, so a long-lived handler (the hook
// daemon's) remembers the pins it has seen and asks the ledger, whose
// write is most of the cost of pinning, only about a session it has not.
func (h *ClaudeCode) Pin(ctx context.Context, payload []byte, root string) (string, error) {
	session := gjson.GetBytes(payload, "session_id").String()
	if session == "" {
		return root, nil
	}
	k := budget.Key{Agent: Agent, Session: session}
	h.pinsMu.Lock()
	pinned, ok := h.pins[k]
	h.pinsMu.Unlock()
	if ok {
		return pinned, nil
	}
	pinned, err := h.Gov.PinProject(ctx, k, root)
	if err != nil || pinned == "" {
		return root, err
	}
	h.pinsMu.Lock()
	if h.pins == nil || len(h.pins) >= maxPins {
		h.pins = map[budget.Key]string{}
	}
	h.pins[k] = pinned
	h.pinsMu.Unlock()
	return pinned, nil
}

func (h *ClaudeCode) mapTool(tool string) string {
	tools := h.Opts.Tools
	if tools == nil {
		tools = DefaultTools
	}
	if t, ok := tools[tool]; ok {
		return t
	}
	return tool
}

// Origin is where Claude Code's tool comes from: for an MCP tool, named
// mcp__<server>__<tool>, the server and the server's own name of the
// tool; "" and "" for a built-in tool (Bash, Read, ...). Server names may
// hold single underscores, so the server's name ends at the first "__"
// after the prefix, and everything after that is the tool's
// (mcp__my_server__get__all is server my_server, tool get__all). A name
// with an empty server or tool is no MCP tool.
func Origin(tool string) (upstream, upstreamTool string) {
	rest, ok := strings.CutPrefix(tool, "mcp__")
	if !ok {
		return "", ""
	}
	server, name, ok := strings.Cut(rest, "__")
	if !ok || server == "" || name == "" {
		return "", ""
	}
	return server, name
}

func (h *ClaudeCode) pre(ctx context.Context, call govern.Call, tool string, input gjson.Result) Response {
	args, err := arguments(input)
	if err != nil {
		return refuse("harness hook: tool_input is not readable: " + err.Error())
	}
	call.Arguments = args
	harnessTool := call.Tool
	o, err := h.Gov.Decide(ctx, call)
	if err != nil {
		return answer("PreToolUse", "deny", fmt.Sprintf("harness: the call could not be decided (%v); refused", err), "")
	}
	d := o.Decision
	name := tool
	if harnessTool != tool {
		name = fmt.Sprintf("%s (%s)", tool, harnessTool)
	}
	if !o.Allowed {
		// An ask is Claude Code's own: it asks the user, showing the
		// reason; a deny is shown to the model.
		decision, verb := "deny", "denied"
		if d.Decision == contract.Ask {
			decision, verb = "ask", "needs your approval"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "harness: %s %s for role %s:", name, verb, d.Role)
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, " %s: %s;", r.Code, r.Message)
		}
		fmt.Fprintf(&b, " %s", d.StatusLine())
		return answer("PreToolUse", decision, b.String(), warnings(d))
	}
	var context strings.Builder
	if o.Shadowed {
		verb := "been denied"
		if d.Decision == contract.Ask {
			verb = "asked for a person's approval"
		}
		fmt.Fprintf(&context, "harness (shadow mode): %s would have %s:", name, verb)
		for _, r := range d.Reasons {
			fmt.Fprintf(&context, " %s: %s;", r.Code, r.Message)
		}
		context.WriteString("\n")
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&context, "harness warning: %s\n", w.Message)
	}
	if context.Len() > 0 {
		context.WriteString(d.StatusLine())
	}
	reason := ""
	if h.Opts.Allow != "" {
		reason = fmt.Sprintf("harness: %s allowed for role %s", name, d.Role)
	}
	return answer("PreToolUse", h.Opts.Allow, reason, context.String())
}

// warnings is the context an asked call's warnings give the agent, with
// the status line; "" for none.
func warnings(d contract.Decision) string {
	if d.Decision != contract.Ask || len(d.Warnings) == 0 {
		return ""
	}
	var b strings.Builder
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "harness warning: %s\n", w.Message)
	}
	return b.String() + d.StatusLine()
}

// arguments are the decision's arguments: the tool input as the agent sent
// it, numbers kept exact. An object is a map[string]any; null or no input
// is nil; a string, array, number or bool is that value, which the policy
// refuses as malformed (invalid_input) rather than deciding a call without
// arguments that no argument rule would see. Input that the tool could
// read otherwise than the policy (see ijson.Ambiguity) is an error: Claude
// Code passes an MCP tool's input on as it has it, and the model chose its
// keys ("path" and "Path", "__proto__").
func arguments(input gjson.Result) (any, error) {
	if !input.Exists() || input.Type == gjson.Null {
		return nil, nil
	}
	if n := nesting(input.Raw); n > maxArgumentsDepth {
		return nil, fmt.Errorf("nested %d levels deep, past %d", n, maxArgumentsDepth)
	}
	dec := json.NewDecoder(strings.NewReader(input.Raw))
	dec.UseNumber()
	var v any
	if input.IsObject() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		v = m
	} else if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := ijson.Ambiguity([]byte(input.Raw)); err != nil {
		return nil, err
	}
	return v, nil
}

// maxArgumentsDepth is how deeply a call's arguments may nest: as deep as
// the gateway admits them (its messages nest at most 10,000 levels, the
// arguments three under the top). The decision log holds them two levels
// under its line, which must stay within what a JSON decoder reads back
// (10,000 levels), or the line is one that tools skip.
const maxArgumentsDepth = 9997

// nesting is how deeply raw, valid JSON, nests its arrays and objects.
func nesting(raw string) int {
	depth, most := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > most {
				most = depth
			}
		case ']', '}':
			depth--
		}
	}
	return most
}

// post charges a finished call (event PostToolUse or PostToolUseFailure):
// the tokens of output, what reached the model, and media, the estimate of
// its images and audio, and the cost of its input and output.
func (h *ClaudeCode) post(ctx context.Context, event string, k budget.Key, harnessTool, transcriptPath string, input gjson.Result, output string, media int64) Response {
	ch, err := h.Gov.Record(ctx, govern.Result{Session: k, Tool: harnessTool, Arguments: input.Raw, Output: output, Media: media, Transcript: transcriptPath})
	if err != nil {
		return hookclient.Uncharged(fmt.Sprintf("charging %s: %v", harnessTool, err))
	}
	if ch.Signal == contract.LevelOK || ch.Signal == "" {
		return answer(event, "", "", "") // the usual case: nothing to say
	}
	st, err := h.Gov.Status(ctx, k, "")
	if err != nil {
		return answer(event, "", "", "")
	}
	return answer(event, "", "", "harness: "+st.StatusLine())
}

// answer is Claude Code's JSON answer: hookSpecificOutput with the
// permission decision (PreToolUse), its reason, and context for the agent.
func answer(event, decision, reason, context string) Response {
	out := map[string]any{"hookEventName": event}
	if decision != "" {
		out["permissionDecision"] = decision
	}
	if reason != "" {
		out["permissionDecisionReason"] = reason
	}
	if context != "" {
		out["additionalContext"] = context
	}
	if len(out) == 1 {
		return Response{} // nothing to say: Claude Code goes on as usual
	}
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": out})
	return Response{Stdout: append(b, '\n')}
}

// ExitRefused is the exit code that blocks a PreToolUse call, Claude Code
// showing the model what the hook wrote on stderr.
const ExitRefused = hookclient.ExitRefused

// unreadable answers a payload that cannot be read: a finished call
// (its event found even in a payload cut short) is not charged, and
// stops the agent; anything else is refused.
func unreadable(payload []byte, why string) Response {
	if hookclient.IsPost(payload) {
		return hookclient.Uncharged(why)
	}
	return refuse("harness hook: " + why + "; refusing the call")
}

// refuse blocks the call: exit code 2, the reason on stderr.
func refuse(msg string) Response { return Response{Stderr: msg + "\n", Exit: ExitRefused} }
