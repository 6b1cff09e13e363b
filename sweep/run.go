package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openmrc/mrc/scenario"
)

// ErrInterrupted ends a cell or a sweep that was stopped (Ctrl-C); an
// interrupted cell writes no result.
var ErrInterrupted = errors.New("interrupted")

// RunCell runs cell c in this process, with workers goroutines, and
// writes its result to dir/cells/ID.json atomically (a failure to
// dir/cells/ID.failed.json). Problems with the cell's scenario are
// *Errors. An interrupted run writes nothing and returns ErrInterrupted.
func (sw *Sweep) RunCell(ctx context.Context, dir string, c Cell, workers int) error {
	start := time.Now()
	plan, err := sw.Plan(c, scenario.Overrides{Workers: workers})
	if err != nil {
		sw.writeFailed(dir, c, err.Error())
		return err
	}
	rep, err := scenario.Run(ctx, plan, scenario.RunOptions{})
	if rep != nil && rep.Interrupted {
		return ErrInterrupted
	}
	if err != nil {
		sw.writeFailed(dir, c, err.Error())
		return err
	}
	rep.WallS = time.Since(start).Seconds()
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	cf := sw.cellFile(c)
	cf.Report = data
	if err := writeJSON(CellPath(dir, c), cf); err != nil {
		return err
	}
	os.Remove(failedPath(dir, c))
	return nil
}

// RunOptions say how Run runs the cells.
type RunOptions struct {
	// Jobs is how many cells run at once (at least 1).
	Jobs int
	// Command returns the process that runs cell c (mrc sweep cell).
	Command func(c Cell) *exec.Cmd
	// Progress, when set, is called when a cell starts or ends and at
	// least every second.
	Progress func(Status)
}

// Status is how far a sweep has got.
type Status struct {
	Total   int // cells in the grid
	Skipped int // finished before this run
	Done    int // finished by this run
	Running int
	Failed  int
	Elapsed time.Duration
}

// ETA estimates the time left from this run's pace; 0 when unknown.
func (s Status) ETA() time.Duration {
	ended := s.Done + s.Failed
	left := s.Total - s.Skipped - ended
	if ended == 0 || left <= 0 {
		return 0
	}
	return time.Duration(float64(s.Elapsed) / float64(ended) * float64(left))
}

// Summary is the outcome of Run.
type Summary struct {
	Status
	Failures []Failure // in cell order
}

// Failure is a cell that failed and why: the last line its process
// wrote on standard error.
type Failure struct {
	Cell Cell
	Err  string
}

// Run runs the sweep's unfinished cells in dir, o.Jobs at a time, each
// as its own process (o.Command). A failing cell does not stop the
// others: it is recorded (dir/cells/ID.failed.json) and listed in the
// summary. When ctx is cancelled Run stops starting cells, waits for
// the running ones (which are interrupted by the same signal) and
// returns ErrInterrupted with the summary so far.
func (sw *Sweep) Run(ctx context.Context, dir string, o RunOptions) (*Summary, error) {
	start := time.Now()
	var todo []Cell
	sum := &Summary{Status: Status{Total: sw.nCells}}
	for i := range sw.nCells {
		c := sw.Cell(i)
		if Finished(dir, c) {
			sum.Skipped++
			continue
		}
		todo = append(todo, c)
	}
	var mu sync.Mutex
	report := func() {
		if o.Progress != nil {
			st := sum.Status
			st.Elapsed = time.Since(start)
			o.Progress(st)
		}
	}
	cells := make(chan Cell)
	var wg sync.WaitGroup
	for range max(o.Jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range cells {
				mu.Lock()
				sum.Running++
				report()
				mu.Unlock()
				msg := sw.runProcess(ctx, o.Command(c))
				if msg == "" && !Finished(dir, c) {
					msg = "the cell's process ended without writing its result"
				}
				failed := msg != "" && ctx.Err() == nil // not an interrupted cell
				if failed {
					sw.writeFailed(dir, c, msg)
				}
				mu.Lock()
				sum.Running--
				switch {
				case msg == "":
					sum.Done++
				case failed:
					sum.Failed++
					sum.Failures = append(sum.Failures, Failure{Cell: c, Err: msg})
				}
				report()
				mu.Unlock()
			}
		}()
	}
	ticker := time.NewTicker(time.Second)
	stopTicker := make(chan struct{})
	defer func() { ticker.Stop(); close(stopTicker) }()
	go func() {
		for {
			select {
			case <-ticker.C:
				mu.Lock()
				report()
				mu.Unlock()
			case <-stopTicker:
				return
			}
		}
	}()
feed:
	for _, c := range todo {
		select {
		case cells <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(cells)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	sum.Elapsed = time.Since(start)
	slices.SortFunc(sum.Failures, func(a, b Failure) int { return a.Cell.Index - b.Cell.Index })
	if ctx.Err() != nil {
		return sum, ErrInterrupted
	}
	return sum, nil
}

// runProcess runs cmd and returns "" if it succeeded, else the last line
// of its standard error (without the "mrc sweep cell: " prefix), or how
// it ended.
func (sw *Sweep) runProcess(ctx context.Context, cmd *exec.Cmd) string {
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Signal(os.Interrupt)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	if err == nil {
		return ""
	}
	if line := lastLine(stderr.String()); line != "" {
		return strings.TrimPrefix(line, "mrc sweep cell: ")
	}
	return err.Error()
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf); n > 4096 {
		t.buf = append(t.buf[:0], t.buf[n-4096:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// ProgressLine says a status in one line: "12/16 cells done (4 before),
// 2 running, 1 failed, ETA 40 s".
func ProgressLine(s Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d cells done", s.Skipped+s.Done, s.Total)
	if s.Skipped > 0 {
		fmt.Fprintf(&b, " (%d before)", s.Skipped)
	}
	fmt.Fprintf(&b, ", %d running, %d failed", s.Running, s.Failed)
	if eta := s.ETA(); eta >= time.Second {
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	return b.String()
}
