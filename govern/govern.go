// Package govern is the orchestrating stage: for one tool call it reads the
// session's counters, asks the policy, takes a shell slot atomically with
// the decision, and after the call charges the tokens and cost of what went
// back to the agent; it switches roles, and answers what an agent or an
// operator may ask of a session (its budget, its role and where it may go,
// why a tool is decided as it is, which tools it may see). The CLI, the
// gateway and the hook are transports wired to a Governor and render what
// it returns; the policy never touches counters, and this package never
// decides anything itself: every rule is the policy's.
package govern

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/reuse"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/pricing"
	"github.com/agentharness/harness/roles"
	"github.com/agentharness/harness/transcript"
)

// maxAttempts bounds the retries of a shell reservation. Every failed
// attempt means another call took a slot, so retries end quickly; the bound
// only guards against a store that never agrees.
const maxAttempts = 1000

// Rules are what a governor decides by: the engine, the roles it was
// compiled from, and the configuration's choice of roles. A reload swaps
// them all at once (see Swap), so a call never sees the roles of one load
// with the engine of another.
type Rules struct {
	Engine *policy.Engine
	// Roles are the resolved roles the engine's data was compiled from,
	// for what is shown of a role (its files, its lists as written); nil
	// shows roles without them.
	Roles *roles.Set
	// DefaultRole is the role of a new session when nothing else names
	// one ("" for the built-in default, coder).
	DefaultRole string
	// AgentRoles are the starting roles of agents by name ([agents.NAME]
	// role in harness.toml).
	AgentRoles map[string]string
	// AgentMaxRoles are the most privileged roles agents may switch
	// themselves into, by name ([agents.NAME] max_role, or their tokens').
	AgentMaxRoles map[string]string
	// Broken, when set, says why the files these rules were loaded from
	// no longer load, through the project's files: the repository's,
	// which the agent writes. While it is set every call but an exempt
	// tool's is refused, and every switch: rules the agent can keep from
	// changing (its broken file holds every reload back) decide nothing
	// (see Governor.Restrain).
	Broken string
}

// Governor governs the tool calls of many sessions. It is safe for
// concurrent use.
type Governor struct {
	rules     atomic.Pointer[Rules]
	pending   tracker // background work of settlements
	store     budget.Store
	tokens    *budget.Tokenizer
	prices    pricing.Prices
	shadow    bool
	sinks     []events.Sink
	decisions *events.DecisionLog
	mask      *events.Mask
	now       func() time.Time
	onError   func(error)
	observer  Observer
	project   string
	workDir   string
	envRole   string
	changed   func(budget.Key)
	unpriced  sync.Map // models without a price, told of once
	book      *transcript.Book
	unread    sync.Map // transcripts that could not be read, told of once
}

// Options are a Governor's parts.
type Options struct {
	Rules
	Store     budget.Store
	Tokenizer *budget.Tokenizer // nil: a new one
	Prices    pricing.Prices    // zero: the default price table
	// Shadow decides and records but never denies: a refused call runs,
	// flagged as shadowed ([enforcement] mode = "shadow").
	Shadow bool
	// Project is the project's root, given to the policy (input.project).
	Project string
	// WorkDir is the working directory of the tools the governor's calls
	// run in, when a call does not say (Call.Dir): a relative path of an
	// edit is resolved from it and from the project's root (see Resolve).
	// The gateway's upstreams run in the gateway's.
	WorkDir string
	// EnvRole is $LEAN_CTX_ROLE: the operator's starting role for new
	// sessions of agents without one of their own.
	EnvRole string
	// Sinks receive the harness events (a Bus, an EventLog).
	Sinks []events.Sink
	// Decisions, if set, records every decision.
	Decisions *events.DecisionLog
	// Transcripts keeps what was read of the transcripts in which agents
	// record their model usage (nil: none are read; see Usage).
	Transcripts *transcript.Book
	// Mask keeps input paths ([log] mask) out of the decision log and the
	// events: erased from the logged input, their values redacted from the
	// messages of the decision and of its events. Nil masks nothing.
	Mask *events.Mask
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnError hears of events and log entries that could not be written;
	// the call itself goes on. Default: ignored.
	OnError func(error)
	// Observer hears every decision and charge (the metrics); nil: none.
	Observer Observer
	// Changed, if set, hears of every session whose counters or role may
	// have changed (a decision, a charge, a shell slot given back, a
	// switch, a reset), on the path of the call: it must not block. The
	// live view follows the counters with it.
	Changed func(budget.Key)
}

