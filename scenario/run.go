package scenario

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/trace/jsonl"
)

// RunOptions say how to run a plan and what to record besides the
// results.
type RunOptions struct {
	// Setup, when set, is called before transport i of n is set up;
	// Progress between windows of its run.
	Setup    func(i, n int, transport string)
	Progress func(i, n int, transport string, p sim.Progress)
	// Ready, when set, is called once the plan and the options have
	// been checked and before any output file is created: the caller
	// checks its own outputs there. Its error ends Run, with nothing
	// written.
	Ready func() error
	// Flows keeps the per-flow results in the report's JSON.
	Flows bool
	// Baseline runs each transport that meets failures a second time
	// without them and sets the two side by side (sim.Result.Baseline).
	Baseline bool
	// Pcap is a pcapng file to capture into at the points Capture names
	// (sim.Config.Taps; default the first flow), keeping the packets
	// PcapFilter selects (pcap.ParseFilter). Trace is a JSON-lines
	// trace file (package trace), with the records TraceFilter keeps
	// (trace.ParseFilter). With several transports each gets its own
	// file: FILE-TRANSPORT.EXT.
	Pcap, PcapFilter string
	Capture          []string
	Trace            string
	TraceFilter      string
	// Warn, when set, is called before Run returns for each capture
	// file that holds no packets (say, because PcapFilter matched
	// none), with a one-line message naming it and why.
	Warn func(msg string)
}

// runBaseline runs c without its failures and sets the comparison in
// res, the result of c.
func runBaseline(ctx context.Context, c sim.Config, res *sim.Result) error {
	c.Failures = nil
	w, err := sim.New(c)
	if err != nil {
		return err
	}
	base, err := w.Run(ctx)
	if err != nil {
		return err
	}
	if !base.Interrupted {
		res.Baseline = sim.CompareBaseline(res, base)
	}
	return nil
}

// OutputFile returns the file transport's output goes to when a run of
// n transports writes to path: path itself for one transport, else
// path with "-TRANSPORT" before its extension.
func OutputFile(path, transport string, n int) string {
	if n <= 1 {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + transport + ext
}

// Run runs the plan once per transport, in order, and gathers the
// results. When ctx is cancelled it stops the run in progress and
// returns what it has, with Report.Interrupted set. Problems with the
// options (a bad filter, an unwritable file, an unknown capture point)
// are *Errors, found before any output file is created. The pcap and
// trace files are written under temporary names and replace the named
// files only when Run returns a report (also an interrupted one), so
// that a run that fails leaves earlier files as they were.
func Run(ctx context.Context, p *Plan, o RunOptions) (*report.Report, error) {
	start := time.Now()
	s := p.Scenario
	rep := &report.Report{Scenario: s.Name, Description: s.Description, File: s.File(), Seed: p.Seed,
		Fabric: p.Fabric, Traffic: p.Traffic, FailureSchedule: p.Failures, Notes: s.Notes,
		Hosts: p.Topology.Hosts, Planes: p.Topology.Planes, Switches: len(p.Topology.Switches),
		Flows: len(p.Workload.Flows), Bytes: p.Workload.Bytes()}
	if rep.FailureSchedule == nil {
		rep.FailureSchedule = []string{}
	}
	n := len(p.Runs)

	var pfilter pcap.Filter
	var tfilter *trace.Filter
	if o.Pcap != "" {
		f, err := pcap.ParseFilter(o.PcapFilter)
		if err != nil {
			return nil, &Error{Msg: "--pcap-filter: " + strings.TrimPrefix(err.Error(), "pcap: ")}
		}
		pfilter = f
		if len(o.Capture) == 0 {
			o.Capture = []string{"flow:" + strconv.Itoa(p.Workload.Flows[0].ID)}
		}
	} else if o.PcapFilter != "" || len(o.Capture) > 0 {
		return nil, &Error{Msg: "--pcap-filter and --capture need --pcap FILE"}
	}
	if o.Trace != "" {
		f, err := trace.ParseFilter(o.TraceFilter)
		if err != nil {
			return nil, &Error{Msg: "--trace-filter: " + err.Error()}
		}
		if !isZeroFilter(&f) {
			tfilter = &f
		}
	} else if o.TraceFilter != "" {
		return nil, &Error{Msg: "--trace-filter needs --trace FILE"}
	}

	// Configure every run's sinks; the files come later.
	outs := make(sinks, n)
	runs := slices.Clone(p.Runs)
	for i := range runs {
		c := &runs[i]
		name := c.Transport.Name
		if o.Progress != nil {
			c.Progress = func(pr sim.Progress) { o.Progress(i, n, name, pr) }
		}
		if o.Pcap != "" {
			outs[i].pcap = &pcapSink{name: OutputFile(o.Pcap, name, n), filter: pfilter}
			c.Taps, c.Capture = o.Capture, outs[i].pcap.capture
		}
		if o.Trace != "" {
			outs[i].trace = &traceSink{name: OutputFile(o.Trace, name, n), hosts: make([]trace.Tracer, p.Topology.Hosts)}
			c.Trace, c.TraceFilter = outs[i].trace.record, tfilter
		}
	}
	// Everything is checked before any output file is created: the
	// first transport's world resolves the capture points and the
	// failures, then o.Ready checks the caller's outputs.
	if o.Setup != nil {
		o.Setup(0, n, runs[0].Transport.Name)
	}
	first, err := sim.New(runs[0])
	if err != nil {
		return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "sim: ")}
	}
	if o.Ready != nil {
		if err := o.Ready(); err != nil {
			return nil, err
		}
	}
	if err := outs.open(); err != nil {
		return nil, err
	}

	var runErr error
	for i, c := range runs {
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		w := first
		if i > 0 {
			if o.Setup != nil {
				o.Setup(i, n, c.Transport.Name)
			}
			if w, err = sim.New(c); err != nil {
				outs.abort()
				return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "sim: ")}
			}
		}
		first = nil // let the first world go once it has run
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		res, err := w.Run(ctx)
		if err == nil && o.Baseline && len(c.Failures) > 0 && !res.Interrupted {
			err = runBaseline(ctx, p.Runs[i], res)
		}
		if err != nil {
			runErr = fmt.Errorf("%s: %w", c.Transport.Name, err)
			break
		}
		rep.Add(res, o.Flows)
		if res.Interrupted {
			break
		}
	}
	if err := outs.commit(); err != nil && runErr == nil {
		runErr = err
	}
	for i, x := range outs {
		if w := x.pcap.emptyWarning(o.PcapFilter); w != "" && o.Warn != nil && i < len(rep.Results) {
			o.Warn(w)
		}
	}
	rep.WallS = time.Since(start).Seconds()
	return rep, runErr
}

