package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/internal/strict"
)

// rootLong is the description of the whole command (harness --help).
const rootLong = `harness governs the tool calls of AI coding agents: which tools an agent may call
under its role, how much of its budget (context tokens, shell invocations, estimated
cost) it may spend, and why a call was allowed, warned or denied.

Roles come from the project's .lean-ctx/roles/, the user's ~/.lean-ctx/roles/ and
$XDG_DATA_HOME/lean-ctx/roles/, and the five built-ins (coder, reviewer, debugger, ops,
admin); custom Rego policies (package harness.custom.<name>, with deny and warn rules)
from the project's .lean-ctx/policies/ and the user's ~/.lean-ctx/policies/. A new
session's role is --role, else its agent's [agents.NAME] role in harness.toml, else
$LEAN_CTX_ROLE, else [enforcement] default_role (coder). A session keeps its role: only
a switch changes it, and a switch never resets usage. Sessions are found, not invented:
--session S (or $HARNESS_SESSION) with --agent A (or $HARNESS_AGENT); without an agent,
the session S of the one agent that has one.

Exit codes: 0 allowed (or warned) and ok, 1 usage or load error, 2 denied (test: a test
failed), 3 role, configuration or policy files have errors. In shadow mode
([enforcement] mode = "shadow") a deny is reported but exits 0.`

// Command groups of harness --help.
const (
	groupDecide  = "decide"
	groupSession = "session"
	groupPolicy  = "policy"
	groupConnect = "connect"
)

// command is the whole command tree.
func (c *cli) command() *cobra.Command {
	var version bool
	root := &cobra.Command{
		Use:   "harness",
		Short: "Governance for AI coding agents: roles, budgets, decisions",
		Long:  rootLong,
		Example: `  harness decide --role reviewer --tool ctx_shell
  harness --project ~/src/app roles list
  harness help decide`,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: c.runs(func(cmd *cobra.Command, args []string) int {
			if version {
				return c.version(false)
			}
			// No command: what there is, where a mistake is reported.
			cmd.SetOut(c.stderr)
			cmd.Usage()
			return exitError
		}),
	}
	root.PersistentFlags().StringVar(&c.project, "project", "", "the project root `DIR` (default: found by walking up from the working directory)")
	root.Flags().BoolVar(&version, "version", false, "print the harness's version (as harness version)")
	root.AddGroup(
		&cobra.Group{ID: groupDecide, Title: "Deciding and charging tool calls:"},
		&cobra.Group{ID: groupSession, Title: "Sessions, budgets and what happened:"},
		&cobra.Group{ID: groupPolicy, Title: "Roles and policies:"},
		&cobra.Group{ID: groupConnect, Title: "Putting the harness in front of an agent:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, cmd := range cmds {
			cmd.GroupID = group
			root.AddCommand(cmd)
		}
	}
	add(groupDecide, c.decideCmd(), c.recordCmd())
	add(groupSession, c.budgetCmd(), c.sessionsCmd(), c.roleCmd(), c.eventsCmd(), c.logCmd(), c.reportCmd())
	add(groupPolicy, c.rolesCmd(), c.checkCmd(), c.compileCmd(), c.testCmd())
	add(groupConnect, c.serveCmd(), c.hookCmd(), c.compressCmd())
	root.AddCommand(c.versionCmd())
	root.SetHelpCommand(c.helpCmd())
	root.SetUsageFunc(usage)
	root.SetFlagErrorFunc(flagError)
	return root
}

// helpCmd is harness help [COMMAND]: a command's help on stdout, and an
// error with a suggestion for a command there is not.
func (c *cli) helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]...",
		Short: "Help about any command",
		Long:  "Help prints the description, usage, flags and examples of a command (the same as harness COMMAND --help).",
		Example: `  harness help
  harness help budget reset`,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := cmd.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: c.runs(func(cmd *cobra.Command, args []string) int {
			target := cmd.Root()
			for _, a := range args {
				next := findSub(target, a)
				if next == nil {
					c.usageError(target, unknownCommand(target, a))
					return exitError
				}
				target = next
			}
			target.InitDefaultHelpFlag() // as cobra does when the command runs
			target.SetOut(c.stdout)
			target.Help()
			return exitOK
		}),
	}
}

