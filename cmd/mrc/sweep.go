package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

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

// interruptible returns a context cancelled by Ctrl-C or SIGTERM; a
// second Ctrl-C ends the process at once.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

func sweepRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep run", "FILE --out DIR [--jobs N]", stderr)
	out := fs.String("out", "", "write the cells' results to `DIR`/cells (required)")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "cells to run at once (default: the CPUs)")
	workers := fs.Int("workers", 0, "worker goroutines per cell (default: the CPUs divided by --jobs, at least 1)")
	force := fs.Bool("force", false, "allow a grid of more than 100,000 cells")
	progress := fs.String("progress", "auto", "progress on stderr: auto (when stderr is a terminal), on, off")
	pos, err := fs.parseInterleaved(args)
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
		*workers = sweep.DefaultWorkers(*jobs)
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
	ctx, stop := interruptible()
	defer stop()
	o := sweep.RunOptions{Jobs: *jobs, Command: func(c sweep.Cell) *exec.Cmd {
		return sw.CellCommand(exe, *out, c, *workers, *force)
	}}
	pp := sweep.NewProgressPrinter(stderr, isTerminal(stderr))
	if *progress == "on" || *progress == "auto" && isTerminal(stderr) {
		o.Progress = pp.Show
	}
	sum, err := sw.Run(ctx, *out, o)
	pp.Clear()
	sum.WriteText(stdout, sw, *out)
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
	pos, err := fs.parseInterleaved(args)
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
	pos, err := fs.parseInterleaved(args)
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
	if err := t.WriteFiles(dir); err != nil {
		return err
	}
	plots, err := t.WritePlot(dir, *metric, *x)
	if given := fs.given(); err != nil && (given["metric"] || given["x"]) {
		return usagef("%v", err)
	}
	t.WriteReport(stdout, dir, sweep.PlotOutcome{Metric: *metric, X: *x, Files: plots, Err: err}, *quiet)
	if t.Done() == 0 {
		return exitError{code: 1, msg: "no cell has finished"}
	}
	return nil
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
	pos, err := fs.parseInterleaved(args)
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
	job, err := sw.PrepareSlurm(sweep.SlurmOptions{Exe: exe, File: pos[0], Dir: *out, Partition: *partition, Time: *tm, Mem: *mem,
		CPUs: *cpus, MaxParallel: *maxParallel, Force: *force}, res)
	switch {
	case err != nil:
		return usagef("--out: %v", err)
	case job == nil:
		fmt.Fprintf(stdout, "%s: all %d cells have their results in %s: nothing to submit (mrc sweep collect %s)\n", sw.Name, sw.Len(), *out, *out)
		return nil
	}
	fmt.Fprintln(stdout, job.Summary())
	fmt.Fprintf(stdout, "wrote %s\n", sweep.ScriptPath(*out))
	if *dryRun {
		fmt.Fprint(stdout, job.Script)
		return nil
	}
	id, err := sweep.Submit(sweep.ScriptPath(*out))
	if err != nil {
		return exitError{code: 1, msg: err.Error()}
	}
	fmt.Fprintf(stdout, "submitted job %s: squeue -j %s shows it; then mrc sweep collect %s\n", id, id, *out)
	return nil
}
