package main

import (
	"strings"
	"testing"
)

// TestFabricUsage: mrc fabric's modes and flags fail as usage errors
// (exit 2, one line) before anything is built.
func TestFabricUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fabric"}, "want 'up', 'down ID' or 'sweep'"},
		{[]string{"fabric", "build"}, `unknown fabric mode "build"`},
		{[]string{"fabric", "down"}, "want 'mrc fabric down ID'"},
		{[]string{"fabric", "down", "a", "b"}, "want 'mrc fabric down ID'"},
		{[]string{"fabric", "up", "--planes", "x"}, `invalid value "x" for --planes: want a whole number`},
		{[]string{"fabric", "up", "extra"}, `unexpected argument "extra"`},
	} {
		if line := assertUsageError(t, c.args...); !strings.Contains(line, c.want) {
			t.Errorf("mrc %s: %q, want it to contain %q", strings.Join(c.args, " "), line, c.want)
		}
	}
	_, stderr, code := runMRC(t, "fabric", "-h")
	if code != 0 || !strings.Contains(stderr, "mrc fabric down ID") {
		t.Errorf("mrc fabric -h: exit %d, stderr %q", code, stderr)
	}
}
