package roles

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/agentharness/harness/internal/strict"
)

// Source says where a role file was found.
type Source string

// The three places roles come from, lowest precedence first.
const (
	SourceBuiltin Source = "built-in"
	SourceUser    Source = "user"
	SourceProject Source = "project"
)

// ShellPolicy is what a role does with shell tools.
type ShellPolicy string

// Shell policies of the contract.
const (
	ShellTrack    ShellPolicy = "track"    // allowed, counted
	ShellCompress ShellPolicy = "compress" // allowed, output compressed
	ShellDeny     ShellPolicy = "deny"     // refused
)

// NeverBlock is the block_at_percent value that turns blocking off.
const NeverBlock = 255

// MicrosPerUSD converts dollars to the integer micro-dollars used everywhere.
const MicrosPerUSD = 1_000_000

// Limits of a role. Money is in integer micro-dollars.
type Limits struct {
	MaxContextTokens    int64 `json:"max_context_tokens"`
	MaxShellInvocations int64 `json:"max_shell_invocations"`
	MaxCostMicros       int64 `json:"max_cost_micros"`
	WarnAtPercent       int64 `json:"warn_at_percent"`
	BlockAtPercent      int64 `json:"block_at_percent"`
}

// Role is a fully resolved role: inheritance applied, defaults filled in.
type Role struct {
	Name        string      `json:"name"`
	Source      Source      `json:"source"`
	File        string      `json:"file"`
	Inherits    string      `json:"inherits,omitempty"`
	Chain       []string    `json:"chain"` // the role, then its ancestors
	Description string      `json:"description"`
	ShellPolicy ShellPolicy `json:"shell_policy"`
	Privileged  bool        `json:"privileged"`
	Allowed     []string    `json:"allowed"`
	Denied      []string    `json:"denied"`
	// Ask are the patterns of the tools whose calls wait for a person's
	// approval when they would be allowed (contract section 8).
	Ask    []string       `json:"ask"`
	Limits Limits         `json:"limits"`
	IO     map[string]any `json:"io,omitempty"`
	// Origin maps every resolved field, by its TOML path ("limits.max_cost_usd"),
	// to the file that set it, or to "default (...)" when no file did.
	Origin map[string]string `json:"origin"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether s may name a role: 1 to 64 characters of
// [A-Za-z0-9_-].
func ValidName(s string) bool { return nameRE.MatchString(s) }

// ValidPattern reports whether s can be a tool name or pattern: not empty,
// without spaces (of any script), control characters or format characters
// (bidirectional overrides, zero-width spaces). Such a character names no
// tool, and one in a pattern is a way to make it look like another.
func ValidPattern(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	})
}

func checkName(s string) error {
	if !ValidName(s) {
		return fmt.Errorf("invalid role name %s: use 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'", strict.Quote(s))
	}
	return nil
}
