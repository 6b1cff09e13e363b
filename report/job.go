package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/openmrc/mrc/sim/job"
)

// hasJob reports whether any result is a training job's.
func (r *Report) hasJob() bool {
	for i := range r.Results {
		if r.Results[i].Job != nil {
			return true
		}
	}
	return false
}

// jobRows adds a training job's rows to the table: step time, the split
// of a step into compute and exposed communication, GPU idle time.
func (r *Report) jobRows(add func(label string, f func(x *Result) string)) {
	if !r.hasJob() {
		return
	}
	jr := func(f func(j *job.Result) string) func(x *Result) string {
		return func(x *Result) string {
			if x.Job == nil || x.Job.StepsDone == 0 {
				return "—"
			}
			return f(x.Job)
		}
	}
	add("steps done", func(x *Result) string {
		if x.Job == nil {
			return "—"
		}
		return Count(x.Job.StepsDone) + "/" + Count(x.Job.Steps)
	})
	add("step time mean / p99", jr(func(j *job.Result) string {
		return Duration(int64(j.StepMeanNs)) + " / " + Duration(j.StepP99Ns)
	}))
	add("step times", jr(func(j *job.Result) string { return stepList(j.StepNs) }))
	add("compute / exposed comm", jr(func(j *job.Result) string {
		return percent(j.ComputeFraction) + " / " + percent(j.ExposedCommFraction)
	}))
	add("GPU idle", jr(func(j *job.Result) string { return percent(j.GPUIdleFraction) }))
	add("slowest step held up by", jr(func(j *job.Result) string {
		if s := j.Straggler; s != nil && s.Longest != "" {
			return fmt.Sprintf("rank %d: %s (%s)", s.Rank, s.Longest, Duration(s.LongestNs))
		} else if s != nil {
			return fmt.Sprintf("rank %d: %s", s.Rank, s.Last)
		}
		return "—"
	}))
	add("its last flow in", jr(func(j *job.Result) string {
		if s := j.Straggler; s != nil && s.Flow != 0 {
			t := fmt.Sprintf("flow %d, h%d→h%d at %s", s.Flow, s.FlowSrc, s.FlowDst, Duration(s.FlowRecvNs))
			if len(s.FlowFailures) > 0 {
				t += ", sent into " + strings.Join(s.FlowFailures, ", ")
			}
			return t
		}
		return "—"
	}))
	crit := func(f func(c *job.CriticalFlow) string) func(x *Result) string {
		return jr(func(j *job.Result) string {
			if s := j.Straggler; s != nil && s.Critical != nil {
				return f(s.Critical)
			}
			return "—"
		})
	}
	add("critical path's slowest flow", crit(func(c *job.CriticalFlow) string {
		t := fmt.Sprintf("flow %d, h%d→h%d, %s", c.Flow, c.Src, c.Dst, Duration(c.RecvNs-c.StartNs))
		if len(c.Failures) > 0 {
			t += ", sent into " + strings.Join(c.Failures, ", ")
		}
		return t
	}))
	add("its most congested link", crit(func(c *job.CriticalFlow) string {
		h := c.HotLink
		if h == nil {
			return "—"
		}
		t := fmt.Sprintf("%s: %s pkts waited %s in all", h.Link, Count(h.WaitedPackets), Duration(h.WaitedNs))
		if h.Trimmed+h.Dropped > 0 {
			t += fmt.Sprintf(", %s trimmed, %s dropped", Count(h.Trimmed), Count(h.Dropped))
		}
		return t
	}))
}

// stepList lists up to four step times, "…" for the rest.
func stepList(ns []int64) string {
	var parts []string
	for i, t := range ns {
		if i == 4 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, Duration(t))
	}
	return strings.Join(parts, ", ")
}

// maxCollectiveRows bounds the collectives listed under the table.
const maxCollectiveRows = 8