// findSub is the subcommand of cmd named (or aliased) name, or nil.
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, sub := range cmd.Commands() {
		if sub.Name() == name || slices.Contains(sub.Aliases, name) {
			return sub
		}
	}
	return nil
}

// usageError reports a mistake in the command line of cmd, and where its
// usage is.
func (c *cli) usageError(cmd *cobra.Command, err error) {
	if cmd == nil {
		c.fail("%v", err)
		return
	}
	// Cobra finds an unknown command itself; say it as every other mistake.
	var unknown string
	if _, scanErr := fmt.Sscanf(err.Error(), "unknown command %q", &unknown); scanErr == nil {
		err = unknownCommand(cmd, unknown)
	}
	prefix, path := "", "harness"
	if n := name(cmd); n != "" {
		prefix, path = n+": ", path+" "+n
	}
	fmt.Fprintf(c.stderr, "harness: %s%v\nRun '%s --help' for usage.\n", prefix, err, path)
}

// unknownCommand is the error of a subcommand of cmd that there is not,
// with a suggestion when one is close.
func unknownCommand(cmd *cobra.Command, name string) error {
	kind := "command"
	if cmd.HasParent() {
		kind = "subcommand"
	}
	msg := fmt.Sprintf("unknown %s %q", kind, name)
	if s := suggestCommand(cmd, name); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return errors.New(msg)
}

// suggestCommand is the subcommand of cmd closest to name, "" when none is
// close: by cobra's rules (a prefix, or a distance of at most 2).
func suggestCommand(cmd *cobra.Command, name string) string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		return s[0]
	}
	return ""
}

// flagError rewrites pflag's errors the way the harness says mistakes: an
// unknown flag with the closest there is, a bad value with what is
// wanted.
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var missing *pflag.ValueRequiredError
	switch {
	case errors.As(err, &unknown):
		given := unknown.GetSpecifiedName()
		dashes := "--"
		if short := unknown.GetSpecifiedShortnames(); short != "" {
			given, dashes = short, "-"
		}
		msg := fmt.Sprintf("unknown flag %s%s", dashes, given)
		if s := suggestFlag(cmd, given); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
		return errors.New(msg)
	case errors.As(err, &invalid):
		return fmt.Errorf("--%s %q: %v", invalid.GetFlag().Name, invalid.GetValue(), invalid.Unwrap())
	case errors.As(err, &missing):
		return fmt.Errorf("--%s needs a value", missing.GetFlag().Name)
	}
	return err
}

// suggestFlag is the flag of cmd closest to name, "" when none is close.
func suggestFlag(cmd *cobra.Command, name string) string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if slices.Contains(names, name) { // -tool: a long flag with one dash
		return name
	}
	return strict.Suggest(name, names)
}

// noArgs refuses positional arguments, with a hint of what to do instead
// ("" for none).
func noArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unexpected argument %q", args[0])
		if hint != "" {
			msg += " (" + hint + ")"
		}
		return errors.New(msg)
	}
}

// oneArg wants exactly one positional argument, named what.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("want one %s", what)
		}
		return nil
	}
}

// group is the run of a command that only holds subcommands: without one,
// or with one there is not, it says which there are.
func group(want string) func(cmd *cobra.Command, args []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("want a subcommand: %s", want)
		}
		return fmt.Errorf("%w: want %s", unknownCommand(cmd, args[0]), want)
	}
}

// completeRoles completes a role name: the roles of the load.
func (c *cli) completeRoles(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	h, err := app.Load(cmd.Context(), c.params())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []cobra.Completion
	for _, r := range h.Roles.All() {
		names = append(names, cobra.CompletionWithDesc(r.Name, string(r.Source)+": "+r.Description))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeWords completes a flag's value from a fixed list.
func completeWords(words ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp)
}
