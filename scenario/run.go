package scenario

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/trace"
)

// RunOptions say how to run a plan and what to record besides the
// results.
type RunOptions struct {
	// Setup, when set, is called before transport i of n is set up;
	// Progress between windows of its run.
	Setup    func(i, n int, transport string)
	Progress func(i, n int, transport string, p sim.Progress)
	// Flows keeps the per-flow results in the report's JSON.
	Flows bool
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
// are *Errors, found before anything runs.
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

	// Create every output file now, so that a bad path fails before the
	// run rather than after it.
	type outputs struct {
		pcap  *pcapSink
		trace *traceSink
	}
	outs := make([]outputs, n)
	closeAll := func() {
		for _, x := range outs {
			if x.pcap != nil {
				x.pcap.f.Close()
			}
			if x.trace != nil {
				x.trace.f.Close()
			}
		}
	}
	for i, c := range p.Runs {
		if o.Pcap != "" {
			name := OutputFile(o.Pcap, c.Transport.Name, n)
			ps, err := newPcapSink(name, pfilter)
			if err != nil {
				closeAll()
				return nil, &Error{Msg: "--pcap: " + err.Error()}
			}
			outs[i].pcap = ps
		}
		if o.Trace != "" {
			name := OutputFile(o.Trace, c.Transport.Name, n)
			f, err := os.Create(name)
			if err != nil {
				closeAll()
				return nil, &Error{Msg: "--trace: " + openError(err)}
			}
			outs[i].trace = &traceSink{f: f, name: name, bw: bufio.NewWriterSize(f, 1<<20)}
			outs[i].trace.w = trace.NewJSONWriter(outs[i].trace.bw)
		}
	}

	var runErr error
	for i, c := range p.Runs {
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		name := c.Transport.Name
		if o.Setup != nil {
			o.Setup(i, n, name)
		}
		if o.Progress != nil {
			c.Progress = func(pr sim.Progress) { o.Progress(i, n, name, pr) }
		}
		if ps := outs[i].pcap; ps != nil {
			c.Taps, c.Capture = o.Capture, ps.capture
		}
		if ts := outs[i].trace; ts != nil {
			ts.hosts = make([]trace.Tracer, p.Topology.Hosts)
			c.Trace, c.TraceFilter = ts.record, tfilter
		}
		w, err := sim.New(c)
		if err != nil {
			closeAll()
			return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "sim: ")}
		}
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		res, err := w.Run(ctx)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", name, err)
			break
		}
		rep.Add(res, o.Flows)
		if res.Interrupted {
			break
		}
	}
	for i, x := range outs {
		if x.pcap != nil {
			if err := x.pcap.close(); err != nil && runErr == nil {
				runErr = err
			}
			if w := x.pcap.emptyWarning(o.PcapFilter); w != "" && o.Warn != nil && i < len(rep.Results) {
				o.Warn(w)
			}
		}
		if x.trace != nil {
			if err := x.trace.close(); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	rep.WallS = time.Since(start).Seconds()
	return rep, runErr
}

func isZeroFilter(f *trace.Filter) bool {
	return f.Kinds == 0 && f.QPNs == nil && f.From == 0 && f.To == 0 && f.EVs == nil && f.Planes == nil && f.Sample <= 1
}

// traceSink writes a run's trace records.
type traceSink struct {
	f     *os.File
	name  string
	bw    *bufio.Writer
	w     *trace.JSONWriter
	hosts []trace.Tracer // by host, made on first use
}

func (t *traceSink) record(host int, r *trace.Record) {
	h := t.hosts[host]
	if h == nil {
		h = t.w.Host("h" + strconv.Itoa(host))
		t.hosts[host] = h
	}
	h.Trace(r)
}

func (t *traceSink) close() error {
	err := t.w.Flush()
	if err == nil {
		err = t.bw.Flush()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", t.name, err)
	}
	return nil
}