// sinks are the capture and trace files of each run (nil where not
// asked for). Their files are written under temporary names and put in
// place by commit, so that a failure leaves earlier results alone.
type sinks []struct {
	pcap  *pcapSink
	trace *traceSink
}

// open creates every sink's temporary file; on an error it removes
// those it made.
func (ss sinks) open() error {
	for _, x := range ss {
		if x.pcap != nil {
			if err := x.pcap.open(); err != nil {
				ss.abort()
				return &Error{Msg: "--pcap: " + err.Error()}
			}
		}
		if x.trace != nil {
			if err := x.trace.open(); err != nil {
				ss.abort()
				return &Error{Msg: "--trace: " + err.Error()}
			}
		}
	}
	return nil
}

// abort removes every sink's temporary file.
func (ss sinks) abort() {
	for _, x := range ss {
		x.pcap.abort()
		x.trace.abort()
	}
}

// commit puts every sink's file in place and returns the first error.
func (ss sinks) commit() error {
	var first error
	for _, x := range ss {
		for _, err := range []error{x.pcap.commit(), x.trace.commit()} {
			if err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func isZeroFilter(f *trace.Filter) bool {
	return f.Kinds == 0 && f.QPNs == nil && f.From == 0 && f.To == 0 && f.EVs == nil && f.Planes == nil && f.Sample <= 1
}

// traceSink writes a run's trace records to its file.
type traceSink struct {
	name  string
	f     *report.File
	bw    *bufio.Writer
	w     *jsonl.Writer
	hosts []trace.Tracer // by host, made on first use
}

// open creates the sink's (temporary) file.
func (t *traceSink) open() error {
	f, err := report.CreateFile(t.name)
	if err != nil {
		return err
	}
	t.f, t.bw = f, bufio.NewWriterSize(f, 1<<20)
	t.w = jsonl.NewWriter(t.bw)
	return nil
}

func (t *traceSink) record(host int, r *trace.Record) {
	h := t.hosts[host]
	if h == nil {
		h = t.w.Host("h" + strconv.Itoa(host))
		t.hosts[host] = h
	}
	h.Trace(r)
}

// commit flushes the records and puts the file in place; a nil or
// unopened sink does nothing.
func (t *traceSink) commit() error {
	if t == nil || t.f == nil {
		return nil
	}
	err := t.w.Flush()
	if err == nil {
		err = t.bw.Flush()
	}
	if err != nil {
		t.f.Abort()
		return fmt.Errorf("writing %s: %w", t.name, err)
	}
	return t.f.Commit()
}

// abort removes the sink's temporary file, if any.
func (t *traceSink) abort() {
	if t != nil && t.f != nil {
		t.f.Abort()
	}
}
