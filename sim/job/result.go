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
	// Timeline is a representative set of ranks' time lines over the
	// finished steps, for plots: rank 0, the straggler's rank and ranks
	// spread evenly between, at most TimelineRanks, in rank order.
	Timeline []RankTimeline `json:"timeline"`
}

// TimelineRanks is how many ranks Result.Timeline shows at most.
const TimelineRanks = 8

// RankTimeline is when one rank computed and when it had communication
// in flight, over its finished steps. Intervals are [from, to] in
// nanoseconds, merged where they overlap, in time order; a rank with
// more than MaxTimelineSpans of a kind has its shortest gaps closed
// (below a plot's resolution).
type RankTimeline struct {
	Rank int `json:"rank"`
	Host int `json:"host"`
	// Straggler: this rank finished the slowest step last.
	Straggler bool `json:"straggler"`
	// StepEndNs[k] is when the rank finished step k.
	StepEndNs []int64    `json:"step_end_ns"`
	ComputeNs [][2]int64 `json:"compute_ns"`
	CommNs    [][2]int64 `json:"comm_ns"`
}

// MaxTimelineSpans bounds the intervals of one kind in a RankTimeline.
const MaxTimelineSpans = 2000

// ExposedNs returns the rank's exposed communication: communication in
// flight with no compute running (CommNs less ComputeNs).
func (t *RankTimeline) ExposedNs() [][2]int64 {
	comm, comp := spans(t.CommNs), spans(t.ComputeNs)
	return pairs(subtract(comm, comp))
}

// OverlappedNs returns the rank's communication hidden under compute
// (CommNs and ComputeNs both).
func (t *RankTimeline) OverlappedNs() [][2]int64 {
	return pairs(intersect(spans(t.CommNs), spans(t.ComputeNs)))
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
	// Critical is the slowest flow on the step's critical path to the
	// rank's end (nil: none over the fabric).
	Critical *CriticalFlow `json:"critical_flow"`
}

// CriticalFlow is, of the flows on a step's critical path (the chain of
// dependencies, each the last to arrive, that ended the straggler's
// step), the one that took longest from its start to its receiver
// having every byte: the transfer that held the step up, wherever in the
// job it ran.
type CriticalFlow struct {
	Flow    int   `json:"flow"` // its ID
	Src     int   `json:"src"`  // hosts
	Dst     int   `json:"dst"`
	StartNs int64 `json:"start_ns"`
	RecvNs  int64 `json:"recv_ns"`
	// PathFlows is how many flows the critical path holds in the step.
	PathFlows int `json:"path_flows"`
	// HotLink is the switch port where its connection lost the most time
	// to congestion, Failures the failed elements its connection sent
	// data into (both filled by the simulator; nil when it met none).
	HotLink  *HotLink `json:"hot_link"`
	Failures []string `json:"failures"`
}

