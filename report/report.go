// Package report presents the results of `mrc sim`: one sim.Result per
// transport gathered into a Report, written as JSON (schema in
// docs/results.md), as a side-by-side text table, as CSV files and as
// plots (PNG and SVG, via gonum/plot).
package report

import (
	"encoding/json"
	"io"
	"slices"

	"github.com/openmrc/mrc/sim"
)

// Report is a scenario's results: what ran, and one Result per
// transport, in the order they ran.
type Report struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	// File is the scenario file ("preset NAME" for a preset).
	File string `json:"file"`
	Seed uint64 `json:"seed"`
	// Fabric, Traffic and FailureSchedule describe the run in words.
	Fabric          string   `json:"fabric"`
	Traffic         string   `json:"workload"`
	FailureSchedule []string `json:"failure_schedule"`
	Hosts           int      `json:"hosts"`
	Planes          int      `json:"planes"`
	Switches        int      `json:"switches"`
	Flows           int      `json:"flows"`
	Bytes           uint64   `json:"bytes"`
	// SimTimeNs is the longest run's simulated time, Events the events
	// of all runs, WallS the wall time of the whole command.
	SimTimeNs int64   `json:"sim_time_ns"`
	WallS     float64 `json:"wall_s"`
	Events    uint64  `json:"events"`
	// Interrupted is set when the run was stopped (Ctrl-C): the results
	// are partial, and transports that had not started are missing.
	Interrupted bool     `json:"interrupted"`
	Results     []Result `json:"results"`

	// Notes say what to look at (printed under the table, not in JSON).
	Notes string `json:"-"`
}

// Result is one transport's run: the simulator's result, plus per-tag
// statistics.
type Result struct {
	*sim.Result
	// Tags summarises the flows of each tag (e.g. "victim"), in order
	// of first appearance.
	Tags []TagStats `json:"tags"`
	// FailedDataPackets is how many data packets were sent into failed
	// elements (the sum of failures[].data_packets).
	FailedDataPackets uint64 `json:"failed_data_packets"`

	flows []sim.FlowResult // kept for CSV and plots when FlowResults is dropped from JSON
}

// TagStats summarises the flows of one tag.
type TagStats struct {
	Tag            string       `json:"tag"`
	Flows          int          `json:"flows"`
	FlowsCompleted int          `json:"flows_completed"`
	FCT            sim.FCTStats `json:"fct_ns"`
	CompletionNs   int64        `json:"completion_ns"`
}

// Add appends a transport's result. With flows false the per-flow
// results are left out of the JSON (they stay available to CSV and
// plots).
func (r *Report) Add(res *sim.Result, flows bool) {
	x := Result{Result: res, flows: res.FlowResults, Tags: tagStats(res.FlowResults)}
	for _, f := range res.Failures {
		x.FailedDataPackets += f.DataPackets
	}
	if !flows {
		cp := *res
		cp.FlowResults = nil
		x.Result = &cp
	}
	r.Results = append(r.Results, x)
	r.Events += res.Events
	r.SimTimeNs = max(r.SimTimeNs, res.SimTimeNs)
	r.Interrupted = r.Interrupted || res.Interrupted
}

// PerFlow returns the per-flow results of a transport's run.
func (x *Result) PerFlow() []sim.FlowResult { return x.flows }

// tagStats summarises flows by tag.
func tagStats(flows []sim.FlowResult) []TagStats {
	var out []TagStats
	idx := map[string]int{}
	fcts := map[string][]int64{}
	first := map[string]int64{}
	last := map[string]int64{}
	for _, f := range flows {
		if f.Tag == "" {
			continue
		}
		i, ok := idx[f.Tag]
		if !ok {
			i = len(out)
			idx[f.Tag] = i
			out = append(out, TagStats{Tag: f.Tag})
			first[f.Tag] = -1
		}
		t := &out[i]
		t.Flows++
		if f.StartNs >= 0 && (first[f.Tag] < 0 || f.StartNs < first[f.Tag]) {
			first[f.Tag] = f.StartNs
		}
		if f.FCTNs >= 0 && !f.Failed {
			t.FlowsCompleted++
			fcts[f.Tag] = append(fcts[f.Tag], f.FCTNs)
			last[f.Tag] = max(last[f.Tag], f.StartNs+max(f.FCTNs, f.RecvNs))
		}
	}
	for i := range out {
		t := &out[i]
		t.FCT = FCTStats(fcts[t.Tag])
		if t.FlowsCompleted > 0 {
			t.CompletionNs = last[t.Tag] - first[t.Tag]
		}
	}
	return out
}

// FCTStats summarises flow completion times (nearest-rank percentiles,
// as the simulator computes them).
func FCTStats(fcts []int64) sim.FCTStats {
	if len(fcts) == 0 {
		return sim.FCTStats{}
	}
	s := slices.Clone(fcts)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	pct := func(p float64) int64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return sim.FCTStats{Min: s[0], P50: pct(0.5), P99: pct(0.99), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}
