package gateway

import (
	"fmt"
	"regexp"
	"strings"
)

// CompressOptions bound what Compress keeps of long output.
type CompressOptions struct {
	// MaxLines is the most lines kept; longer output keeps its first
	// HeadLines and its last MaxLines-HeadLines lines, with a marker between.
	MaxLines  int
	HeadLines int
}

// DefaultCompress keeps 200 lines: the first 60 and the last 140.
var DefaultCompress = CompressOptions{MaxLines: 200, HeadLines: 60}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// Compress is what a shell tool of a role with shell_policy "compress"
// returns to the agent: ANSI escapes stripped, carriage-return progress
// collapsed to its last state, trailing spaces dropped, runs of the same
// line folded into one with a count, and very long output cut to its head
// and tail with a marker saying what was cut. Errors and the end of a build
// are usually at the tail, which is kept longest.
func Compress(s string, o CompressOptions) string {
	if o.MaxLines <= 0 {
		o = DefaultCompress
	}
	s = ansi.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	trailingNewline := len(lines) > 0 && lines[len(lines)-1] == ""
	if trailingNewline {
		lines = lines[:len(lines)-1]
	}
	var out []string
	for i := 0; i < len(lines); {
		line := lines[i]
		if j := strings.LastIndexByte(line, '\r'); j >= 0 { // progress: keep the last state
			line = line[j+1:]
		}
		line = strings.TrimRight(line, " \t")
		n := 1
		for i+n < len(lines) && strings.TrimRight(lastState(lines[i+n]), " \t") == line {
			n++
		}
		if n > 1 {
			line = fmt.Sprintf("%s  [×%d]", line, n)
		}
		out = append(out, line)
		i += n
	}
	if len(out) > o.MaxLines {
		head := min(o.HeadLines, o.MaxLines)
		tail := o.MaxLines - head
		cut := out[head : len(out)-tail]
		bytes := 0
		for _, l := range cut {
			bytes += len(l) + 1
		}
		marker := fmt.Sprintf("[… %d lines (%d bytes) cut by the harness: shell_policy compress keeps the first %d and the last %d …]", len(cut), bytes, head, tail)
		out = append(append(append([]string{}, out[:head]...), marker), out[len(out)-tail:]...)
	}
	res := strings.Join(out, "\n")
	if trailingNewline {
		res += "\n"
	}
	return res
}

func lastState(line string) string {
	if j := strings.LastIndexByte(line, '\r'); j >= 0 {
		return line[j+1:]
	}
	return line
}
