package hook

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentharness/harness/contract"
)

// Protected is what the permission rules of an installed hook keep the
// agent's own tools away from.
type Protected struct {
	// Home is the user's home directory: paths under it are written ~/….
	Home string
	// Dirs are directories none of whose files the agent may edit: the
	// user's harness directories (roles, policies, harness.toml) and the
	// state directory (the ledger, the logs).
	Dirs []string
	// Secrets are files the agent may not read either: the user's
	// harness.toml, which can hold the gateway's bearer tokens.
	Secrets []string
	// Exe is the harness binary ("" if unknown): the agent may not edit it,
	// and the Bash rules name it as well as "harness".
	Exe string
	// Hook is the small hook binary beside Exe (Beside), "" for none: the
	// installed hook runs it, and the agent may not edit it.
	Hook string
	// Env are the values at installation of the environment variables
	// that locate the user's harness files and choose a new session's
	// role (hookclient.EnvVars; "" for unset). An installed hook's command
	// line sets them (Pinned): Claude Code gives its hooks the environment
	// a project's settings file sets (its "env"), which would otherwise
	// choose the configuration, roles and ledger the hook reads.
	Env map[string]string
}

// OperatorCommands are the harness's commands for the operator only: an
// operator's role switch, the reset of a budget, installing the hook.
var OperatorCommands = contract.OperatorVerbs

// anywhere are files of the harness wherever they are, as rules: Claude
// Code's settings files that hold the hook (the user's, and every
// project's shared and local ones), and every .lean-ctx directory (a
// project's roles, policies and harness.toml).
var anywhere = []string{"~/.claude/settings.json", "//**/.claude/settings.json", "//**/.claude/settings.local.json", "//**/.lean-ctx/**"}

// DenyRules are Claude Code permission rules (permissions.deny) that
// refuse the agent's edits of the harness's own files and of the settings
// that run the hook, reads of its secrets, and the operator's commands
// through Bash. They are a second layer: Claude Code applies them whatever
// the hook answers, and the harness's own policy is the first.
//
// Paths are written as Claude Code's Read and Edit rules take them
// (gitignore patterns): ~/… under the home directory, //… for an absolute
// path, glob characters escaped. An Edit rule covers every tool that edits
// files (Edit, Write, MultiEdit, NotebookEdit). A Bash rule NAME:* refuses
// the commands that start with NAME.
func DenyRules(p Protected) []string {
	var rules []string
	add := func(r string) {
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	for _, d := range p.Dirs {
		add("Edit(" + pathRule(p.Home, d) + "/**)")
	}
	for _, f := range p.Secrets {
		add("Read(" + pathRule(p.Home, f) + ")")
	}
	for _, f := range anywhere {
		add("Edit(" + f + ")")
	}
	names := []string{"harness"}
	if filepath.IsAbs(p.Exe) {
		add("Edit(" + pathRule(p.Home, p.Exe) + ")")
		if !strings.ContainsAny(p.Exe, "()") {
			names = append(names, p.Exe)
		}
	}
	if filepath.IsAbs(p.Hook) {
		add("Edit(" + pathRule(p.Home, p.Hook) + ")")
	}
	for _, n := range names {
		for _, c := range OperatorCommands {
			add("Bash(" + n + " " + c + ":*)")
		}
	}
	return rules
}

// pathRule is path as a Read or Edit rule names it: ~/… under home, else
// //… (an absolute path; a relative one is made absolute).
func pathRule(home, path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if home != "" {
		if rel, err := filepath.Rel(home, path); err == nil && filepath.IsLocal(rel) {
			return "~/" + globEscape(filepath.ToSlash(rel))
		}
	}
	return "/" + globEscape(filepath.ToSlash(path))
}

// globEscape escapes the characters a gitignore pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\!#`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
