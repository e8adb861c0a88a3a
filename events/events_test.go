package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentharness/harness/contract"
)

const childEnv = "HARNESS_EVENTS_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		writerChild(spec)
		return
	}
	os.Exit(m.Run())
}

func TestEventJSON(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	p := int64(85)
	tests := []struct {
		e    Event
		want string
	}{
		{Event{Type: BudgetWarning, Session: "s", Agent: "a", Role: "coder", Budget: &Budget{Dimension: "tokens", Used: 170000, Limit: 200000, Percent: &p}},
			`{"type":"BudgetWarning","time":"2026-11-30T11:00:00Z","session":"s","agent":"a","role":"coder","dimension":"tokens","used":170000,"limit":200000,"percent":85}`},
		{Event{Type: BudgetExhausted, Session: "s", Agent: "a", Role: "coder", Budget: &Budget{Dimension: "shell", Used: 0, Limit: 0}},
			`{"type":"BudgetExhausted","time":"2026-11-30T11:00:00Z","session":"s","agent":"a","role":"coder","dimension":"shell","used":0,"limit":0}`},
		{Event{Type: PolicyViolation, Session: "s", Agent: "a", Role: "reviewer", Violation: &Violation{Tool: "ctx_edit", Reason: "tool_denied: no",
			Reasons: []contract.Reason{{Code: "tool_denied", Message: "no"}}}},
			`{"type":"PolicyViolation","time":"2026-11-30T11:00:00Z","session":"s","agent":"a","role":"reviewer","tool":"ctx_edit","reason":"tool_denied: no","reasons":[{"code":"tool_denied","message":"no"}]}`},
		{Event{Type: RoleChanged, Session: "s", Agent: "a", Switch: &Switch{From: "coder", To: "reviewer", By: "agent"}},
			`{"type":"RoleChanged","time":"2026-11-30T11:00:00Z","session":"s","agent":"a","from":"coder","to":"reviewer","by":"agent"}`},
	}
	for _, tt := range tests {
		tt.e.Stamp(now)
		if !strings.HasPrefix(tt.e.ID, "0") || len(tt.e.ID) != 36 || tt.e.ID[14] != '7' {
			t.Errorf("id %q is not a UUIDv7", tt.e.ID)
		}
		b, _ := json.Marshal(tt.e)
		got := strings.Replace(string(b), `"id":"`+tt.e.ID+`",`, "", 1)
		if got != tt.want {
			t.Errorf("\n got %s\nwant %s", got, tt.want)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil || back.Type != tt.e.Type || !back.Time.Equal(tt.e.Time) {
			t.Errorf("round trip: %+v, %v", back, err)
		}
	}
	if a, b := NewID(now), NewID(now.Add(time.Millisecond)); a >= b {
		t.Errorf("ids are not time-ordered: %s, %s", a, b)
	}
}

func TestBus(t *testing.T) {
	t.Parallel()
	bus := NewBus()
	fast := bus.Subscribe(10)
	slow := bus.Subscribe(1)
	for i := range 3 {
		bus.Emit(Event{Type: RoleChanged, Session: strconv.Itoa(i)})
	}
	for i := range 3 {
		if e := <-fast.C; e.Session != strconv.Itoa(i) {
			t.Errorf("event %d: %+v", i, e)
		}
	}
	if slow.Dropped() != 2 || (<-slow.C).Session != "0" {
		t.Errorf("slow subscriber: dropped %d", slow.Dropped())
	}
	fast.Close()
	fast.Close() // twice is fine
	if _, open := <-fast.C; open {
		t.Error("closed subscription still open")
	}
	bus.Emit(Event{}) // no panic on a closed subscriber
}

// writerChild appends lines to a file until told count, as one of several
// processes: spec is "path|writer|count|maxbytes|maxfiles".
func writerChild(spec string) {
	f := strings.Split(spec, "|")
	count, _ := strconv.Atoi(f[2])
	maxBytes, _ := strconv.ParseInt(f[3], 10, 64)
	maxFiles, _ := strconv.Atoi(f[4])
	w, err := OpenFile(f[0], Rotation{MaxBytes: maxBytes, MaxFiles: maxFiles})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := range count {
		// Lines of varied length, some well above PIPE_BUF (4096 bytes).
		pad := strings.Repeat(string(rune('a'+i%26)), (i*997)%9000)
		line, _ := json.Marshal(map[string]any{"writer": f[1], "n": i, "pad": pad})
		if err := w.WriteLine(line); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	w.Close()
	os.Exit(0)
}

// Several processes appending (and rotating) at once never interleave or
// tear lines, and lose none while the rotation keeps them all: with files
// of 256 KiB every line takes the lock, with files of 2 MiB the first
// MiB of each is written without it (rotationRoom).
func TestConcurrentProcessesAppend(t *testing.T) {
	t.Parallel()
	for _, maxBytes := range []int{256 << 10, 2 << 20} {
		t.Run(strconv.Itoa(maxBytes), func(t *testing.T) {
			t.Parallel()
			concurrentAppend(t, maxBytes)
		})
	}
}

func concurrentAppend(t *testing.T, maxBytes int) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	const writers, each = 4, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|w%d|%d|%d|%d", childEnv, path, w, each, maxBytes, 100))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer %d: %v\n%s", w, err, out)
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	files := Files(path, 100)
	if len(files) < 3 {
		t.Errorf("expected rotation under load, got files %v", files)
	}
	err := ReadLines(path, 100, func(line []byte) error {
		var v struct {
			Writer string `json:"writer"`
			N      int    `json:"n"`
			Pad    string `json:"pad"`
		}
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("torn or interleaved line (%d bytes): %v: %.80q", len(line), err, line)
		}
		if want := (v.N * 997) % 9000; len(v.Pad) != want {
			return fmt.Errorf("line %s/%d has %d bytes of padding, want %d", v.Writer, v.N, len(v.Pad), want)
		}
		key := v.Writer + "/" + strconv.Itoa(v.N)
		if seen[key] {
			return fmt.Errorf("line %s twice", key)
		}
		seen[key] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Errorf("read %d lines, want %d", len(seen), writers*each)
	}
}