// HotLink is the congestion one connection met at one switch port over
// the run.
type HotLink struct {
	// Link names the port by its switch and the node it sends to:
	// "t0-p1-3→h7".
	Link string `json:"link"`
	// WaitedPackets of the connection's packets waited in the port's
	// queue longer than a fifth of the fabric's base RTT (where ECN
	// marking starts), WaitedNs in total.
	WaitedPackets uint64 `json:"waited_packets"`
	WaitedNs      int64  `json:"waited_ns"`
	// Trimmed and Dropped count its packets the port trimmed, or dropped
	// for want of queue room.
	Trimmed uint64 `json:"trimmed"`
	Dropped uint64 `json:"dropped"`
	// PeakQueueBytes is the port's deepest queue over the run, every
	// flow's packets counted.
	PeakQueueBytes int64 `json:"peak_queue_bytes"`
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

// Times are when a run's triggers fired and its flows started and
// finished, for Report: for the whole run's workload (see TriggerOffset
// and FlowOffset), negative for never.
type Times struct {
	// Fired is when each trigger first fired, in order, as
	// sim.World.TriggerTimes returns them.
	Fired []time.Duration
	// Start, Send and Recv are when each flow started, had every byte
	// acknowledged and had every byte at its receiver (nil: not known).
	Start, Send, Recv []time.Duration
}

// Report reads a run's results from its times.
func (p *Plan) Report(t Times) *Result {
	fired := t.Fired
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
	comp, comm := p.intervals(r, at)
	p.fractions(r, at, comp, comm)
	p.collectives(r, at)
	p.straggler(r, at, endOf, t)
	p.timeline(r, at, comp, comm)
	return r
}

// span is a time interval in nanoseconds.
type span struct{ from, to int64 }

// rankStep names one rank's step.
type rankStep struct{ step, rank int }

// intervals returns, for each finished step of each rank, the merged
// intervals with compute running and with communication in flight.
func (p *Plan) intervals(r *Result, at func(int) int64) (comp, comm map[rankStep][]span) {
	comp, comm = map[rankStep][]span{}, map[rankStep][]span{}
	for _, n := range p.nodes {
		if n.step >= r.StepsDone {
			continue
		}
		end := at(n.done)
		if end < 0 {
			continue
		}
		k := rankStep{n.step, n.rank}
		if n.node.Op == Compute {
			comp[k] = append(comp[k], span{end - n.node.Duration.Nanoseconds(), end})
		} else if start := at(n.start); start >= 0 {
			comm[k] = append(comm[k], span{start, end})
		}
	}
	for k, v := range comp {
		comp[k] = union(v)
	}
	for k, v := range comm {
		comm[k] = union(v)
	}
	return comp, comm
}

// fractions fills the compute, exposed-communication and idle shares,
// from each finished rank step's intervals.
func (p *Plan) fractions(r *Result, at func(int) int64, comp, comm map[rankStep][]span) {
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
			k := rankStep{s, rank}
			total += float64(at(e) - from)
			busy += float64(length(comp[k]))
			exposed += float64(length(subtract(comm[k], comp[k])))
		}
	}
	if total > 0 {
		r.ComputeFraction = busy / total
		r.ExposedCommFraction = exposed / total
		r.GPUIdleFraction = 1 - r.ComputeFraction
	}
}

