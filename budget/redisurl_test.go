package budget

import "testing"

func TestRedacted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"redis://user:secret@127.0.0.1:6379/0", "redis://user:xxxxx@127.0.0.1:6379/0"},
		{"redis+cluster://:pw@h1:7000,h2:7001", "redis+cluster://:xxxxx@h1:7000,h2:7001"},
		{"redis+sentinel://h1:26379/mymaster?sentinel_password=s3", "redis+sentinel://h1:26379/mymaster?sentinel_password=xxxxx"},
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"sqlite:/home/u/ledger.db", "sqlite:/home/u/ledger.db"},
		{"memory:", "memory:"},
	} {
		if got := Redacted(tt.in); got != tt.want {
			t.Errorf("Redacted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
