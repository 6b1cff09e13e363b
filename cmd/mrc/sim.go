package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/scenario"
	"github.com/openmrc/mrc/sim"
)

const simUsage = `[flags] [FILE.yaml]

Runs a scenario once per transport and prints the results side by side.
With no FILE, --preset, --tm or --workload it runs the default scenario. Scenario
files: docs/scenario.md; results: docs/results.md; the CLI: docs/cli.md.`

// runSim is `mrc sim`: scenario parsing, running and reporting live in
// packages scenario and report; this wires flags to them.
func runSim(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	fs := newFlagSet("sim", simUsage, stderr)
	list := fs.Bool("list", false, "list the built-in scenarios (presets) and exit")
	preset := fs.String("preset", "", "run the built-in scenario `NAME` (see --list)")
	show := fs.Bool("show", false, "print the scenario's YAML (a preset's, or the default) instead of running it")
	tm := fs.String("tm", "", "run htsim's connection matrix `FILE.cm` (with --topo, or on a generated leaf-spine)")
	topoFile := fs.String("topo", "", "htsim topology `FILE.topo`, with --tm")
	workloadFile := fs.String("workload", "", "run a training workload `FILE`: a SimAI .txt, or Chakra traces (a directory of NAME.RANK.et, their prefix or one of them), one iteration on a generated two-tier Clos of one host per GPU (docs/workloads.md)")
	gpusPerServer := fs.Int("gpus-per-server", 0, "with --workload: GPUs per server sharing its scale-up domain (default 8; 1 puts every collective on the fabric)")
	planes := fs.Int("planes", 1, "planes of the fabric, with --tm or --workload (htsim files describe one plane)")
	seed := fs.Uint64("seed", 0, "random seed (default: the scenario's, 1); a run is a function of the scenario and the seed")
	transports := fs.String("transports", "", "transports to compare, comma-separated `LIST` (default: the scenario's; built-in: "+strings.Join(builtinTransports(), ",")+"; all: every built-in)")
	stop := fs.Duration("stop", 0, "stop at this much simulated `TIME` (default: the scenario's duration, 1s)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "the most worker goroutines, used only where they are faster (results do not depend on it)")
	jsonOut := fs.String("json", "", "write the results as JSON to `FILE` (- for standard output; schema: docs/results.md)")
	flows := fs.Bool("flows", false, "include every flow's result in the JSON (flow_results)")
	baseline := fs.Bool("baseline", false, "run each transport that meets failures again without them, and report the goodput dip beside the capacity removed (docs/failures.md)")
	csvDir := fs.String("csv", "", "write CSV files of the results to `DIR`")
	plotDir := fs.String("plot", "", "write plots (PNG and SVG) to `DIR`")
	pcapOut := fs.String("pcap", "", "capture packets to a pcapng `FILE` (one per transport: FILE-TRANSPORT.pcapng when several)")
	capture := fs.String("capture", "", "capture `POINTS`, comma-separated: h3/p1 (a NIC port), t1-p0-2:5 (a switch port), t0-p0-1/t1-p0-3, flow:7 (default: the first flow)")
	pcapFilter := fs.String("pcap-filter", "", "keep only the packets that `FILTER` selects, e.g. 'op=data,nack plane=0' (docs/dump.md)")
	traceOut := fs.String("trace", "", "write the transports' JSON-lines trace to `FILE` (docs/trace.md)")
	traceFilter := fs.String("trace-filter", "", "keep only the trace records `FILTER` selects, e.g. 'kind=ev_state,nacked sample=100'")
	quiet := fs.Bool("quiet", false, "nothing on stderr but errors: no progress, no notes, no scenario notes under the table (the table still goes to standard output, unless the JSON does)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile, building the fabric included, to `FILE` (go tool pprof; docs/sim.md, \"Performance\")")
	memprofile := fs.String("memprofile", "", "write a heap profile to `FILE` when the run ends (allocations over the whole run)")
	progress := fs.String("progress", "auto", "progress on stderr: auto (when stderr is a terminal and the run takes more than 2 s), on, off")
	// Flags may follow the scenario file.
	pos, err := fs.parseInterleaved(args)
	if err != nil {
		return err
	}
	set := fs.given()

	if *list {
		if len(pos) > 0 || *preset != "" || *tm != "" || *workloadFile != "" {
			return usagef("--list takes no scenario")
		}
		return listPresets(stdout)
	}
	sources := 0
	for _, b := range []bool{len(pos) > 0, *preset != "", *tm != "", *workloadFile != ""} {
		if b {
			sources++
		}
	}
	switch {
	case len(pos) > 1:
		return usagef("want one scenario file, got %d arguments (%s)", len(pos), strings.Join(pos, " "))
	case sources > 1:
		return usagef("give one scenario: a FILE.yaml, --preset NAME, --tm FILE.cm or --workload FILE.txt")
	case *topoFile != "" && *tm == "":
		return usagef("--topo needs --tm FILE.cm")
	case set["planes"] && *tm == "" && *workloadFile == "":
		return usagef("--planes is for htsim inputs (--tm) and SimAI workloads (--workload); a scenario file sets topology.planes")
	case set["gpus-per-server"] && *workloadFile == "":
		return usagef("--gpus-per-server is for SimAI workloads (--workload); a scenario file sets workload.gpus_per_server")
	case *gpusPerServer < 0:
		return usagef("--gpus-per-server %d: want 1 or more", *gpusPerServer)
	case *planes < 1:
		return usagef("--planes %d: want 1 or more", *planes)
	case *workers < 1:
		return usagef("--workers %d: want 1 or more", *workers)
	case *stop < 0:
		return usagef("--stop %v: want a positive time", *stop)
	case *progress != "auto" && *progress != "on" && *progress != "off":
		return usagef("--progress %q: want auto, on or off", *progress)
	}

	var s *scenario.Scenario
	name := scenario.DefaultPreset
	switch {
	case len(pos) == 1:
		if *show {
			return usagef("--show prints a preset; %s is already a file", pos[0])
		}
		s, err = scenario.Load(pos[0])
	case *tm != "":
		if *show {
			return usagef("--show prints a preset, not htsim inputs")
		}
		s, err = scenario.FromHtsim(*tm, *topoFile, *planes)
	case *workloadFile != "":
		if *show {
			return usagef("--show prints a preset, not a SimAI workload")
		}
		s, err = scenario.FromWorkload(*workloadFile, *planes, *gpusPerServer)
	default:
		if *preset != "" {
			name = *preset
		}
		if *show {
			data, err := scenario.PresetFile(name)
			if err != nil {
				_, err = scenario.LoadPreset(name) // for its message
				return usagef("%v", err)
			}
			_, err = stdout.Write(data)
			return err
		}
		s, err = scenario.LoadPreset(name)
	}
	if err != nil {
		return usagef("%v", err)
	}

	o := scenario.Overrides{Workers: *workers, Duration: *stop}
	if set["seed"] {
		o.Seed = seed
	}
	if *transports != "" {
		for _, t := range strings.Split(*transports, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.Transports = append(o.Transports, t)
			}
		}
		if len(o.Transports) == 0 {
			return usagef("--transports %q: name at least one", *transports)
		}
	}
	// Outputs: the scenario's, overridden by flags.
	out := s.Outputs
	str := func(flag string, dst *string, v string) {
		if set[flag] {
			*dst = v
		}
	}
	str("json", &out.JSON, *jsonOut)
	str("csv", &out.CSV, *csvDir)
	str("plot", &out.Plot, *plotDir)
	str("pcap", &out.Pcap, *pcapOut)
	str("pcap-filter", &out.PcapFilter, *pcapFilter)
	str("trace", &out.Trace, *traceOut)
	str("trace-filter", &out.TraceFilter, *traceFilter)
	if set["capture"] {
		out.Capture = nil
		for _, c := range strings.Split(*capture, ",") {
			if c = strings.TrimSpace(c); c != "" {
				out.Capture = append(out.Capture, c)
			}
		}
	}
	if *flows {
		out.Flows = true
	}
	if out.Pcap == "-" || out.Trace == "-" {
		return usagef("--pcap and --trace write files, not standard output")
	}

	plan, err := s.Build(o)
	if err != nil {
		return usagef("%v", err)
	}

	// The outputs are checked once the scenario and the options are
	// (Ready), and written under temporary names that replace the named
	// files only when there are results: a run that fails leaves
	// earlier results as they were.
	var jsonFile *report.File
	// The CPU profile goes into memory from before the first fabric is
	// built, so that it covers the build too (a 131,072-GPU build once
	// took five minutes that a profile of the run alone did not show);
	// its file, like the heap profile's, is created once the run is ready.
	var cpuProf bytes.Buffer
	profiling := false
	stopCPU := func() {
		if profiling {
			pprof.StopCPUProfile()
			profiling = false
		}
	}
	defer stopCPU()
	noWrite := func() error { return nil }
	writeCPU, writeHeap := noWrite, noWrite
	defer func() {
		if jsonFile != nil {
			jsonFile.Abort()
		}
	}()
	ready := func() error {
		for _, d := range []struct{ flag, dir string }{{"--csv", out.CSV}, {"--plot", out.Plot}} {
			if d.dir != "" {
				if err := report.CheckDir(d.dir); err != nil {
					return usagef("%s: %v", d.flag, err)
				}
			}
		}
		if out.JSON != "" && out.JSON != "-" {
			if jsonFile, err = report.CreateFile(out.JSON); err != nil {
				return usagef("--json: %v", err)
			}
		}
		heap, err := profileFile("--memprofile", *memprofile, func(w io.Writer) error {
			runtime.GC() // a profile shows the heap as of the last collection: make it the end of the run
			return pprof.WriteHeapProfile(w)
		})
		if err != nil {
			return err
		}
		cpu, err := profileFile("--cpuprofile", *cpuprofile, func(w io.Writer) error {
			_, err := w.Write(cpuProf.Bytes())
			return err
		})
		if err != nil {
			return err
		}
		writeCPU, writeHeap = cpu, heap
		return nil
	}

	setMemoryLimit()
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-ctx.Done()
		stopSignals() // a second Ctrl-C ends the process at once
	}()

	showProgress := *progress == "on" || *progress == "auto" && !*quiet && isTerminal(stderr)
	pg := &progressLine{w: stderr, on: showProgress, start: start, always: *progress == "on"}
	opts := scenario.RunOptions{Flows: out.Flows, Baseline: *baseline, Pcap: out.Pcap, PcapFilter: out.PcapFilter, Capture: out.Capture,
		Trace: out.Trace, TraceFilter: out.TraceFilter, Setup: pg.setup, Progress: pg.update, Ready: ready}
	opts.Warn = func(msg string) {
		if !*quiet {
			pg.clear()
			fmt.Fprintln(stderr, "warning: "+msg)
		}
	}
	if *cpuprofile != "" {
		if err := pprof.StartCPUProfile(&cpuProf); err != nil {
			return usagef("--cpuprofile: %v", err)
		}
		profiling = true
	}
	rep, err := scenario.Run(ctx, plan, opts)
	stopCPU()
	pg.clear()
	for _, write := range []func() error{writeCPU, writeHeap} {
		if perr := write(); perr != nil && err == nil {
			err = perr
		}
	}
	var ue usageError
	if errors.As(err, &ue) {
		return err
	}
	var se *scenario.Error
	if errors.As(err, &se) {
		return usagef("%v", err)
	}
	if rep == nil {
		return err
	}
	runErr := err
	rep.WallS = time.Since(start).Seconds()

	// Results: JSON, CSV, plots, then the table.
	note := func(format string, args ...any) {
		if !*quiet {
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	tableOut := stdout
	if out.JSON == "-" {
		tableOut = stderr
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
	} else if jsonFile != nil {
		bw := bufio.NewWriter(jsonFile)
		if err := rep.WriteJSON(bw); err != nil {
			return fmt.Errorf("writing %s: %v", out.JSON, err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing %s: %v", out.JSON, err)
		}
		if err := jsonFile.Commit(); err != nil {
			return err
		}
		note("wrote %s", out.JSON)
	}
	if out.CSV != "" {
		files, err := report.WriteFiles(out.CSV, rep.WriteCSV)
		if err != nil {
			return err
		}
		note("wrote %d CSV files to %s", len(files), out.CSV)
	}
	if out.Plot != "" {
		files, err := report.WriteFiles(out.Plot, rep.WritePlots)
		if err != nil {
			return err
		}
		note("wrote %d plots to %s (%s)", len(files), out.Plot, baseNames(files))
	}
	if out.Pcap != "" {
		for _, r := range rep.Results {
			note("wrote %s", scenario.OutputFile(out.Pcap, r.Transport, len(plan.Runs)))
		}
	}
	if out.Trace != "" {
		for _, r := range rep.Results {
			note("wrote %s", scenario.OutputFile(out.Trace, r.Transport, len(plan.Runs)))
		}
	}
	if *quiet {
		rep.Notes = "" // the scenario's explanations; the table's own footnotes stay
	}
	if tableOut == stdout || !*quiet {
		if err := rep.WriteTable(tableOut); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if rep.Interrupted {
		msg := "interrupted before the first run started; no results"
		if n := len(rep.Results); n > 0 {
			last := rep.Results[n-1]
			msg = fmt.Sprintf("interrupted: %s stopped after %s of simulated time; the results are partial", last.Transport, report.Duration(last.SimTimeNs))
		}
		return exitError{code: 130, msg: msg}
	}
	return nil
}

func builtinTransports() []string {
	var names []string
	for _, t := range sim.Transports() {
		names = append(names, t.Name)
	}
	return names
}

func listPresets(w io.Writer) error {
	ps := scenario.Presets()
	width := 0
	for _, p := range ps {
		width = max(width, len(p.Name))
	}
	fmt.Fprintln(w, "Built-in scenarios (mrc sim --preset NAME; mrc sim --preset NAME --show prints one as YAML):")
	for _, p := range ps {
		mark := " "
		if p.Name == scenario.DefaultPreset {
			mark = "*"
		}
		fmt.Fprintf(w, " %s %-*s  %s\n", mark, width, p.Name, p.Description)
	}
	fmt.Fprintln(w, "* runs with no arguments")
	return nil
}

func baseNames(files []string) string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	return strings.Join(out, ", ")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// setMemoryLimit tunes the collector for a simulation unless the user set
// GOGC or GOMEMLIMIT: a soft memory limit of 60% of the machine's (or the
// cgroup's) memory, since by default the heap may grow to twice the live
// heap, which the largest fabrics cannot afford (docs/sim.md); and GOGC 50.
func setMemoryLimit() {
	// The simulator's heap is mostly long-lived state (QPs, queues) plus
	// short-lived packet bookkeeping: collecting at 50% growth instead of
	// 100% costs no wall time on htsim's 1024-node permutation and cuts
	// its RSS from 86 to 69 MB.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	total := memTotal()
	if total <= 0 {
		return
	}
	debug.SetMemoryLimit(total / 10 * 6)
}

// memTotal returns the memory available to the process in bytes, or 0.
func memTotal() int64 {
	var total int64
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				total = kb << 10
			}
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if data, err := os.ReadFile(f); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
				total = v
			}
		}
	}
	return total
}

