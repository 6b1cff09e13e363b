package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/scenario"
	"github.com/openmrc/mrc/sweep"
)

const sweepUsage = `run|cell|collect|slurm ...

  mrc sweep run FILE --out DIR [--jobs N]      run the cells here, N at a time
  mrc sweep cell FILE --out DIR --index I      run one cell (what a Slurm task runs)
  mrc sweep collect DIR [--metric M --x AXIS]  merge the cells into a table and a plot
  mrc sweep slurm FILE --out DIR [--dry-run]   write and submit a Slurm job array

Sweep files and the commands: docs/sweep.md.`

// runSweep is `mrc sweep`: the logic lives in package sweep; this wires
// flags to it.
func runSweep(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: run, cell, collect or slurm (mrc sweep -h)")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stderr, "Usage: mrc sweep %s\n", sweepUsage)
		return errHelp
	}
	sub := map[string]func([]string, io.Writer, io.Writer) error{
		"run": sweepRun, "cell": sweepCell, "collect": sweepCollect, "slurm": sweepSlurm,
	}[args[0]]
	if sub == nil {
		return usagef("unknown subcommand %q: want run, cell, collect or slurm", args[0])
	}
	return sub(args[1:], stdout, stderr)
}

// parseAll parses flags that may come before or after the positional
// arguments, and returns the positional ones.
func parseAll(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// loadSweep reads the one sweep file of pos; its errors are usage
// errors.
func loadSweep(pos []string, force bool) (*sweep.Sweep, error) {
	if len(pos) != 1 {
		return nil, usagef("want one sweep file, got %d arguments", len(pos))
	}
	sw, err := sweep.Load(pos[0], sweep.Options{Force: force})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return sw, nil
}

// prepare checks every cell and readies the output directory.
func prepare(sw *sweep.Sweep, out string) error {
	if out == "" {
		return usagef("--out DIR is required: where the cells' results go")
	}
	if err := sw.Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := sw.Prepare(out); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func sweepRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep run", "FILE --out DIR [--jobs N]", stderr)
	out := fs.String("out", "", "write the cells' results to `DIR`/cells (required)")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "cells to run at once (default: the CPUs)")
	workers := fs.Int("workers", 0, "worker goroutines per cell (default: the CPUs divided by --jobs, at least 1)")
	force := fs.Bool("force", false, "allow a grid of more than 100,000 cells")
	progress := fs.String("progress", "auto", "progress on stderr: auto (when stderr is a terminal), on, off")
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *jobs < 1:
		return usagef("--jobs %d: want 1 or more", *jobs)
	case *workers < 0:
		return usagef("--workers %d: want 1 or more", *workers)
	case *progress != "auto" && *progress != "on" && *progress != "off":
		return usagef("--progress %q: want auto, on or off", *progress)
	}
	if *workers == 0 {
		*workers = max(1, runtime.GOMAXPROCS(0) / *jobs)
	}
	sw, err := loadSweep(pos, *force)
	if err != nil {
		return err
	}
	if err := prepare(sw, *out); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
	}()
	show := *progress == "on" || *progress == "auto" && isTerminal(stderr)
	shown := false
	var last time.Time
	o := sweep.RunOptions{Jobs: *jobs, Command: func(c sweep.Cell) *exec.Cmd {
		args := []string{"sweep", "cell", pos[0], "--out", *out, "--index", strconv.Itoa(c.Index), "--workers", strconv.Itoa(*workers)}
		if *force {
			args = append(args, "--force")
		}
		return exec.Command(exe, args...)
	}}
	if show {
		o.Progress = func(st sweep.Status) {
			every := 2 * time.Second
			if isTerminal(stderr) {
				every = 200 * time.Millisecond
			}
			if time.Since(last) < every && st.Running > 0 {
				return
			}
			last = time.Now()
			if isTerminal(stderr) {
				fmt.Fprint(stderr, "\r\033[K"+sweep.ProgressLine(st))
			} else {
				fmt.Fprintln(stderr, "progress: "+sweep.ProgressLine(st))
			}
			shown = true
		}
	}
	sum, err := sw.Run(ctx, *out, o)
	if shown && isTerminal(stderr) {
		fmt.Fprint(stderr, "\r\033[K")
	}
	fmt.Fprintf(stdout, "%s: %d cells: %d done (%d before this run), %d failed, in %s; results in %s\n",
		sw.Name, sum.Total, sum.Done+sum.Skipped, sum.Skipped, sum.Failed, sum.Elapsed.Round(10*time.Millisecond), *out)
	for _, f := range sum.Failures {
		fmt.Fprintf(stdout, "  failed: cell %s (%s): %s\n", f.Cell.ID, sw.Describe(f.Cell), f.Err)
	}
	switch {
	case errors.Is(err, sweep.ErrInterrupted):
		return exitError{code: 130, msg: "interrupted; run the same command again to resume"}
	case err != nil:
		return err
	case sum.Failed > 0:
		return exitError{code: 1, msg: fmt.Sprintf("%d of %d cells failed (listed above); a rerun retries them", sum.Failed, sum.Total)}
	}
	return nil
}

