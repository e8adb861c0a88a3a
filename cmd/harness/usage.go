package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usage writes cmd's usage as cobra's default does (the usage lines,
// aliases, examples, subcommands by group, flags and global flags), with
// the flags listed by flagUsages.
func usage(cmd *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if cmd.Runnable() {
		fmt.Fprintf(&b, "\n  %s", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", cmd.CommandPath())
	}
	if len(cmd.Aliases) > 0 {
		fmt.Fprintf(&b, "\n\nAliases:\n  %s", cmd.NameAndAliases())
	}
	if cmd.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", cmd.Example)
	}
	if cmd.HasAvailableSubCommands() {
		list := func(title string, in func(*cobra.Command) bool) {
			var lines []string
			for _, sub := range cmd.Commands() {
				if in(sub) && (sub.IsAvailableCommand() || sub.Name() == "help") {
					lines = append(lines, fmt.Sprintf("  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short))
				}
			}
			if len(lines) > 0 {
				fmt.Fprintf(&b, "\n\n%s\n%s", title, strings.Join(lines, "\n"))
			}
		}
		for _, g := range cmd.Groups() {
			list(g.Title, func(sub *cobra.Command) bool { return sub.GroupID == g.ID })
		}
		title := "Additional Commands:"
		if len(cmd.Groups()) == 0 {
			title = "Available Commands:"
		}
		list(title, func(sub *cobra.Command) bool { return sub.GroupID == "" })
	}
	if cmd.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", flagUsages(cmd.LocalFlags()))
	}
	if cmd.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\n\nGlobal Flags:\n%s", flagUsages(cmd.InheritedFlags()))
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", cmd.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(cmd.OutOrStderr(), b.String())
	return err
}

// flagUsages lists the flags of fs, one a line, aligned: the flag with its
// value's placeholder (the `NAME` quoted in its usage), its usage and its
// default when it has one. A bool flag is written --name (pflag 1.1
// writes --name[=true|false]).
func flagUsages(fs *pflag.FlagSet) string {
	type row struct{ flag, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		flag := "      --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			flag = "  -" + f.Shorthand + ", --" + f.Name
		}
		name, text := pflag.UnquoteUsage(f)
		switch {
		case f.Value.Type() == "bool":
		case f.NoOptDefVal != "":
			flag += "[=" + name + "]"
		case name != "":
			flag += " " + name
		}
		if d := defaultText(f); d != "" {
			text += " (default " + d + ")"
		}
		rows = append(rows, row{flag, text})
		width = max(width, len(flag))
	})
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%-*s   %s", width, r.flag, r.usage)
	}
	return b.String()
}

// defaultText is a flag's default as its usage shows it, "" for the zero
// value of its type.
func defaultText(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
		return ""
	}
	if f.Value.Type() == "string" {
		return strconv.Quote(f.DefValue)
	}
	return f.DefValue
}
