package policy

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentharness/harness/compiler"
)

// pathKeys are the keys under which the self-protection rules take a
// string argument for a path (harness.rego's _path_arguments, which
// TestEditPathsAgree holds equal).
var pathKeys = regexp.MustCompile(`(?i)(path|paths|file|files|filename|dir|dirs|directory|source|sources|destination|target|dest|src|uri|url)$`)

// EditPaths are the arguments of a call that the self-protection rules
// judge as paths an edit changes, each once, in a fixed order: for a tool
// that edits files (by either of its names, without regard to case) while
// the rules are on, the strings under keys that name paths at any depth;
// nil for any other call. What the policy cannot do, the caller does with
// them: resolve them on the file system (contract.Input.Resolved).
func (e *Engine) EditPaths(tool, upstreamTool string, args any) []string {
	l := e.cur.Load()
	if !l.doc.Config.Protect.Enabled || !l.edits(tool) && (upstreamTool == "" || !l.edits(upstreamTool)) {
		return nil
	}
	var out []string
	var walk func(v any, last, prev any)
	walk = func(v any, last, prev any) {
		switch v := v.(type) {
		case string:
			if pathKeys.MatchString(lastKey(last, prev)) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				walk(v[k], k, last)
			}
		case []any:
			for i, x := range v {
				walk(x, i, last)
			}
		}
	}
	if m, ok := args.(map[string]any); ok {
		walk(m, nil, nil)
	}
	return out
}

// lastKey is the key a string value is named by (_last_key): the last
// step of its path when that is an object's key, else the one before it
// (an array's element under a key), else "".
func lastKey(last, prev any) string {
	if k, ok := last.(string); ok {
		return k
	}
	if k, ok := prev.(string); ok {
		return k
	}
	return ""
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// edits reports whether a tool of that name edits files: its lower-cased
// name matches the edit tools' expression. An expression that does not
// compile takes every tool for one (the resolution is only extra work).
//
// Every call asks, of its tool's name and of its upstream's name for it,
// and matching took a few microseconds of a decision's 10–20: the answers
// for the first maxEdited names are kept (a set of tools is small; names
// past them, whoever sends them, are matched each time).
func (l *loaded) edits(tool string) bool {
	if l.edit == nil {
		return true
	}
	return l.edited.get(tool, func(tool string) bool { return l.edit.MatchString(strings.ToLower(tool)) })
}

// maxEdited is how many tools' names edits keeps its answer for.
const maxEdited = 4096

// editRegexp compiles the edit tools' expression of doc, nil when it does
// not compile.
func editRegexp(doc *compiler.Document) *regexp.Regexp {
	re, err := regexp.Compile(doc.Config.EditTools.Regex)
	if err != nil {
		return nil
	}
	return re
}