// progressLine keeps one line of progress on stderr: the transport,
// simulated time, share of the bytes delivered, events per second and an
// estimate of the time left for this transport.
type progressLine struct {
	w      io.Writer
	on     bool
	always bool // --progress on: from the start, even if not a terminal
	start  time.Time

	runStart time.Time
	last     time.Time
	shown    bool
}

func (p *progressLine) setup(i, n int, transport string) {
	p.runStart = time.Now()
	if p.on {
		p.print(fmt.Sprintf("%s (%d/%d): setting up", transport, i+1, n))
	}
}

func (p *progressLine) update(i, n int, transport string, pr sim.Progress) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 250*time.Millisecond || !p.always && now.Sub(p.start) < 2*time.Second {
		return
	}
	p.last = now
	el := now.Sub(p.runStart).Seconds()
	frac := 0.0
	if pr.Bytes > 0 {
		frac = min(float64(pr.Delivered)/float64(pr.Bytes), 1)
	}
	eta := "?"
	if frac > 0.01 && frac < 1 {
		eta = fmt.Sprintf("%.0f s", el*(1-frac)/frac)
	}
	p.print(fmt.Sprintf("%s (%d/%d): %s simulated, %.0f%% of the bytes, %s/%s flows done, %.1f M events/s, ETA %s",
		transport, i+1, n, report.Dur(pr.Now), 100*frac, report.Count(pr.FlowsDone), report.Count(pr.Flows),
		float64(pr.Events)/max(el, 1e-3)/1e6, eta))
}

func (p *progressLine) print(s string) {
	if p.always && !isTerminal(p.w) {
		fmt.Fprintln(p.w, "progress: "+s)
	} else {
		fmt.Fprint(p.w, "\r\033[K"+s)
	}
	p.shown = true
}

func (p *progressLine) clear() {
	if p.shown && isTerminal(p.w) {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// profileFile creates file, if one is named, for the profile of flag
// that write writes when the returned function is called (once the run is
// over).
func profileFile(flag, file string, write func(io.Writer) error) (func() error, error) {
	if file == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return func() error {
		err := write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %v", flag, err)
		}
		return nil
	}, nil
}
