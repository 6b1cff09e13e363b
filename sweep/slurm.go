package sweep

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/scenario"
)

// Resources are what the largest cell needs, by the rule of
// docs/sweep.md: memory 512 MiB plus 16 KiB per NIC port (hosts ×
// planes), rounded up to 256 MiB; time 10 minutes plus a minute per
// 60,000 NIC ports per transport.
type Resources struct {
	Ports      int // NIC ports of the largest cell
	Transports int // transports of that cell
	MemMiB     int
	Minutes    int
}

// ResourcesFor applies the rule to a cell of ports NIC ports running
// transports transports.
func ResourcesFor(ports, transports int) Resources {
	mem := 512 + (ports+63)/64
	mem = (mem + 255) / 256 * 256
	minutes := 10 + (transports*ports+59_999)/60_000
	return Resources{Ports: ports, Transports: transports, MemMiB: mem, Minutes: minutes}
}

// Check checks every cell, before anything runs (the first cell's error
// is returned), and returns the resources the most demanding one needs.
func (sw *Sweep) Check() (Resources, error) {
	var r Resources
	for i := range sw.nCells {
		p, err := sw.Plan(sw.Cell(i), scenario.Overrides{Workers: 1})
		if err != nil {
			return r, err
		}
		c := ResourcesFor(p.Topology.Hosts*p.Topology.Planes, len(p.Runs))
		if c.Ports*c.Transports > r.Ports*r.Transports {
			r.Ports, r.Transports = c.Ports, c.Transports
		}
		r.MemMiB, r.Minutes = max(r.MemMiB, c.MemMiB), max(r.Minutes, c.Minutes)
	}
	return r, nil
}

// SlurmOptions say how the job array's tasks run.
type SlurmOptions struct {
	// Exe is the mrc binary, File the sweep file and Dir the output
	// directory, as the cluster's nodes see them (absolute paths).
	Exe, File, Dir string
	// Partition, Time (Slurm's format: minutes, H:MM:SS, D-HH) and Mem
	// (e.g. 4G) are passed to sbatch; "" leaves the partition to
	// Slurm and takes Time and Mem from Resources.
	Partition, Time, Mem string
	// CPUs per task: the cell's worker goroutines.
	CPUs int
	// MaxParallel bounds the tasks running at once (the array's %K); 0:
	// no bound.
	MaxParallel int
	Force       bool
}

// ScriptPath returns where Slurm writes the job script in dir.
func ScriptPath(dir string) string { return filepath.Join(dir, "sweep.sbatch") }

// Unfinished returns the indexes of the cells without a result in dir.
func (sw *Sweep) Unfinished(dir string) []int {
	var out []int
	for i := range sw.nCells {
		if !Finished(dir, sw.Cell(i)) {
			out = append(out, i)
		}
	}
	return out
}

