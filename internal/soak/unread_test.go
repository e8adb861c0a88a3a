//go:build soak

package soak

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestUnread: the record of a stuck call tells how many bytes wait in
// another process's pipe, and names what is not a pipe.
func TestUnread(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	proc := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/fd/"
	for _, tt := range []struct {
		write string
		fd    string
		want  string
	}{
		{"", "0", ", 0 bytes unread"},
		{"hello", "0", `, 5 bytes unread, starting "hello"`},
		{" world", "0", `, 11 bytes unread, starting "hello world"`},
		{"", "1", "/dev/null"},
	} {
		if _, err := in.Write([]byte(tt.write)); err != nil {
			t.Fatal(err)
		}
		if got := unread(proc + tt.fd); !strings.HasSuffix(got, tt.want) {
			t.Errorf("after %q, fd %s: %q, want it to end %q", tt.write, tt.fd, got, tt.want)
		}
	}
	if got := unread(proc + "99"); !strings.Contains(got, "no such file") {
		t.Errorf("a descriptor that is not open: %q", got)
	}
}
