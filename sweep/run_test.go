package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// TestRunPool: Run starts every unfinished cell once, at most Jobs at a
// time; a cell whose process fails, or ends without its result, is
// listed with the last line of its stderr, and the others go on.
func TestRunPool(t *testing.T) {
	sw := mustLoad(t, "base: small.yaml\naxes:\n  seed: 1..12\n")
	dir := t.TempDir()
	if err := sw.Prepare(dir); err != nil {
		t.Fatal(err)
	}
	// Cell 0 is finished already.
	if err := writeJSON(CellPath(dir, sw.Cell(0)), sw.cellFile(sw.Cell(0))); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	started := map[int]int{}
	maxRunning := 0
	o := RunOptions{Jobs: 3, Command: func(c Cell) *exec.Cmd {
		mu.Lock()
		started[c.Index]++
		mu.Unlock()
		switch c.Index {
		case 4:
			return exec.Command("sh", "-c", "echo progress >&2; echo 'mrc sweep cell: boom' >&2; exit 1")
		case 7:
			return exec.Command("true") // writes nothing
		}
		return exec.Command("sh", "-c", fmt.Sprintf("sleep 0.05; echo {} > %s", CellPath(dir, c)))
	}, Progress: func(s Status) {
		mu.Lock()
		maxRunning = max(maxRunning, s.Running)
		mu.Unlock()
	}}
	sum, err := sw.Run(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || sum.Done != 9 || sum.Failed != 2 || sum.Running != 0 {
		t.Fatalf("status %+v", sum.Status)
	}
	if len(sum.Failures) != 2 || sum.Failures[0].Cell.ID != "0004" || sum.Failures[0].Err != "boom" ||
		sum.Failures[1].Cell.ID != "0007" || sum.Failures[1].Err != "the cell's process ended without writing its result" {
		t.Fatalf("failures %+v", sum.Failures)
	}
	if started[0] != 0 || len(started) != 11 {
		t.Fatalf("started %v: want every cell but 0, once", started)
	}
	for i, n := range started {
		if n != 1 {
			t.Errorf("cell %d started %d times", i, n)
		}
	}
	if maxRunning < 1 || maxRunning > 3 {
		t.Errorf("%d cells ran at once, want 1..3", maxRunning)
	}
	for _, f := range sum.Failures {
		data, err := os.ReadFile(failedPath(dir, f.Cell))
		var cf CellFile
		if err != nil || json.Unmarshal(data, &cf) != nil || cf.Error != f.Err || cf.SweepHash != sw.Hash {
			t.Errorf("cell %s's failure record: %v %s", f.Cell.ID, err, data)
		}
	}
}
