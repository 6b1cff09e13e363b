package job

import (
	"cmp"
	"slices"
	"time"
)

// Result is what a training person reads of a run: step times, how a
// step splits into compute and exposed communication, and per
// collective its time and bus bandwidth. Times in nanoseconds.
type Result struct {
	Ranks int `json:"ranks"`
	// StepsDone is how many steps every rank finished; StepNs their
	// times (step k: from the end of step k-1 on the last rank to
	// finish it, or the start, to the end of step k on the last rank).
	StepsDone  int     `json:"steps_done"`
	Steps      int     `json:"steps"`
	StepNs     []int64 `json:"step_ns"`
	StepMeanNs float64 `json:"step_mean_ns"`
	StepP99Ns  int64   `json:"step_p99_ns"`
	// ComputeFraction is the share of the ranks' step time with a
	// compute phase running; ExposedCommFraction with communication in
	// flight and no compute; GPUIdleFraction is 1 − ComputeFraction
	// (exposed communication plus waiting). Means over ranks and steps,
	// weighted by time.
	ComputeFraction     float64 `json:"compute_fraction"`
	ExposedCommFraction float64 `json:"exposed_comm_fraction"`
	GPUIdleFraction     float64 `json:"gpu_idle_fraction"`
	// Conns is how many persistent connections (QP pairs) the job used.
	Conns       int                `json:"connections"`
	Collectives []CollectiveResult `json:"collectives"`
	Straggler   *Straggler         `json:"straggler"` // the slowest step; null if none finished
}

// CollectiveResult summarises the collectives (or send/recv pairs) of
// one name, operation, size and group size over the steps.
type CollectiveResult struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Ranks int    `json:"ranks"`
	Bytes uint64 `json:"bytes"` // NCCL-tests' size (Node.Bytes)
	// ScaleUp: every transfer stayed inside servers.
	ScaleUp bool `json:"scale_up"`
	Count   int  `json:"count"` // completed instances
	// MeanNs and MaxNs are over the instances' times: from the first
	// member's start to the last member's end.
	MeanNs float64 `json:"mean_ns"`
	MaxNs  int64   `json:"max_ns"`
	// AlgBWGbps is Bytes over the mean time; BusBWGbps is NCCL's bus
	// bandwidth: AlgBW × 2(n−1)/n for all-reduce, × (n−1)/n for
	// all-gather, reduce-scatter and all-to-all, × 1 for send/recv.
	AlgBWGbps float64 `json:"algbw_gbps"`
	BusBWGbps float64 `json:"busbw_gbps"`
}

// Straggler is what held up the slowest step: the rank that finished it
// last and, on that rank, the communication that ended last and the
// one that took longest, and of that one's flows the last to arrive.
type Straggler struct {
	Step int `json:"step"`
	Rank int `json:"rank"`
	Host int `json:"host"`
	// Last is the rank's node that finished last; Longest its
	// communication node that took longest (name and operation).
	Last        string `json:"last"`
	Longest     string `json:"longest"`
	LongestNs   int64  `json:"longest_ns"`
	StepEndNs   int64  `json:"step_end_ns"`
	StepStartNs int64  `json:"step_start_ns"`
	// Flow is the ID of the longest communication's flow into the rank
	// that arrived last (0: none over the fabric), from host FlowSrc to
	// FlowDst (the rank's), at FlowRecvNs.
	Flow       int   `json:"flow"`
	FlowSrc    int   `json:"flow_src"`
	FlowDst    int   `json:"flow_dst"`
	FlowRecvNs int64 `json:"flow_recv_ns"`
	// FlowFailures names the failed elements that flow's connection sent
	// data into (filled by the simulator; empty when it met none).
	FlowFailures []string `json:"flow_failures"`
}

// BusFactor is NCCL's bus-bandwidth factor of op over n ranks.
func BusFactor(op Op, n int) float64 {
	switch {
	case n < 1:
		return 0
	case op == AllReduce:
		return 2 * float64(n-1) / float64(n)
	case op.Collective():
		return float64(n-1) / float64(n)
	}
	return 1
}

// Report reads a run's results from fired: when each trigger of the
// plan's workload first fired (in order; negative: never), as
// sim.World.TriggerTimes returns them, and recv: when each of its flows
// reached its receiver (negative: never; nil: not known), both for the
// whole run's workload (see TriggerOffset and FlowOffset).
func (p *Plan) Report(fired, recv []time.Duration) *Result {
	at := func(id int) int64 {
		i := p.TriggerOffset + id - 1
		if id <= 0 || i >= len(fired) {
			return -1
		}
		return fired[i].Nanoseconds()
	}
	r := &Result{Ranks: len(p.Job.Ranks), Steps: p.Job.Steps, Conns: p.Conns}
	// Steps.
	var prevEnd int64
	endOf := make([]int64, len(p.ends))
	for s, ends := range p.ends {
		end, ok := int64(0), true
		for _, e := range ends {
			if e == 0 {
				continue
			}
			t := at(e)
			if t < 0 {
				ok = false
				break
			}
			end = max(end, t)
		}
		if !ok {
			break
		}
		endOf[s] = end
		r.StepNs = append(r.StepNs, end-prevEnd)
		prevEnd = end
		r.StepsDone++
	}
	if r.StepsDone > 0 {
		var sum float64
		for _, t := range r.StepNs {
			sum += float64(t)
		}
		r.StepMeanNs = sum / float64(len(r.StepNs))
		sorted := slices.Clone(r.StepNs)
		slices.Sort(sorted)
		r.StepP99Ns = sorted[(len(sorted)*99+99)/100-1]
	}
	p.fractions(r, at)
	p.collectives(r, at)
	p.straggler(r, at, endOf, recv)
	return r
}