// New returns a Governor.
func New(o Options) *Governor {
	g := &Governor{store: o.Store, tokens: o.Tokenizer, prices: o.Prices, shadow: o.Shadow,
		sinks: o.Sinks, decisions: o.Decisions, mask: o.Mask, now: o.Now, onError: o.OnError, envRole: o.EnvRole, project: o.Project, workDir: o.WorkDir,
		book: o.Transcripts, observer: o.Observer, changed: o.Changed}
	g.Swap(o.Rules)
	if g.observer == nil {
		g.observer = noObserver{}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.onError == nil {
		g.onError = func(error) {}
	}
	if g.changed == nil {
		g.changed = func(budget.Key) {}
	}
	if g.tokens == nil {
		g.tokens = budget.NewTokenizer()
	}
	if g.prices.Models == nil {
		g.prices = pricing.Default()
	}
	return g
}

// Swap puts new rules in force (a reload of roles, policies and
// configuration): calls that began keep the rules they started with.
func (g *Governor) Swap(r Rules) {
	if r.DefaultRole == "" {
		r.DefaultRole = roles.DefaultRole
	}
	g.rules.Store(&r)
}

// Restrain keeps the rules in force but refuses, from now until the next
// Swap, every call but an exempt tool's and every switch, saying why: the
// project's files no longer load (see Rules.Broken). A reload that an
// agent's broken file holds back must not leave in force rules that the
// operator has since tightened.
func (g *Governor) Restrain(why string) {
	r := *g.rules.Load()
	r.Broken = why
	g.rules.Store(&r)
}

// Wait returns once the background work of earlier settlements (their
// budget crossings' events) is done.
func (g *Governor) Wait() { g.pending.wait() }

// tracker counts goroutines under way. Unlike a sync.WaitGroup, it may
// start one while another goroutine waits, whenever.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle sync.Cond
}

func (t *tracker) Go(f func()) {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	reuse.Go(func() {
		defer func() {
			t.mu.Lock()
			if t.n--; t.n == 0 && t.idle.L != nil {
				t.idle.Broadcast()
			}
			t.mu.Unlock()
		}()
		f()
	})
}

func (t *tracker) wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idle.L == nil {
		t.idle.L = &t.mu
	}
	for t.n > 0 {
		t.idle.Wait()
	}
}

// Rules are the rules in force.
func (g *Governor) Rules() Rules { return *g.rules.Load() }

// Engine is the policy engine in force.
func (g *Governor) Engine() *policy.Engine { return g.rules.Load().Engine }

// Call is one tool call to decide.
type Call struct {
	Session budget.Key
	Tool    string
	// Upstream and UpstreamTool say where the tool comes from: the MCP
	// server and its own name for the tool ("" for the harness's own tools).
	Upstream, UpstreamTool string
	// Arguments are the tool's arguments, as the agent sent them: an
	// object, nil for none; anything else is refused as malformed.
	Arguments any
	// Client is what the agent's client says of itself (MCP clientInfo,
	// "name/version"): recorded as a label of the decision-log entry,
	// never used to decide who the agent is.
	Client string
	// Dir is the working directory the call's tool runs in (Claude
	// Code's cwd), "" for the governor's (Options.WorkDir).
	Dir string
	// Transcript is where the session's agent records its model usage
	// (Claude Code's transcript_path), "" for none: what is new in it is
	// charged before the call is decided (see Usage).
	Transcript string
	// Role is the role a new session starts in; "" for the default. A
	// session that has a role keeps it.
	Role string
	// Reserve takes the shell slot of an allowed shell call: the call is
	// going to run. Without it the decision is only a question.
	Reserve bool
	// ReserveOnAsk takes the shell slot of a shell call decided ask too:
	// the transport lets the call run once a person approves it, without
	// asking the harness again (Claude Code's own ask), so the slot is
	// taken with the decision, or an approved call would not be counted.
	// A declined call's slot stays spent: counting one call too many is
	// the side to err on.
	ReserveOnAsk bool
	// Prefetch, with Background, works out the allowance of an allowed
	// call's session at the counters it was decided on (as Prefetch
	// does, for Settle), on the goroutine that writes the decision's log
	// entry and before it: Outcome.Headroom.
	Prefetch bool
	// Approved says who approved the call, "" for nobody: a person asked
	// for the approval an ask waits for (the gateway, by an elicitation of
	// the agent's client). It lets a call decided ask run, and nothing
	// else: the decision stays the policy's, a deny stays a deny.
	Approved string
	// Background writes the decision's log entry and events while the
	// caller goes on (the gateway overlaps them with the upstream call):
	// Outcome.Wait waits for them. Without it they are written before
	// Decide returns.
	Background bool
	// Later, with Background, starts that work only at Outcome.Start
	// (or at Outcome.Wait, or when Settle needs the Headroom, if either
	// comes first): a caller that sends the call on first (the gateway,
	// to its upstream) wakes no goroutine before it has.
	Later bool
}

