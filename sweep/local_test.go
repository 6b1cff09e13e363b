package sweep

import (
	"slices"
	"strings"
	"testing"
)

// TestCellCommand: a cell's process is `mrc sweep cell` of the sweep's
// file with the cell's index and workers, and --force only when asked.
func TestCellCommand(t *testing.T) {
	sw := mustLoad(t, "base: small.yaml\naxes:\n  seed: 1..12\n")
	for _, force := range []bool{false, true} {
		cmd := sw.CellCommand("/bin/mrc", "out", sw.Cell(7), 3, force)
		want := []string{"/bin/mrc", "sweep", "cell", sw.File, "--out", "out", "--index", "7", "--workers", "3"}
		if force {
			want = append(want, "--force")
		}
		if !slices.Equal(cmd.Args, want) {
			t.Errorf("force %v: %q, want %q", force, cmd.Args, want)
		}
	}
	if DefaultWorkers(1<<20) != 1 || DefaultWorkers(0) < 1 {
		t.Errorf("DefaultWorkers: %d for many jobs, %d for none; want at least 1", DefaultWorkers(1<<20), DefaultWorkers(0))
	}
}

// TestProgressPrinter: on a terminal the line is rewritten in place and
// cleared at the end; elsewhere each status is a "progress:" line and
// nothing is cleared. A status with nothing running is always shown.
func TestProgressPrinter(t *testing.T) {
	st := Status{Total: 4, Done: 4}
	var term, plain strings.Builder
	pt, pp := NewProgressPrinter(&term, true), NewProgressPrinter(&plain, false)
	for range 2 {
		pt.Show(st)
		pp.Show(st)
	}
	pt.Clear()
	pp.Clear()
	line := ProgressLine(st)
	if want := strings.Repeat("\r\033[K"+line, 2) + "\r\033[K"; term.String() != want {
		t.Errorf("terminal: %q, want %q", term.String(), want)
	}
	if want := strings.Repeat("progress: "+line+"\n", 2); plain.String() != want {
		t.Errorf("not a terminal: %q, want %q", plain.String(), want)
	}
	var none strings.Builder
	NewProgressPrinter(&none, true).Clear()
	if none.Len() != 0 {
		t.Errorf("Clear before any Show wrote %q", none.String())
	}
}

// TestAbbreviate: at most n items, then how many more.
func TestAbbreviate(t *testing.T) {
	items := []string{"a", "b", "c"}
	if got := abbreviate(items, 3); got != "a b c" {
		t.Errorf("%q", got)
	}
	if got := abbreviate(items, 2); got != "a b … (1 more)" {
		t.Errorf("%q", got)
	}
}