// span is a time interval in nanoseconds.
type span struct{ from, to int64 }

// fractions fills the compute, exposed-communication and idle shares,
// from each finished rank step's intervals.
func (p *Plan) fractions(r *Result, at func(int) int64) {
	type key struct{ step, rank int }
	comp, comm := map[key][]span{}, map[key][]span{}
	for _, n := range p.nodes {
		if n.step >= r.StepsDone {
			continue
		}
		end := at(n.done)
		if end < 0 {
			continue
		}
		k := key{n.step, n.rank}
		if n.node.Op == Compute {
			comp[k] = append(comp[k], span{end - n.node.Duration.Nanoseconds(), end})
		} else if start := at(n.start); start >= 0 {
			comm[k] = append(comm[k], span{start, end})
		}
	}
	var total, busy, exposed float64
	for s := range r.StepsDone {
		for rank, e := range p.ends[s] {
			if e == 0 {
				continue
			}
			from := int64(0)
			if s > 0 && p.ends[s-1][rank] != 0 {
				from = at(p.ends[s-1][rank])
			}
			k := key{s, rank}
			total += float64(at(e) - from)
			cu := union(comp[k])
			busy += float64(length(cu))
			exposed += float64(length(union(comm[k])) - length(intersect(union(comm[k]), cu)))
		}
	}
	if total > 0 {
		r.ComputeFraction = busy / total
		r.ExposedCommFraction = exposed / total
		r.GPUIdleFraction = 1 - r.ComputeFraction
	}
}

// union merges overlapping spans, sorted.
func union(s []span) []span {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out []span
	for _, x := range s {
		if n := len(out); n > 0 && x.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, x.to)
			continue
		}
		out = append(out, x)
	}
	return out
}

// intersect returns the overlap of two unions.
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if lo < hi {
			out = append(out, span{lo, hi})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

func length(s []span) int64 {
	var n int64
	for _, x := range s {
		n += x.to - x.from
	}
	return n
}

// collectives summarises the collectives by name, operation, size and
// group size, in the order they first appear.
func (p *Plan) collectives(r *Result, at func(int) int64) {
	type key struct {
		name  string
		op    Op
		bytes uint64
		ranks int
	}
	index := map[key]int{}
	sums := []float64{}
	for _, c := range p.colls {
		k := key{c.name, c.op, c.bytes, c.ranks}
		i, ok := index[k]
		if !ok {
			i = len(r.Collectives)
			index[k] = i
			r.Collectives = append(r.Collectives, CollectiveResult{Name: c.name, Op: c.op.String(), Ranks: c.ranks, Bytes: c.bytes, ScaleUp: true})
			sums = append(sums, 0)
		}
		cr := &r.Collectives[i]
		cr.ScaleUp = cr.ScaleUp && c.scaleUp
		from, to := int64(-1), int64(-1)
		for _, ni := range c.nodes {
			s, e := at(p.nodes[ni].start), at(p.nodes[ni].done)
			if s < 0 || e < 0 {
				from = -2
				break
			}
			if from < 0 || s < from {
				from = s
			}
			to = max(to, e)
		}
		if from < 0 {
			continue
		}
		cr.Count++
		sums[i] += float64(to - from)
		cr.MaxNs = max(cr.MaxNs, to-from)
	}
	for i := range r.Collectives {
		cr := &r.Collectives[i]
		if cr.Count == 0 {
			continue
		}
		cr.MeanNs = sums[i] / float64(cr.Count)
		if cr.MeanNs > 0 {
			cr.AlgBWGbps = float64(cr.Bytes) * 8 / cr.MeanNs
			cr.BusBWGbps = cr.AlgBWGbps * BusFactor(opOf(cr.Op), cr.Ranks)
		}
	}
}

func opOf(name string) Op {
	for o, n := range opNames {
		if n == name {
			return Op(o)
		}
	}
	return 0
}

// straggler finds the slowest finished step's last rank and what held
// it up.
func (p *Plan) straggler(r *Result, at func(int) int64, endOf []int64, recv []time.Duration) {
	if r.StepsDone == 0 {
		return
	}
	s := 0
	for i, t := range r.StepNs {
		if t > r.StepNs[s] {
			s = i
		}
	}
	st := &Straggler{Step: s, Rank: -1, StepEndNs: endOf[s]}
	if s > 0 {
		st.StepStartNs = endOf[s-1]
	}
	for rank, e := range p.ends[s] {
		if e != 0 && at(e) == endOf[s] {
			st.Rank, st.Host = rank, p.Hosts[rank]
			break
		}
	}
	var lastEnd int64 = -1
	longest := -1
	for _, n := range p.nodes {
		if n.step != s || n.rank != st.Rank {
			continue
		}
		e := at(n.done)
		if e > lastEnd {
			lastEnd, st.Last = e, label(n.node)
		}
		if n.node.Op != Compute {
			if d := e - at(n.start); d > st.LongestNs {
				st.LongestNs, st.Longest = d, label(n.node)
				longest = n.coll
			}
		}
	}
	if longest >= 0 && recv != nil {
		fl := p.colls[longest].flows
		for i := fl[0]; i < fl[1] && p.FlowOffset+i < len(recv); i++ {
			f := &p.Workload.Flows[i]
			rt := recv[p.FlowOffset+i]
			if t := rt.Nanoseconds(); f.Dst == st.Host && rt >= 0 && t > st.FlowRecvNs {
				st.Flow, st.FlowSrc, st.FlowDst, st.FlowRecvNs = p.FlowOffset+i+1, f.Src, f.Dst, t
			}
		}
	}
	r.Straggler = st
}

func label(n *Node) string {
	if n.Name == "" || n.Name == n.Op.String() {
		return n.Op.String()
	}
	return n.Name + " " + n.Op.String()
}