// Outcome is what came of a call.
type Outcome struct {
	Decision contract.Decision
	// Allowed says whether the call may run: the decision's word, or always
	// true in shadow mode. An ask is not allowed: a transport that can put
	// the question to a person (the hook, as Claude Code's own "ask") does,
	// and one that cannot refuses the call.
	Allowed bool
	// Shadowed is true when shadow mode let through a call the policy denied.
	Shadowed bool
	// Approved is true when the call was decided ask and runs because
	// Call.Approved says who approved it.
	Approved bool
	// Reserved is true when a shell slot was taken for the call.
	Reserved bool
	// Counters are the session's counters after the reservation.
	Counters budget.Counters
	// Period is the period of the agent's budget the call was decided in,
	// and its shell slot taken in ("" for none): the slot of a call that
	// never reached its tool is given back to it (ReleaseShell), though
	// another period may have begun since.
	Period budget.Period
	// DecisionID names the decision in the decision log and events.
	DecisionID string
	// Headroom is the session's allowance at Counters, worked out while
	// the caller goes on (Call.Prefetch), for Settle; nil for none.
	Headroom *Headroom

	written chan struct{} // closed once a Background decision is logged
	later   *later        // the Background work, until it is started (Call.Later)
}

// later is the work of a decision made with Call.Later, done once.
type later struct {
	once sync.Once
	work func()
}

// do does the work, on a goroutine of its own (async) or on the caller's.
func (l *later) do(async bool) {
	l.once.Do(func() {
		if async {
			reuse.Go(l.work)
		} else {
			l.work()
		}
	})
}

// Start starts the work of a decision made with Call.Later, its log entry
// and events and its Headroom, on a goroutine of its own. Only the first
// call of Start, Run, Wait or the Headroom's use does the work.
func (o Outcome) Start() {
	if o.later != nil {
		o.later.do(true)
	}
}

// Run is Start on the caller's goroutine, for a caller that has nothing
// else to do meanwhile (the gateway, once its request is written and
// until its response comes): no goroutine is woken for it.
func (o Outcome) Run() {
	if o.later != nil {
		o.later.do(false)
	}
}

// Wait returns once the decision's log entry and events are written.
func (o Outcome) Wait() {
	o.Start()
	if o.written != nil {
		<-o.written
	}
}

// StartRole is the role a new session of agent starts in: role if given
// (the operator's choice), else the agent's configured role, else envRole
// ($LEAN_CTX_ROLE), else the configured default.
func (r Rules) StartRole(agent, role, envRole string) string {
	for _, name := range []string{role, r.AgentRoles[agent], envRole, r.DefaultRole} {
		if name != "" {
			return name
		}
	}
	return roles.DefaultRole
}

func (g *Governor) startRole(r *Rules, agent, role string) string {
	return r.StartRole(agent, role, g.envRole)
}

// StartRole is the role a new session of agent starts in: role if given
// (the operator's choice), else the agent's configured role, else
// $LEAN_CTX_ROLE, else the configured default.
func (g *Governor) StartRole(agent, role string) string {
	return g.startRole(g.rules.Load(), agent, role)
}

// Project is the project's root the policy is told of ("" for none).
func (g *Governor) Project() string { return g.project }

// MaxRole is the most privileged role agent may switch itself into, "" if
// it has none.
func (g *Governor) MaxRole(agent string) string { return g.rules.Load().AgentMaxRoles[agent] }

// Session returns the session's counters (with its agent's usage in the
// current period of the agent's budget, if it has one), giving a new
// session its starting role (see StartRole). A session that has a role
// keeps it: only a switch changes it.
func (g *Governor) Session(ctx context.Context, k budget.Key, role string) (budget.Counters, error) {
	r := g.rules.Load()
	return g.session(ctx, r, k, role, g.period(r, k.Agent))
}