// timeline fills r.Timeline: rank 0, the straggler's rank and ranks
// spread evenly, TimelineRanks at most.
func (p *Plan) timeline(r *Result, at func(int) int64, comp, comm map[rankStep][]span) {
	if r.StepsDone == 0 {
		return
	}
	n := len(p.Job.Ranks)
	pick := map[int]bool{}
	if r.Straggler != nil && r.Straggler.Rank >= 0 {
		pick[r.Straggler.Rank] = true
	}
	// i·n/TimelineRanks for i = 0, 1, …: every rank when there are no
	// more than TimelineRanks.
	for i := 0; len(pick) < min(n, TimelineRanks); i++ {
		pick[i*n/TimelineRanks] = true
	}
	for rank := range n {
		if !pick[rank] {
			continue
		}
		rt := RankTimeline{Rank: rank, Host: p.Hosts[rank], Straggler: r.Straggler != nil && r.Straggler.Rank == rank}
		var cu, cm []span
		for s := range r.StepsDone {
			if e := p.ends[s][rank]; e != 0 {
				rt.StepEndNs = append(rt.StepEndNs, at(e))
			}
			cu = append(cu, comp[rankStep{s, rank}]...)
			cm = append(cm, comm[rankStep{s, rank}]...)
		}
		rt.ComputeNs = pairs(coarsen(union(cu), MaxTimelineSpans))
		rt.CommNs = pairs(coarsen(union(cm), MaxTimelineSpans))
		r.Timeline = append(r.Timeline, rt)
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

// subtract returns the parts of union a outside union b.
func subtract(a, b []span) []span {
	var out []span
	j := 0
	for _, x := range a {
		from := x.from
		for j < len(b) && b[j].to <= from {
			j++
		}
		for k := j; k < len(b) && b[k].from < x.to; k++ {
			if b[k].from > from {
				out = append(out, span{from, b[k].from})
			}
			from = max(from, b[k].to)
		}
		if from < x.to {
			out = append(out, span{from, x.to})
		}
	}
	return out
}

// coarsen closes the shortest gaps of union s until it has at most max
// spans.
func coarsen(s []span, max int) []span {
	if len(s) <= max {
		return s
	}
	gaps := make([]int64, len(s)-1)
	for i := range gaps {
		gaps[i] = s[i+1].from - s[i].to
	}
	slices.Sort(gaps)
	limit := gaps[len(s)-max-1] // closing every gap up to this one leaves at most max
	out := s[:1:1]
	for _, x := range s[1:] {
		if n := len(out); x.from-out[n-1].to <= limit {
			out[n-1].to = x.to
			continue
		}
		out = append(out, x)
	}
	return out
}

// spans converts [from, to] pairs to spans; pairs the other way.
func spans(ps [][2]int64) []span {
	out := make([]span, len(ps))
	for i, p := range ps {
		out[i] = span{p[0], p[1]}
	}
	return out
}

func pairs(s []span) [][2]int64 {
	out := make([][2]int64, len(s))
	for i, x := range s {
		out[i] = [2]int64{x.from, x.to}
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
func (p *Plan) straggler(r *Result, at func(int) int64, endOf []int64, t Times) {
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
	recv := t.Recv
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
	st.Critical = p.critical(at, p.ends[s][st.Rank], st.StepStartNs, t)
	r.Straggler = st
}

// critical walks back from trigger end (a rank's step end) along the
// activations that came last, as far as the step's start at from (ns),
// and returns the flow on that path that took longest.
func (p *Plan) critical(at func(int) int64, end int, from int64, t Times) *CriticalFlow {
	if t.Start == nil || t.Recv == nil || t.Send == nil {
		return nil
	}
	wl := p.Workload
	flowAt := func(i int, side []time.Duration) int64 {
		if k := p.FlowOffset + i; k < len(side) {
			return side[k].Nanoseconds()
		}
		return -1
	}
	// Who activates each trigger: another trigger, or a flow's send or
	// receive side.
	type activator struct {
		trig, flow int // a trigger's ID, or else a flow's index
		recv       bool
	}
	by := make([][]activator, len(wl.Triggers))
	for i, tr := range wl.Triggers {
		for _, a := range tr.Activates {
			by[a-1] = append(by[a-1], activator{trig: i + 1})
		}
	}
	for i, f := range wl.Flows {
		if f.SendDoneTrigger != 0 {
			by[f.SendDoneTrigger-1] = append(by[f.SendDoneTrigger-1], activator{flow: i})
		}
		if f.RecvDoneTrigger != 0 {
			by[f.RecvDoneTrigger-1] = append(by[f.RecvDoneTrigger-1], activator{flow: i, recv: true})
		}
	}
	var best *CriticalFlow
	onPath := 0
	for cur, hops := end, 0; cur != 0 && at(cur) >= from && hops <= len(wl.Triggers); hops++ {
		// The activation that came last set the trigger off.
		var last activator
		lastAt := int64(-1)
		for _, a := range by[cur-1] {
			var when int64
			switch {
			case a.trig != 0:
				when = at(a.trig)
			case a.recv:
				when = flowAt(a.flow, t.Recv)
			default:
				when = flowAt(a.flow, t.Send)
			}
			if when > lastAt {
				last, lastAt = a, when
			}
		}
		if lastAt < from {
			break
		}
		if last.trig != 0 {
			cur = last.trig
			continue
		}
		f := &wl.Flows[last.flow]
		onPath++
		start, recv := flowAt(last.flow, t.Start), flowAt(last.flow, t.Recv)
		if best == nil || recv-start > best.RecvNs-best.StartNs {
			best = &CriticalFlow{Flow: p.FlowOffset + last.flow + 1, Src: f.Src, Dst: f.Dst, StartNs: start, RecvNs: recv}
		}
		cur = f.Trigger
	}
	if best != nil {
		best.PathFlows = onPath
	}
	return best
}

func label(n *Node) string {
	if n.Name == "" || n.Name == n.Op.String() {
		return n.Op.String()
	}
	return n.Name + " " + n.Op.String()
}