// A line the file has room for is appended without the lock that
// rotation takes: another process holding it does not hold the line up.
func TestLineWithRoomTakesNoLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := OpenFile(path, Rotation{MaxBytes: 4 << 20, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(path+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- w.WriteLine([]byte(`{"n":1}`)) }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the line waited 30 s for the lock another process holds")
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "{\"n\":1}\n" {
		t.Errorf("the file: %q %v", got, err)
	}
	held.Close() // lets a writer that waits go, then it closes
	w.Close()
}

func TestRotationKeepsMaxFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	w, err := OpenFile(path, Rotation{MaxBytes: 1000, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("x"), 99)
	for range 100 { // 10 KB through files of 1 KB
		if err := w.WriteLine(line); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if fi, _ := e.Info(); strings.HasPrefix(e.Name(), "decisions.jsonl") && !strings.HasSuffix(e.Name(), ".lock") && fi.Size() > 1000 {
			t.Errorf("%s is %d bytes, over the 1000 allowed", e.Name(), fi.Size())
		}
	}
	want := "decisions.jsonl decisions.jsonl.1 decisions.jsonl.2 decisions.jsonl.3 decisions.jsonl.lock"
	if strings.Join(names, " ") != want {
		t.Errorf("files %v, want %s", names, want)
	}
	n := 0
	ReadLines(path, 3, func([]byte) error { n++; return nil })
	if n != 40 { // 4 files of 10 lines
		t.Errorf("%d lines kept, want 40", n)
	}
}

func TestDecisionLogMasks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l, err := OpenDecisionLog(path, DecisionLogOptions{Labels: map[string]string{"app": "agent-harness"}})
	if err != nil {
		t.Fatal(err)
	}
	mask, err := NewMask([]string{"/arguments/password", "/arguments/env/*", "/arguments/missing"})
	if err != nil {
		t.Fatal(err)
	}
	input := map[string]any{
		"role": "ops", "tool": "deploy",
		"arguments": map[string]any{"Password": "hunter2", "host": "db1", "env": map[string]any{"TOKEN": "s3cr3t", "KEY": "k3y"}},
	}
	r, err := mask.Apply(input)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Log(Entry{DecisionID: "d-1", Path: "harness/decision", Timestamp: time.Unix(0, 0).UTC(), Metrics: map[string]int64{"timer_rego_query_eval_ns": 5}, Custom: &Custom{Shadow: true}},
		r, map[string]any{"decision": "allow"})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	raw, _ := os.ReadFile(path)
	for _, secret := range []string{"hunter2", "s3cr3t", "k3y"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("masked value %q reached the file: %s", secret, raw)
		}
	}
	var e map[string]any
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"decision_id", "path", "input", "result", "timestamp", "metrics", "labels", "erased", "custom"} {
		if _, ok := e[key]; !ok {
			t.Errorf("entry lacks %q: %s", key, raw)
		}
	}
	// The rules that erased something, as written and rooted at the input:
	// OPA's form. /arguments/missing erased nothing.
	if fmt.Sprint(e["erased"]) != "[/input/arguments/env/* /input/arguments/password]" || fmt.Sprint(e["custom"]) != "map[shadow:true]" {
		t.Errorf("erased %v", e["erased"])
	}
	if e["input"].(map[string]any)["arguments"].(map[string]any)["host"] != "db1" {
		t.Errorf("unmasked input lost: %s", raw)
	}
	if _, err := NewMask([]string{"arguments.password"}); err == nil {
		t.Error("a mask that is not a JSON pointer was accepted")
	}
}

func TestFollowAcrossRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := OpenFile(path, Rotation{MaxBytes: 200, MaxFiles: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 5 {
		w.WriteLine([]byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 40))))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int, 100)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, 10, 5*time.Millisecond, func(line []byte) error {
			var v struct{ N int }
			if err := json.Unmarshal(line, &v); err != nil {
				return err
			}
			got <- v.N
			return nil
		})
	}()
	for i := 5; i < 40; i++ { // rotates every few lines while followed
		w.WriteLine([]byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 40))))
		if i%7 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for want := range 40 {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("line %d, want %d", n, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("line %d never came", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A BudgetReset carries by, scope and period flat, as the contract's
// events do, beside the budget and switch events that have keys of those
// names; it reads back whole.
func TestResetEventJSON(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		e    Event
		want string
	}{
		{Event{Type: BudgetReset, Session: "s", Agent: "a", Role: "coder", Reset: &Reset{By: "operator", Scope: ScopeSession, DecisionID: "d-1"}},
			`{"type":"BudgetReset","time":"2026-12-01T10:00:00Z","session":"s","agent":"a","role":"coder","by":"operator","scope":"session","decision_id":"d-1"}`},
		{Event{Type: BudgetReset, Agent: "a", Reset: &Reset{By: "operator", Scope: ScopeAgent, Period: "day:2026-12-01"}},
			`{"type":"BudgetReset","time":"2026-12-01T10:00:00Z","session":"","agent":"a","by":"operator","scope":"agent","period":"day:2026-12-01"}`},
	} {
		tt.e.Stamp(now)
		b, err := json.Marshal(tt.e)
		if got := strings.Replace(string(b), `"id":"`+tt.e.ID+`",`, "", 1); err != nil || got != tt.want {
			t.Errorf("\n got %s (%v)\nwant %s", got, err, tt.want)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil || back.Reset == nil || *back.Reset != *tt.e.Reset || back.Budget != nil || back.Switch != nil || back.Violation != nil {
			t.Errorf("round trip: %+v %+v, %v", back, back.Reset, err)
		}
	}
	// The other events read back as they did.
	var sw Event
	if err := json.Unmarshal([]byte(`{"type":"RoleChanged","session":"s","from":"a","to":"b","by":"agent"}`), &sw); err != nil ||
		sw.Switch == nil || sw.By != "agent" || sw.Reset != nil {
		t.Errorf("switch event: %+v, %v", sw, err)
	}
}

// panicky is a result whose JSON panics: a defect while a line is made.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("a defect") }

// A long entry whose input the log's decoder cannot read back to cut it
// (arguments nested past its 10,000 levels, as a hook's tool_input may
// be) is written with that input cut whole. One that cannot be written
// at all (a defect) is written without its input, with its decision's
// outcome and reason codes and none of its messages, and the error is
// returned: no decision goes unlogged for what an agent put in its
// arguments.
func TestDecisionLogWritesWhatItCan(t *testing.T) {
	t.Parallel()
	deep := json.RawMessage(`{"pad":"` + strings.Repeat("y", MaxLine) + `","deep":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`)
	var args any
	dec := json.NewDecoder(bytes.NewReader(deep))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		t.Fatal(err)
	}
	deny := contract.Decision{Decision: "deny", Reasons: []contract.Reason{{Code: "policy", Message: "the secret hunter2 is refused"}}}
	for _, tt := range []struct {
		name   string
		input  any
		result any
		want   string // in the line
		whole  bool   // the entry is written whole, its input cut
	}{
		{"nested past the decoder", CallInput{Input: contract.Input{Tool: "ctx_shell", Arguments: args}}, deny,
			`"input":{"…":"[cut: ` + fmt.Sprint(len(deep)+len(`{"role":"","tool":"ctx_shell","upstream":"","upstream_tool":"","arguments":,"budget":{"tokens":0,"shell":0,"cost_micros":0},"session":"","agent":"","project":"","shell_policy":""}`)) +
				` bytes, nested too deep to read back]"}`, true},
		{"a defect", contract.Input{Tool: "ctx_read"}, panicky{}, `"input":{"…":"[not recorded: the entry could not be written]"}`, false},
		{"a defect, of a decision", panicky{}, deny, `"result":{"decision":"deny","allowed":false,"reasons":[{"code":"policy"}]}`, false},
		{"a time JSON cannot hold", contract.Input{Tool: "ctx_read"}, deny, `"timestamp":"0001-01-01T00:00:00Z"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			l, err := OpenDecisionLog(path, DecisionLogOptions{Labels: map[string]string{"app": "test"}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			r, _ := (*Mask)(nil).Apply(tt.input)
			at := time.Unix(0, 0).UTC()
			if strings.Contains(tt.name, "time") {
				at = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			err = l.Log(Entry{DecisionID: "d-1", Path: PathDecision, Timestamp: at, Custom: &Custom{Shell: 1}}, r, tt.result)
			if tt.whole && err != nil || !tt.whole && (err == nil || !strings.Contains(err.Error(), "written without its input")) {
				t.Errorf("error %v", err)
			}
			raw, _ := os.ReadFile(path)
			if !json.Valid(bytes.TrimSpace(raw)) || !strings.Contains(string(raw), `"decision_id":"d-1"`) || !strings.Contains(string(raw), `"custom":{"shell":1}`) ||
				!strings.Contains(string(raw), tt.want) || strings.Contains(string(raw), "hunter2") != tt.whole {
				t.Errorf("the line: %.400s", raw)
			}
		})
	}
}