func (g *Governor) session(ctx context.Context, r *Rules, k budget.Key, role string, period budget.Period) (budget.Counters, error) {
	c, err := g.store.Get(ctx, k, period)
	if err != nil {
		return c, fmt.Errorf("ledger: %w", err)
	}
	if c.Role != "" {
		return c, nil
	}
	agent := c.AgentUsage
	c, err = g.store.InitRole(ctx, k, g.startRole(r, k.Agent, role))
	if err != nil {
		return c, fmt.Errorf("ledger: %w", err)
	}
	c.AgentUsage = agent
	return c, nil
}

// view returns the session's counters as session does, without writing
// anything: a session the ledger does not have (or has without a role) is
// shown in the role it would start in, and is not created. What a session
// may ask and what the operator's commands show read through it.
func (g *Governor) view(ctx context.Context, r *Rules, k budget.Key, role string, period budget.Period) (budget.Counters, error) {
	c, err := g.store.Get(ctx, k, period)
	if err != nil {
		return c, fmt.Errorf("ledger: %w", err)
	}
	if c.Role == "" {
		c.Role = g.startRole(r, k.Agent, role)
	}
	return c, nil
}

// period is the ledger's name of the current period of agent's budget
// ("day:2026-12-01", "week:2026-W49", "month:2026-12", "total"; in UTC),
// "" when no agent budget applies.
func (g *Governor) period(r *Rules, agent string) budget.Period {
	b, ok := r.Engine.Document().AgentBudget(agent)
	if !ok {
		return ""
	}
	return PeriodKey(b.Period, g.now())
}

// PeriodKey names the period of kind ("day", "week", "month", "total") that
// holds t, in UTC: the key of an agent's counters in the ledger.
func PeriodKey(kind string, t time.Time) budget.Period {
	t = t.UTC()
	switch kind {
	case "day":
		return "day:" + t.Format("2006-01-02")
	case "week":
		y, w := t.ISOWeek()
		return fmt.Sprintf("week:%04d-W%02d", y, w)
	case "month":
		return "month:" + t.Format("2006-01")
	}
	return "total"
}

// input is the decision input of call by session k, whose counters are c,
// in the agent's budget period (if any).
func (g *Governor) input(k budget.Key, c budget.Counters, call Call, period budget.Period) contract.Input {
	in := statusInput(k, c, period)
	in.Tool, in.Upstream, in.UpstreamTool, in.Arguments = call.Tool, call.Upstream, call.UpstreamTool, call.Arguments
	in.Session, in.Project = k.Session, g.project
	return in
}

// resolve is input.resolved of call: the path arguments of an edit as the
// file system resolves them now, from the call's working directory and
// the project's root (see Resolve). The agent may change a link after
// this: the README's threat model says so.
func (g *Governor) resolve(r *Rules, call Call) map[string][]string {
	paths := r.Engine.EditPaths(call.Tool, call.UpstreamTool, call.Arguments)
	if len(paths) == 0 {
		return nil
	}
	dir := call.Dir
	if dir == "" {
		dir = g.workDir
	}
	return Resolve(paths, r.Engine.Document().Config.Protect.Home, dir, g.project)
}

// statusInput is what the policy needs to measure the session's budget:
// its role and usage, and its agent's usage in the period of its budget.
func statusInput(k budget.Key, c budget.Counters, period budget.Period) contract.Input {
	in := contract.Input{Role: c.Role, Budget: usage(c), Agent: k.Agent}
	if period != "" {
		a := contract.Usage{Tokens: c.AgentUsage.Tokens, Shell: c.AgentUsage.Shell, CostMicros: c.AgentUsage.CostMicros}
		in.AgentBudget = &a
	}
	return in
}

func usage(c budget.Counters) contract.Usage {
	return contract.Usage{Tokens: c.Tokens, Shell: c.Shell, CostMicros: c.CostMicros}
}