func sweepCell(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep cell", "FILE --out DIR --index I", stderr)
	out := fs.String("out", "", "write the cell's result to `DIR`/cells (required)")
	index := fs.Int("index", -1, "the cell's index, from 0 (Slurm: $SLURM_ARRAY_TASK_ID)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "worker goroutines (results do not depend on it)")
	force := fs.Bool("force", false, "allow a grid of more than 100,000 cells")
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	if *workers < 1 {
		return usagef("--workers %d: want 1 or more", *workers)
	}
	sw, err := loadSweep(pos, *force)
	if err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef("--out DIR is required: where the cell's result goes")
	case *index < 0 || *index >= sw.Len():
		return usagef("--index %d: want a cell from 0 to %d", *index, sw.Len()-1)
	}
	if err := sw.Prepare(*out); err != nil {
		return usagef("%v", err)
	}
	setMemoryLimit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := sw.Cell(*index)
	err = sw.RunCell(ctx, *out, c, *workers)
	var se *scenario.Error
	switch {
	case errors.Is(err, sweep.ErrInterrupted):
		return exitError{code: 130, msg: "interrupted; cell " + c.ID + " wrote no result"}
	case errors.As(err, &se):
		return usagef("%v", err)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "cell %s (%s): wrote %s\n", c.ID, sw.Describe(c), sweep.CellPath(*out, c))
	return nil
}

func sweepCollect(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep collect", "DIR [--metric M --x AXIS]", stderr)
	metric := fs.String("metric", "", "the metric to plot (default: the sweep file's plot.metric, else completion_ns)")
	x := fs.String("x", "", "the axis on the plot's x (default: the sweep file's plot.x, else the first axis other than seed and transports)")
	quiet := fs.Bool("quiet", false, "print only errors and the missing and failed cells")
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one output directory (the --out of mrc sweep run), got %d arguments", len(pos))
	}
	dir := pos[0]
	t, err := sweep.Collect(dir)
	if err != nil {
		return usagef("%v", err)
	}
	if *metric == "" {
		*metric = t.DefaultMetric()
	}
	if *x == "" {
		*x = t.DefaultX()
	}
	for _, w := range []struct {
		name  string
		write func(io.Writer) error
	}{{"results.csv", t.WriteCSV}, {"results.json", t.WriteJSON}} {
		f, err := report.CreateFile(filepath.Join(dir, w.name))
		if err != nil {
			return err
		}
		if err := w.write(f); err != nil {
			f.Abort()
			return err
		}
		if err := f.Commit(); err != nil {
			return err
		}
	}
	bp, err := t.BandPlot(*metric, *x)
	var plots []string
	if err == nil {
		plots, err = report.WriteFiles(filepath.Join(dir, "plots"), func(tmp string) ([]string, error) {
			return bp.Write(tmp, *metric+"-by-"+fileSafe(*x))
		})
	}
	if err != nil && (set(fs, "metric") || set(fs, "x")) {
		return usagef("%v", err)
	}
	done := t.Cells - len(t.Missing) - len(t.Failed)
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d of %d cells collected, %d rows: %s, %s\n", t.Sweep, done, t.Cells, len(t.Rows),
			filepath.Join(dir, "results.csv"), filepath.Join(dir, "results.json"))
		if len(plots) > 0 {
			fmt.Fprintf(stdout, "plot: %s by %s: %s\n", *metric, *x, strings.Join(plots, ", "))
		} else if err != nil {
			fmt.Fprintf(stdout, "no plot: %v\n", err)
		}
	}
	for _, f := range t.Failed {
		fmt.Fprintf(stdout, "  failed: cell %s: %s\n", f.Cell.ID, f.Err)
	}
	if n := len(t.Missing); n > 0 {
		fmt.Fprintf(stdout, "  missing: %d cells: %s\n", n, abbreviate(t.Missing, 20))
	}
	if done == 0 {
		return exitError{code: 1, msg: "no cell has finished"}
	}
	return nil
}

