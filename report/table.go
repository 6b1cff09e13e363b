package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/openmrc/mrc/sim"
)

// WriteTable writes the header, the side-by-side table of the
// transports' results and the notes: what `mrc sim` prints.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mrc sim: %s (seed %d)", r.Scenario, r.Seed)
	if r.Description != "" {
		fmt.Fprintf(&b, ": %s", r.Description)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  fabric    %s\n", r.Fabric)
	fmt.Fprintf(&b, "  workload  %s\n", r.Traffic)
	if len(r.FailureSchedule) == 0 {
		b.WriteString("  failures  none\n")
	}
	for i, f := range r.FailureSchedule {
		label := "failures"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "  %-8s  %s\n", label, f)
	}
	b.WriteString("\n")
	if len(r.Results) == 0 {
		b.WriteString("no results: the run was interrupted before the first transport finished setting up\n")
		_, err := io.WriteString(w, b.String())
		return err
	}

	type row struct {
		label string
		cells []string
	}
	var rows []row
	add := func(label string, f func(x *Result) string) {
		rw := row{label: label}
		for i := range r.Results {
			rw.cells = append(rw.cells, f(&r.Results[i]))
		}
		rows = append(rows, rw)
	}
	incomplete := func(x *Result) bool { return x.FlowsCompleted < x.Flows }
	star := func(x *Result) string {
		if incomplete(x) && x.FlowsCompleted > 0 {
			return "*"
		}
		return ""
	}
	anyStar := false
	add("flows completed", func(x *Result) string {
		s := Count(x.FlowsCompleted) + "/" + Count(x.Flows)
		if x.FlowsFailed > 0 {
			s += fmt.Sprintf(" (%s failed)", Count(x.FlowsFailed))
		}
		return s
	})
	if r.anyStopped() {
		add("stopped by", func(x *Result) string { return stoppedBy(x) })
	}
	add("completion time", func(x *Result) string {
		if incomplete(x) {
			return "not done"
		}
		return Duration(x.CompletionNs)
	})
	add("FCT p50", func(x *Result) string {
		if x.FlowsCompleted == 0 {
			return "—"
		}
		anyStar = anyStar || star(x) != ""
		return Duration(x.FCT.P50) + star(x)
	})
	add("FCT p99", func(x *Result) string {
		if x.FlowsCompleted == 0 {
			return "—"
		}
		return Duration(x.FCT.P99) + star(x)
	})
	add("goodput, % of ideal", func(x *Result) string {
		if incomplete(x) || x.GoodputFractionOfIdeal == 0 {
			return "—"
		}
		return percent(x.GoodputFractionOfIdeal)
	})
	r.jobRows(add)
	add("retransmits", func(x *Result) string { return Count(x.Retransmits) })
	add("trims", func(x *Result) string { return Count(x.Trims) })
	add("drops", func(x *Result) string {
		var n uint64
		for _, v := range x.Drops {
			n += v
		}
		return Count(n)
	})
	hasFailures := false
	for i := range r.Results {
		hasFailures = hasFailures || r.Results[i].BypassNs != nil
	}
	if hasFailures {
		add("bypass time", func(x *Result) string {
			if x.BypassNs == nil {
				return "—"
			}
			return Duration(*x.BypassNs)
		})
		add("bypass p50 / p99 per QP", func(x *Result) string {
			if b := x.BypassQP; b != nil && b.QPs > 0 {
				return Duration(b.P50) + " / " + Duration(b.P99)
			}
			return "—"
		})
		add("QP reaction p50 / p99", func(x *Result) string {
			if b := x.BypassQP; b != nil && b.QPs > 0 {
				return Duration(b.ReactP50) + " / " + Duration(b.ReactP99)
			}
			return "—"
		})
		add("data pkts into failures", func(x *Result) string { return Count(x.FailedDataPackets) })
		add("ACK bypass time", func(x *Result) string {
			if controlPackets(x) == 0 {
				return "—"
			}
			return Duration(controlBypass(x))
		})
		add("ACK pkts into failures", func(x *Result) string { return Count(controlPackets(x)) })
		addCapacityRows(r, add)
	}
	// Tagged flows (a victim, the parts of a mixed workload).
	tags := map[string]bool{}
	var tagOrder []string
	for i := range r.Results {
		for _, t := range r.Results[i].Tags {
			if !tags[t.Tag] {
				tags[t.Tag] = true
				tagOrder = append(tagOrder, t.Tag)
			}
		}
	}
	if len(tagOrder) > 1 || len(tagOrder) == 1 && r.Results[0].Tags[0].Flows < r.Results[0].Flows {
		for _, tag := range tagOrder {
			add(tag+" FCT p99", func(x *Result) string {
				for _, t := range x.Tags {
					if t.Tag == tag {
						if t.FlowsCompleted < t.Flows {
							return Count(t.FlowsCompleted) + "/" + Count(t.Flows) + " done"
						}
						return Duration(t.FCT.P99)
					}
				}
				return "—"
			})
		}
	}
	add("simulated / wall time", func(x *Result) string {
		return fmt.Sprintf("%s / %.1f s", Duration(x.SimTimeNs), x.WallS)
	})

	width := 0
	for _, rw := range rows {
		width = max(width, utf8.RuneCountInString(rw.label))
	}
	cols := make([]int, len(r.Results))
	for i := range r.Results {
		cols[i] = utf8.RuneCountInString(r.Results[i].Transport)
		for _, rw := range rows {
			cols[i] = max(cols[i], utf8.RuneCountInString(rw.cells[i]))
		}
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0)) }
	head := pad("", width)
	for i := range r.Results {
		head += "  " + pad(r.Results[i].Transport, cols[i])
	}
	b.WriteString(strings.TrimRight(head, " ") + "\n")
	for _, rw := range rows {
		line := pad(rw.label, width)
		for i, c := range rw.cells {
			line += "  " + pad(c, cols[i])
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if anyStar {
		b.WriteString("* over the flows that completed\n")
	}
	r.writeCollectives(&b)
	if s := r.stopNote(); s != "" {
		b.WriteString("\n" + s)
	}
	if r.Interrupted {
		fmt.Fprintf(&b, "\nINTERRUPTED: partial results (%d of the transports ran, the last one cut short).\n", len(r.Results))
	}
	if s := r.verdict(); s != "" {
		b.WriteString("\n" + s)
	}
	if r.Notes != "" {
		b.WriteString("\n" + strings.TrimRight(r.Notes, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdict compares the first transport with the others, in facts.
func (r *Report) verdict() string {
	if len(r.Results) < 2 || r.Interrupted {
		return ""
	}
	a := &r.Results[0]
	if a.FlowsCompleted < a.Flows {
		return ""
	}
	var parts []string
	for i := 1; i < len(r.Results); i++ {
		x := &r.Results[i]
		switch {
		case x.FlowsCompleted < x.Flows:
			s := fmt.Sprintf("%s did not finish (%s of %s flows done", x.Transport, Count(x.FlowsCompleted), Count(x.Flows))
			if x.FlowsFailed > 0 {
				s += fmt.Sprintf(", %s failed when their QPs gave up", Count(x.FlowsFailed))
			}
			parts = append(parts, s+")")
		case x.CompletionNs > 0 && a.CompletionNs > 0:
			parts = append(parts, compare(float64(x.CompletionNs)/float64(a.CompletionNs), x.Transport))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s finished in %s: %s.\n", a.Transport, Duration(a.CompletionNs), strings.Join(parts, "; "))
}

// compare says how a transport that took ratio times the first one's
// completion time compares with it: "1.4× as fast as roce", "3.2% faster
// than uec", "as fast as uec", "0.5% slower than uec".
func compare(ratio float64, other string) string {
	switch {
	case ratio >= 1.1:
		return fmt.Sprintf("%s× as fast as %s", sig3(ratio), other)
	case ratio > 1.0005:
		return fmt.Sprintf("%s faster than %s", percent(ratio-1), other)
	case ratio >= 1/1.0005:
		return "as fast as " + other
	case ratio > 1/1.1:
		return fmt.Sprintf("%s slower than %s", percent(1/ratio-1), other)
	}
	return fmt.Sprintf("%s× as slow as %s", sig3(1/ratio), other)
}

// percent formats a fraction as a percentage with two significant
// digits below 10%: "73%", "4.2%", "0.09%".
func percent(f float64) string {
	switch v := 100 * f; {
	case v >= 10:
		return fmt.Sprintf("%.0f%%", v)
	case v >= 1:
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.2g%%", 100*f)
}

// anyStopped reports whether a transport's run stopped before its flows
// were done: at the duration limit, idle or interrupted.
func (r *Report) anyStopped() bool {
	for i := range r.Results {
		if x := &r.Results[i]; x.StoppedBy != "" && x.StoppedBy != sim.StoppedDone {
			return true
		}
	}
	return false
}

// stoppedBy is the "stopped by" cell: why the transport's run ended
// ("last flow": the last flow completed or failed).
func stoppedBy(x *Result) string {
	switch x.StoppedBy {
	case sim.StoppedDone:
		return "last flow"
	case sim.StoppedDuration:
		return Duration(x.SimTimeNs) + " limit"
	case sim.StoppedIdle:
		return "nothing to do"
	case sim.StoppedInterrupted:
		return "Ctrl-C"
	}
	return "—"
}

// stopNote says which transports hit the duration limit or ran out of
// events with flows unfinished, so that nobody reads their numbers as
// those of a finished run.
func (r *Report) stopNote() string {
	var b strings.Builder
	for i := range r.Results {
		x := &r.Results[i]
		left := x.Flows - x.FlowsCompleted - x.FlowsFailed
		switch x.StoppedBy {
		case sim.StoppedDuration:
			fmt.Fprintf(&b, "%s hit the %s duration limit with %s of %s flows unfinished: its numbers cover that time only",
				x.Transport, Duration(x.SimTimeNs), Count(left), Count(x.Flows))
			if c := x.CapacityRemoved; c != nil && c.FlowsCutOff > 0 {
				fmt.Fprintf(&b, ". %s of them had no path left when it stopped: the failures had cut their hosts off from each other in every plane, and a longer run finishes them only if a failed part comes back.\n", Count(c.FlowsCutOff))
			} else {
				b.WriteString(" (a longer --stop or duration runs it further).\n")
			}
		case sim.StoppedIdle:
			fmt.Fprintf(&b, "%s stopped at %s with %s of %s flows unfinished and nothing left to simulate (flows waiting for a trigger that never fired).\n",
				x.Transport, Duration(x.SimTimeNs), Count(left), Count(x.Flows))
		}
	}
	return b.String()
}

// controlBypass is the longest time a failed element went on taking the
// transport's control packets (ACKs, SACKs, NACKs, CNPs); controlPackets
// how many it took in all.
func controlBypass(x *Result) int64 {
	var worst int64
	for _, f := range x.Failures {
		worst = max(worst, f.ControlBypassNs)
	}
	return worst
}

func controlPackets(x *Result) uint64 {
	var n uint64
	for _, f := range x.Failures {
		n += f.ControlPackets
	}
	return n
}

// addCapacityRows adds what the failures removed and, from a baseline
// run, the goodput dip beside it (docs/failures.md).
func addCapacityRows(r *Report, add func(string, func(*Result) string)) {
	add("capacity removed: fabric / T0–T1", func(x *Result) string {
		c := x.CapacityRemoved
		if c == nil {
			return "—"
		}
		return percent(c.Fabric) + " / " + percent(c.ByClass["t0_t1"])
	})
	add("capacity removed: flows mean / max", func(x *Result) string {
		c := x.CapacityRemoved
		if c == nil || c.Flows == nil {
			return "—"
		}
		return percent(*c.Flows) + " / " + percent(*c.FlowsMax)
	})
	add("hosts hit, worst host's loss", func(x *Result) string {
		c := x.CapacityRemoved
		if c == nil {
			return "—"
		}
		return Count(uint64(c.HostsHit)) + ", " + percent(c.HostsMax)
	})
	baseline := false
	for i := range r.Results {
		baseline = baseline || r.Results[i].Baseline != nil
	}
	if !baseline {
		return
	}
	add("completion without failures", func(x *Result) string {
		if b := x.Baseline; b != nil {
			return Duration(b.CompletionNs)
		}
		return "—"
	})
	if r.hasJob() {
		add("step time mean without failures", func(x *Result) string {
			if b := x.Baseline; b != nil && len(b.StepNs) > 0 {
				return Duration(int64(b.StepMeanNs)) + " (" + stepList(b.StepNs) + ")"
			}
			return "—"
		})
	}
	add("goodput dip: window / step", func(x *Result) string {
		if b := x.Baseline; b != nil {
			return percent(b.GoodputDip) + " / " + percent(b.StepDip)
		}
		return "—"
	})
	add("step dip the capacity allows", func(x *Result) string {
		if b := x.Baseline; b != nil {
			if b.BoundNs == 0 {
				return percent(b.BoundDip) + " (a flow lost every path)"
			}
			return percent(b.BoundDip) + " (by " + Duration(b.BoundNs) + ")"
		}
		return "—"
	})
	add("flows over capacity bound", func(x *Result) string {
		if b := x.Baseline; b != nil {
			s := Count(uint64(b.FlowsOverBound))
			if b.FlowsOverBound > 0 {
				s += " (worst +" + Duration(b.WorstOverNs) + ")"
			}
			return s
		}
		return "—"
	})
}