// writeCollectives lists the collectives that took the most time over
// the fabric (scale-up ones are left out), with each transport's mean
// time and bus bandwidth.
func (r *Report) writeCollectives(b *strings.Builder) {
	type key struct {
		name, op string
		ranks    int
		bytes    uint64
	}
	total := map[key]float64{}
	var keys []key
	for i := range r.Results {
		j := r.Results[i].Job
		if j == nil {
			continue
		}
		for _, c := range j.Collectives {
			if c.ScaleUp {
				continue
			}
			k := key{c.Name, c.Op, c.Ranks, c.Bytes}
			if _, ok := total[k]; !ok {
				keys = append(keys, k)
			}
			total[k] += c.MeanNs * float64(c.Count)
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.SortStableFunc(keys, func(a, b key) int { return cmp.Compare(total[b], total[a]) })
	if len(keys) > maxCollectiveRows {
		keys = keys[:maxCollectiveRows]
	}
	b.WriteString("\ncollectives over the fabric, most time first: mean time, bus bandwidth\n")
	for _, k := range keys {
		fmt.Fprintf(b, "  %s (%s, %d ranks, %s)\n", k.name, k.op, k.ranks, Bytes(k.bytes))
		for i := range r.Results {
			x := &r.Results[i]
			if x.Job == nil {
				continue
			}
			cell := "—"
			for _, c := range x.Job.Collectives {
				if (key{c.Name, c.Op, c.Ranks, c.Bytes}) == k && c.Count > 0 {
					cell = fmt.Sprintf("%s, %.1f Gb/s (×%d)", Duration(int64(c.MeanNs)), c.BusBWGbps, c.Count)
				}
			}
			fmt.Fprintf(b, "    %-12s %s\n", x.Transport, cell)
		}
	}
}

// jobCSV writes steps.csv and collectives.csv for a training job.
func (r *Report) jobCSV(write func(name string, header []string, rows func(add func(...any))) error) error {
	if !r.hasJob() {
		return nil
	}
	err := write("steps.csv", []string{"transport", "step", "step_ns"}, func(add func(...any)) {
		for _, x := range r.Results {
			if x.Job == nil {
				continue
			}
			for s, t := range x.Job.StepNs {
				add(x.Transport, s, t)
			}
		}
	})
	if err != nil {
		return err
	}
	return write("collectives.csv", []string{"transport", "name", "op", "ranks", "bytes", "scale_up", "count",
		"mean_ns", "max_ns", "algbw_gbps", "busbw_gbps"}, func(add func(...any)) {
		for _, x := range r.Results {
			if x.Job == nil {
				continue
			}
			for _, c := range x.Job.Collectives {
				add(x.Transport, c.Name, c.Op, c.Ranks, c.Bytes, c.ScaleUp, c.Count, c.MeanNs, c.MaxNs, c.AlgBWGbps, c.BusBWGbps)
			}
		}
	})
}

// stepPlot is a training job's step times, one line per transport.
func (r *Report) stepPlot() (*plot.Plot, error) {
	top := 0.0 // µs
	for i := range r.Results {
		if j := r.Results[i].Job; j != nil {
			for _, t := range j.StepNs {
				top = max(top, float64(t)/1e3)
			}
		}
	}
	tu := timeUnit(top)
	p := r.newPlot(r.Scenario+": step time", "step", "step time ("+tu.name+")")
	for i := range r.Results {
		x := &r.Results[i]
		if x.Job == nil {
			continue
		}
		pts := make(plotter.XYs, len(x.Job.StepNs))
		for s, t := range x.Job.StepNs {
			pts[s] = plotter.XY{X: float64(s), Y: float64(t) / 1e3 / tu.div}
		}
		l, err := addSeries(p, pts, i, x.Transport)
		if err != nil {
			return nil, err
		}
		if len(pts) == 1 { // a lone step shows as a point
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			s.Color = l.Color
			p.Add(s)
		}
	}
	p.Y.Min = 0
	p.Y.Max = math.Max(top/tu.div, 1) * 1.2
	return p, nil
}