// Decide decides a call with the session's live counters (for a session
// whose agent records its model usage, after charging what is new in it:
// see Call.Transcript). With Reserve, an
// allowed shell call takes its slot by a compare-and-swap on the very
// counters the decision was made on; if another call changed them first,
// the call is decided again on the new counters. So under any concurrency,
// exactly the calls the policy admits pass, and a denied call takes nothing.
func (g *Governor) Decide(ctx context.Context, call Call) (Outcome, error) {
	start := time.Now()
	o, err := g.decide(ctx, call)
	g.observer.Decided(o.Decision, time.Since(start), err)
	if o.Reserved {
		g.observer.Charged(call.Session.Agent, o.Counters.Role, contract.Usage{Shell: 1})
	}
	return o, err
}

func (g *Governor) decide(ctx context.Context, call Call) (Outcome, error) {
	r := g.rules.Load()
	period := g.period(r, call.Session.Agent)
	cur, err := g.session(ctx, r, call.Session, call.Role, period)
	if err != nil {
		return Outcome{}, err
	}
	source := ""
	if call.Transcript != "" && g.book != nil {
		// What the agent's model used since its last call is charged
		// first, so that the call is decided on the session's real cost.
		ch, err := g.usage(ctx, r, call.Session, call.Role, call.Tool, call.Transcript, 0, 0, events.ChargeResult{})
		if err != nil {
			return Outcome{}, err
		}
		source = ch.Source
		if ch.CostMicros > 0 {
			if cur, err = g.session(ctx, r, call.Session, call.Role, period); err != nil {
				return Outcome{}, err
			}
		}
	}
	resolved := g.resolve(r, call)
	for range maxAttempts {
		in := g.input(call.Session, cur, call, period)
		in.Resolved = resolved
		start := g.now()
		d, err := r.Engine.Decide(ctx, in)
		elapsed := g.now().Sub(start)
		if err != nil {
			return Outcome{Decision: d}, err
		}
		if why, held := r.restrained(call.Session.Agent, cur.Role); held {
			d = refusedForRole(r, in, d, why)
		}
		o := Outcome{Decision: d, Allowed: d.Allowed, Counters: cur, Period: period}
		if d.Decision == contract.Ask && call.Approved != "" {
			o.Allowed, o.Approved = true, true
		}
		if !o.Allowed && g.shadow {
			o.Allowed, o.Shadowed = true, true
		}
		asked := d.Decision == contract.Ask && call.ReserveOnAsk && !o.Allowed
		switch {
		case !call.Reserve || !d.ShellTool || !o.Allowed && !asked:
		case o.Shadowed: // the call runs although the policy refused it: count it
			o.Counters, err = g.store.AddShell(ctx, call.Session, period)
			if err != nil {
				return o, fmt.Errorf("ledger: %w", err)
			}
			o.Reserved = true
		default:
			next, ok, err := g.store.ReserveShell(ctx, call.Session, period, cur)
			if err != nil {
				return o, fmt.Errorf("ledger: %w", err)
			}
			if !ok {
				cur = next
				continue // another call changed the counters: decide again
			}
			o.Reserved, o.Counters = true, next
		}
		at := g.now()
		o.DecisionID = events.NewID(at)
		record := func() {
			// A defect in recording (a sink's, the log's, a mask's) is
			// reported, as a log that cannot be written is: it must not
			// end the process that serves every session. What it had
			// not written yet (events of crossings) is not written.
			defer func() {
				if p := recover(); p != nil {
					g.onError(fmt.Errorf("recording decision %s: %v", o.DecisionID, p))
				}
			}()
			red := g.recordDecision(o, r, at, in, elapsed, call, source)
			if o.Reserved {
				before := o.Counters
				before.Shell--
				if period != "" {
					before.AgentUsage.Shell--
				}
				_, crossed := g.crossings(context.WithoutCancel(ctx), r, call.Session, period, before, o.Counters)
				for _, e := range crossed {
					g.emit(red, e)
				}
			}
		}
		if call.Background {
			done := make(chan struct{})
			o.written = done
			var h *Headroom
			if call.Prefetch && o.Allowed {
				h = newHeadroom(r, call.Session, o.Counters, period)
				o.Headroom = h
			}
			// One goroutine for both, the allowance first (a charge
			// waits for it): each hand-off to another goroutine wakes a
			// thread of the runtime.
			work := func() {
				defer close(done)
				if h != nil {
					h.work(ctx)
				}
				record()
			}
			if call.Later {
				o.later = &later{work: work}
				if h != nil {
					h.start = o.Run // a charge that waits for the allowance works it out itself
				}
			} else {
				reuse.Go(work)
			}
		} else {
			record()
		}
		return o, nil
	}
	return Outcome{}, errors.New("ledger: could not reserve a shell slot: the counters kept changing")
}

