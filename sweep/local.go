package sweep

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"time"
)

// DefaultWorkers returns the worker goroutines each cell gets when jobs
// cells run at once: the CPUs shared out, at least 1.
func DefaultWorkers(jobs int) int { return max(1, runtime.GOMAXPROCS(0)/max(jobs, 1)) }

// CellCommand returns the process that runs cell c into dir: the mrc
// binary exe as `mrc sweep cell FILE --out DIR --index I --workers W`
// (with --force when the grid needed it). It is what Run's processes
// are made of.
func (sw *Sweep) CellCommand(exe, dir string, c Cell, workers int, force bool) *exec.Cmd {
	args := []string{"sweep", "cell", sw.File, "--out", dir, "--index", strconv.Itoa(c.Index), "--workers", strconv.Itoa(workers)}
	if force {
		args = append(args, "--force")
	}
	return exec.Command(exe, args...)
}

// ProgressPrinter shows a run's Status as ProgressLine on w: on a
// terminal in place, at most every 200 ms; elsewhere as "progress: "
// lines, at most every 2 s. A status with no cell running is always
// shown. Its Show is a RunOptions.Progress.
type ProgressPrinter struct {
	w        io.Writer
	terminal bool
	last     time.Time
	shown    bool
}

// NewProgressPrinter returns a printer to w; terminal says w is one.
func NewProgressPrinter(w io.Writer, terminal bool) *ProgressPrinter {
	return &ProgressPrinter{w: w, terminal: terminal}
}

// Show prints st unless the last line is too recent.
func (p *ProgressPrinter) Show(st Status) {
	every := 2 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if time.Since(p.last) < every && st.Running > 0 {
		return
	}
	p.last = time.Now()
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K"+ProgressLine(st))
	} else {
		fmt.Fprintln(p.w, "progress: "+ProgressLine(st))
	}
	p.shown = true
}

// Clear wipes the line Show left on a terminal.
func (p *ProgressPrinter) Clear() {
	if p.shown && p.terminal {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// WriteText writes the outcome of running sw into dir: a line of counts,
// then a line for each failed cell.
func (s *Summary) WriteText(w io.Writer, sw *Sweep, dir string) {
	fmt.Fprintf(w, "%s: %d cells: %d done (%d before this run), %d failed, in %s; results in %s\n",
		sw.Name, s.Total, s.Done+s.Skipped, s.Skipped, s.Failed, s.Elapsed.Round(10*time.Millisecond), dir)
	for _, f := range s.Failures {
		fmt.Fprintf(w, "  failed: cell %s (%s): %s\n", f.Cell.ID, sw.Describe(f.Cell), f.Err)
	}
}