// indexRanges writes ascending indexes as Slurm's array ranges:
// [0 1 2 5 7 8] → "0-2,5,7-8".
func indexRanges(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(idx[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// SlurmScript returns an sbatch script for a job array of one task per
// cell of cells (ascending indexes; nil: every cell): task i runs `mrc
// sweep cell FILE --out DIR --index i`. Each task's output goes to
// DIR/slurm/JOB_TASK.out.
func (sw *Sweep) SlurmScript(o SlurmOptions, r Resources, cells []int) string {
	array := fmt.Sprintf("0-%d", sw.nCells-1)
	if cells != nil {
		array = indexRanges(cells)
	}
	if o.MaxParallel > 0 {
		array += "%" + strconv.Itoa(o.MaxParallel)
	}
	mem, tm := o.Mem, o.Time
	if mem == "" {
		mem = strconv.Itoa(r.MemMiB) + "M"
	}
	if tm == "" {
		tm = fmt.Sprintf("%d:%02d:00", r.Minutes/60, r.Minutes%60)
	}
	var b strings.Builder
	n := sw.nCells
	if cells != nil {
		n = len(cells)
	}
	fmt.Fprintf(&b, "#!/bin/sh\n# mrc sweep %s: %d of the %d cells of %s (sweep hash %.12s), written by mrc sweep slurm.\n", sw.Name, n, sw.nCells, sw.File, sw.Hash)
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", shellWord("mrc-sweep-"+sw.Name))
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", array)
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", o.CPUs)
	fmt.Fprintf(&b, "#SBATCH --mem=%s\n", mem)
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", tm)
	if o.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(o.Dir, "slurm", "%A_%a.out"))
	force := ""
	if o.Force {
		force = " --force"
	}
	fmt.Fprintf(&b, "exec %s sweep cell %s --out %s --index \"$SLURM_ARRAY_TASK_ID\" --workers %d%s\n",
		shellWord(o.Exe), shellWord(o.File), shellWord(o.Dir), o.CPUs, force)
	return b.String()
}

// shellWord quotes s for sh when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteSlurmScript writes SlurmScript's script to ScriptPath(o.Dir)
// atomically, creates the directory of the tasks' output, and returns
// the script.
func (sw *Sweep) WriteSlurmScript(o SlurmOptions, r Resources, cells []int) (string, error) {
	script := sw.SlurmScript(o, r, cells)
	if err := os.MkdirAll(filepath.Join(o.Dir, "slurm"), 0o755); err != nil {
		return "", unwrap(err)
	}
	f, err := report.CreateFile(ScriptPath(o.Dir))
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(f, script); err != nil {
		f.Abort()
		return "", err
	}
	return script, f.Commit()
}

// Submit submits a job script with sbatch and returns the job's id. An
// sbatch missing from PATH, or refusing the job, is an error carrying
// the scheduler's message in one line.
func Submit(script string) (string, error) {
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		return "", errors.New("sbatch not found on PATH: is this a Slurm cluster's login node? (--dry-run writes the script without submitting it)")
	}
	var sout, serr strings.Builder
	cmd := exec.Command(sbatch, "--parsable", script)
	cmd.Stdout, cmd.Stderr = &sout, &serr
	if err := cmd.Run(); err != nil {
		msg := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(serr.String()), "\n", " ; ")), " ")
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New("sbatch refused the job: " + msg)
	}
	job, _, _ := strings.Cut(strings.TrimSpace(sout.String()), ";") // "ID" or "ID;CLUSTER"
	return job, nil
}

// SlurmJob is a job array PrepareSlurm wrote: its script, the cells it
// runs (nil: every cell) and what each task gets.
type SlurmJob struct {
	Script    string
	Cells     []int
	Resources Resources
	sw        *Sweep
	o         SlurmOptions
}

// PrepareSlurm writes the script of a job array for the cells of o.Dir
// that have no result yet, as Run would run them, and creates the
// directory of the tasks' output. o.File and o.Dir are made absolute:
// the tasks run on other nodes. It returns a nil job when every cell has
// its result.
func (sw *Sweep) PrepareSlurm(o SlurmOptions, r Resources) (*SlurmJob, error) {
	o.File, o.Dir = absPath(o.File), absPath(o.Dir)
	todo := sw.Unfinished(o.Dir)
	if len(todo) == 0 {
		return nil, nil
	}
	cells := todo
	if len(todo) == sw.nCells {
		cells = nil
	}
	script, err := sw.WriteSlurmScript(o, r, cells)
	if err != nil {
		return nil, err
	}
	return &SlurmJob{Script: script, Cells: cells, Resources: r, sw: sw, o: o}, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Summary says in one line what the job runs and what each task gets.
func (j *SlurmJob) Summary() string {
	sw, r := j.sw, j.Resources
	mem, tm := j.o.Mem, "time limit "+j.o.Time
	if mem == "" {
		mem = fmt.Sprintf("%d MiB", r.MemMiB)
	}
	if j.o.Time == "" {
		tm = fmt.Sprintf("%d min", r.Minutes)
	}
	what := fmt.Sprintf("%d cells", sw.nCells)
	if j.Cells != nil {
		what = fmt.Sprintf("%d of %d cells (the others have their results)", len(j.Cells), sw.nCells)
	}
	return fmt.Sprintf("%s: %s as a Slurm job array; each task %d CPU, %s memory, %s (the largest cell: %s NIC ports × %d transports; docs/sweep.md)",
		sw.Name, what, j.o.CPUs, mem, tm, report.Count(r.Ports), r.Transports)
}