// Result is a finished tool call, to charge.
type Result struct {
	Session budget.Key
	// Role is the role the session starts in if this charge is its first
	// (as Call.Role); "" for the agent's start role (StartRole).
	Role string
	Tool string
	// Arguments as the agent sent them (JSON); their tokens are input.
	Arguments string
	// Output is the text that went back to the agent; its tokens are
	// context tokens and output.
	Output string
	// Media is the estimate, in tokens, of what went back to the agent
	// that is not text (images, audio): charged with Output's tokens.
	Media int64
	// Model prices the call; "" for the configured default.
	Model string
	// ModelClaimed says that Model is only someone's word (what an agent's
	// client says its model was): the call costs no less than at the
	// configured default's prices.
	ModelClaimed bool
	// CostOnly charges the cost of the tokens and none of them to the
	// context: what the agent's model read and wrote for someone else
	// (an upstream's sampling request), which its context does not keep.
	CostOnly bool
	// DecisionID is the decision of the call, when known: the charge's
	// log entry names it.
	DecisionID string
	// Transcript is where the session's agent records its model usage
	// (Claude Code's transcript_path), "" for none: see Usage.
	Transcript string
}

// Charge is what a result cost.
type Charge struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CostMicros   int64 `json:"cost_micros"`
	// Before and After are the session's counters around the charge.
	Before budget.Counters `json:"before"`
	After  budget.Counters `json:"after"`
	// Signal is the session's budget signal after the charge, as the
	// policy measures it ("" when its role is not defined).
	Signal string `json:"signal"`
	// Source says where the session's cost comes from ("transcript",
	// "estimate"), for a session whose agent records its usage.
	Source string `json:"cost_source,omitempty"`
}

// Record charges a finished call: the o200k_base tokens of its output to the
// context budget, and the cost of its input and output tokens. For a
// session whose agent records its model usage (Result.Transcript), the
// cost is that usage's: see Usage.
func (g *Governor) Record(ctx context.Context, res Result) (Charge, error) {
	if res.Session.Session == "" {
		return Charge{}, errors.New("record: a session id is required")
	}
	r := g.rules.Load()
	in, err := g.tokens.Count(res.Arguments)
	if err != nil {
		return Charge{}, err
	}
	out, err := g.tokens.Count(res.Output)
	if err != nil {
		return Charge{}, err
	}
	out += max(res.Media, 0)
	est, err := g.price(res.Model).Of(pricing.Usage{Input: in, Output: out})
	if err != nil {
		return Charge{}, err
	}
	if res.ModelClaimed && res.Model != "" {
		d, err := g.price("").Of(pricing.Usage{Input: in, Output: out})
		if err != nil {
			return Charge{}, err
		}
		est = max(est, d)
	}
	held := out // what the context keeps
	if res.CostOnly {
		held = 0
	}
	note := events.ChargeResult{DecisionID: res.DecisionID, InputTokens: in, CostOnly: res.CostOnly}
	if res.Transcript == "" || g.book == nil {
		ch, err := g.charge(ctx, r, res.Session, res.Role, res.Tool, held, est, note)
		ch.InputTokens, ch.OutputTokens = in, out
		return ch, err
	}
	ch, err := g.usage(ctx, r, res.Session, res.Role, res.Tool, res.Transcript, held, est, note)
	ch.InputTokens, ch.OutputTokens = in, out
	return ch, err
}