// set reports whether flag name was given.
func set(fs *flagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// abbreviate joins the first n items, then says how many more.
func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, " ")
	}
	return strings.Join(items[:n], " ") + fmt.Sprintf(" … (%d more)", len(items)-n)
}

// fileSafe makes an axis path fit a file name: failures[0].count →
// failures0.count.
func fileSafe(s string) string {
	return strings.NewReplacer("[", "", "]", "", "/", "_").Replace(s)
}

func sweepSlurm(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep slurm", "FILE --out DIR [--partition P --time T --mem M --cpus C --max-parallel K] [--dry-run]", stderr)
	out := fs.String("out", "", "the output `DIR`, on a file system the cluster's nodes share (required)")
	partition := fs.String("partition", "", "the Slurm partition (default: the cluster's)")
	tm := fs.String("time", "", "each task's time limit, in Slurm's format: minutes, H:MM:SS, D-HH (default: from the largest cell, docs/sweep.md)")
	mem := fs.String("mem", "", "each task's memory, e.g. 4G (default: from the largest cell, docs/sweep.md)")
	cpus := fs.Int("cpus", 1, "CPUs per task: the cell's worker goroutines")
	maxParallel := fs.Int("max-parallel", 0, "at most `K` tasks at once (the array's %K; default: no bound)")
	dryRun := fs.Bool("dry-run", false, "write the script and print it; do not submit it")
	force := fs.Bool("force", false, "allow a grid of more than 100,000 cells")
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *cpus < 1:
		return usagef("--cpus %d: want 1 or more", *cpus)
	case *maxParallel < 0:
		return usagef("--max-parallel %d: want 1 or more", *maxParallel)
	case *out == "":
		return usagef("--out DIR is required: where the cells' results go")
	}
	sw, err := loadSweep(pos, *force)
	if err != nil {
		return err
	}
	res, err := sw.Check()
	if err != nil {
		return usagef("%v", err)
	}
	if err := sw.Prepare(*out); err != nil {
		return usagef("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	o := sweep.SlurmOptions{Exe: exe, File: abs(pos[0]), Dir: abs(*out), Partition: *partition, Time: *tm, Mem: *mem,
		CPUs: *cpus, MaxParallel: *maxParallel, Force: *force}
	// Only the cells without a result, as mrc sweep run does.
	todo := sw.Unfinished(*out)
	if len(todo) == 0 {
		fmt.Fprintf(stdout, "%s: all %d cells have their results in %s: nothing to submit (mrc sweep collect %s)\n", sw.Name, sw.Len(), *out, *out)
		return nil
	}
	cells := todo
	if len(todo) == sw.Len() {
		cells = nil
	}
	script, err := sw.WriteSlurmScript(o, res, cells)
	if err != nil {
		return usagef("--out: %v", err)
	}
	memS, timeS := *mem, "time limit "+*tm
	if memS == "" {
		memS = fmt.Sprintf("%d MiB", res.MemMiB)
	}
	if *tm == "" {
		timeS = fmt.Sprintf("%d min", res.Minutes)
	}
	what := fmt.Sprintf("%d cells", sw.Len())
	if cells != nil {
		what = fmt.Sprintf("%d of %d cells (the others have their results)", len(cells), sw.Len())
	}
	fmt.Fprintf(stdout, "%s: %s as a Slurm job array; each task %d CPU, %s memory, %s (the largest cell: %s NIC ports × %d transports; docs/sweep.md)\n",
		sw.Name, what, *cpus, memS, timeS, report.Count(res.Ports), res.Transports)
	fmt.Fprintf(stdout, "wrote %s\n", sweep.ScriptPath(*out))
	if *dryRun {
		fmt.Fprint(stdout, script)
		return nil
	}
	job, err := sweep.Submit(sweep.ScriptPath(*out))
	if err != nil {
		return exitError{code: 1, msg: err.Error()}
	}
	fmt.Fprintf(stdout, "submitted job %s: squeue -j %s shows it; then mrc sweep collect %s\n", job, job, *out)
	return nil
}