// charge charges a session tokens and cost, gives a session charged before
// any decision its role (role, else the agent's start role), logs the charge (note says what else the entry
// tells: the decision, the input tokens) and emits the budget events the
// charge crossed.
func (g *Governor) charge(ctx context.Context, r *Rules, k budget.Key, role, tool string, tokens, cost int64, note events.ChargeResult) (Charge, error) {
	period := g.period(r, k.Agent)
	after, err := g.store.Charge(ctx, k, period, tokens, cost)
	if err != nil {
		return Charge{}, fmt.Errorf("ledger: %w", err)
	}
	if after.Role == "" { // a session charged before any decision: give it its role
		agent := after.AgentUsage
		if after, err = g.store.InitRole(ctx, k, g.startRole(r, k.Agent, role)); err != nil {
			return Charge{}, fmt.Errorf("ledger: %w", err)
		}
		after.AgentUsage = agent
	}
	before := after
	before.Tokens -= tokens
	before.CostMicros -= cost
	if period != "" {
		before.AgentUsage.Tokens -= tokens
		before.AgentUsage.CostMicros -= cost
	}
	g.observer.Charged(k.Agent, after.Role, contract.Usage{Tokens: tokens, CostMicros: cost})
	note.Tokens, note.CostMicros = tokens, cost
	g.logCharge(k, tool, g.now(), note, after)
	levels, crossed := g.crossings(ctx, r, k, period, before, after)
	if len(crossed) > 0 {
		// A charge has no decision input; its events are masked as one
		// of a call of the tool by the session would be.
		red := g.redact(contract.Input{Role: after.Role, Tool: tool, Session: k.Session, Agent: k.Agent, Project: g.project})
		for _, e := range crossed {
			g.emit(red, e)
		}
	}
	return Charge{OutputTokens: tokens, CostMicros: cost, Before: before, After: after, Signal: levels.Signal}, nil
}

// price is the price of model ("" for the configured default): the price
// table's, else the default model's, saying so once per model (OnError).
func (g *Governor) price(model string) pricing.Price {
	p, name, known := g.prices.Lookup(model)
	if !known {
		if _, told := g.unpriced.LoadOrStore(model, true); !told {
			d, _, _ := g.prices.Lookup("")
			g.onError(fmt.Errorf("no price for model %q: charged at the price of %s ($%s in, $%s out per million tokens; [cost.models.NAME] in harness.toml sets one)",
				model, name, dollars(d.InputMicrosPerMTok), dollars(d.OutputMicrosPerMTok)))
		}
	}
	return p
}

// dollars formats micro-dollars as dollars, without trailing zeros past
// the cents.
func dollars(micros int64) string {
	s := fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
	for strings.HasSuffix(s, "0") && len(s) > len(s[:strings.IndexByte(s, '.')])+3 {
		s = s[:len(s)-1]
	}
	return s
}

// ResetAgent is the operator's reset of an agent's usage in the current
// period of its budget across sessions; it returns that period. An agent
// without a budget, or without usage in the period, is an error. A reset
// is an event (BudgetReset) and a decision-log entry (harness/reset).
func (g *Governor) ResetAgent(ctx context.Context, agent string) (budget.Period, error) {
	period := g.period(g.rules.Load(), agent)
	if period == "" {
		return "", fmt.Errorf("agent %s has no budget across its sessions ([agents.NAME.budget] in harness.toml)", agent)
	}
	if err := g.store.ResetAgent(ctx, agent, period); err != nil {
		if errors.Is(err, budget.ErrNoSession) {
			return period, fmt.Errorf("agent %s has used nothing in %s", agent, period)
		}
		return period, fmt.Errorf("ledger: %w", err)
	}
	g.recordReset(contract.ResetInput{Agent: agent, Scope: events.ScopeAgent, Period: period, By: contract.ByOperator}, "")
	return period, nil
}

// Reset is the operator's reset of a session's usage (its role stays). A
// session the ledger does not have is budget.ErrNoSession. A reset is an
// event (BudgetReset) and a decision-log entry (harness/reset).
func (g *Governor) Reset(ctx context.Context, k budget.Key) error {
	c, err := g.store.Get(ctx, k, "") // for its role, which a reset keeps
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := g.store.Reset(ctx, k); err != nil {
		return err
	}
	g.recordReset(contract.ResetInput{Session: k.Session, Agent: k.Agent, Scope: events.ScopeSession, By: contract.ByOperator}, c.Role)
	return nil
}

// recordReset writes the decision-log entry and the event of a reset made
// (in the role of the session it reset, if any).
func (g *Governor) recordReset(in contract.ResetInput, role string) {
	at := g.now()
	id := events.NewID(at)
	red := g.redact(in)
	if g.decisions != nil {
		err := g.decisions.Log(events.Entry{DecisionID: id, Path: "harness/reset", Timestamp: at.UTC()}, red,
			contract.ResetResult{Reset: true, Role: role})
		if err != nil {
			g.onError(fmt.Errorf("decision log: %w", err))
		}
	}
	g.emit(red, events.Event{Type: events.BudgetReset, Session: in.Session, Agent: in.Agent, Role: role,
		Reset: &events.Reset{By: in.By, Scope: in.Scope, Period: in.Period, DecisionID: id}})
}
