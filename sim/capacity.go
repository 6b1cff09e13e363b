package sim

import (
	"slices"

	"github.com/openmrc/mrc/sim/topo"
)

// CapacityRemoved is what the failures took from the fabric over a
// window [0, WindowNs]: every figure is a time average over the window
// of a fraction in [0, 1]. A link is unusable while it is down or a
// switch at either end blackholes; a switch that is down has its links
// down. docs/failures.md, "Capacity removed and the goodput dip".
type CapacityRemoved struct {
	WindowNs int64 `json:"window_ns"`
	// Fabric is the share of the fabric's link capacity (both
	// directions, every tier) unusable; ByClass splits it by tier pair:
	// host_t0, t0_t1, t1_t2.
	Fabric  float64            `json:"fabric"`
	ByClass map[string]float64 `json:"by_class"`
	// HostsHit is how many hosts lost some of their up-port capacity
	// (their link down, or their T0 down or blackholed) during the
	// window; HostsMax is the largest share one host lost, HostsMean the
	// mean over all hosts.
	HostsHit  int     `json:"hosts_hit"`
	HostsMax  float64 `json:"hosts_max"`
	HostsMean float64 `json:"hosts_mean"`
	// Flows is, averaged over the flows, the share of a flow's paths
	// (one per plane and T1 in a two-tier fabric) that were unusable
	// while it ran, from its start until it completed or the window
	// ended: what an ideal multipath transport would lose. FlowsMax is
	// the worst flow's. Two-tier fabrics only (null otherwise).
	Flows    *float64 `json:"flows"`
	FlowsMax *float64 `json:"flows_max"`
	// FlowsCutOff counts the flows that started but did not finish and
	// had no usable path left at the window's end: the failures had cut
	// their hosts off from each other, in every plane. No transport
	// finishes them unless a failed part comes back. Two-tier fabrics
	// only.
	FlowsCutOff int `json:"flows_cut_off"`
	// PerFlow is each flow's share, by flow index (not in the JSON; the
	// scenario runner compares flows with a run without failures).
	PerFlow []float64 `json:"-"`
}

// capEvent is one change of the fabric's state: a link down or up, a
// switch's blackhole on or off.
type capEvent struct {
	at   Time
	link int32 // or -1
	sw   int32 // with link -1
	on   bool  // link up; blackhole on
}

// capacity computes CapacityRemoved over [0, end] from the failure
// schedule, or returns nil when the run had no failures.
func (w *World) capacity(end Time) *CapacityRemoved {
	if len(w.fails) == 0 || end <= 0 {
		return nil
	}
	var evs []capEvent
	for l, le := range w.linkEvents {
		for _, e := range le {
			evs = append(evs, capEvent{at: e.at, link: int32(l), on: e.up})
		}
	}
	for _, a := range w.actions {
		if a.op == aBlackhole || a.op == aBlackholeOff {
			evs = append(evs, capEvent{at: a.at, link: -1, sw: a.sw, on: a.op == aBlackhole})
		}
	}
	slices.SortStableFunc(evs, func(a, b capEvent) int { return cmpTime(a.at, b.at) })
	c := newCapState(w, end)
	for _, e := range evs {
		if e.at >= end {
			break
		}
		c.advance(e.at)
		c.apply(e)
	}
	c.advance(end)
	return c.result()
}

// capState is the fabric's state during the sweep over the events, and
// the time integrals of what it lost.
type capState struct {
	w     *World
	t     *topo.Topology
	end   Time
	now   Time
	down  []bool // by link
	bh    []bool // by switch
	class []int8 // by link: index into classNames
	// unusable links by class, and their integral (ps × links)
	bad    [3]int
	badInt [3]float64
	nClass [3]int
	// by host: ports lost now, integral (ps × ports), ever hit
	hostLost []int
	hostInt  []float64
	hostHit  []bool
	// flows (two-tier only): share now, integral, by flow; flows by host
	clos2    bool
	share    []float64
	flowInt  []float64
	byHost   [][]int32
	nT1      int       // T1 switches per plane
	uplinks  [][]int32 // by T0 switch: its links to T1s
	reach    [][]bool  // by T0 switch, by T1 index: some usable link between them
	dirtyT0  []bool    // T0s whose reach needs recomputing
	dirtyAll bool
	dirty    []bool // hosts whose flows need their share recomputed
}

var classNames = [3]string{"host_t0", "t0_t1", "t1_t2"}

func newCapState(w *World, end Time) *capState {
	t := w.t
	c := &capState{w: w, t: t, end: end, down: make([]bool, len(t.Links)), bh: make([]bool, len(t.Switches)),
		class: make([]int8, len(t.Links)), hostLost: make([]int, t.Hosts), hostInt: make([]float64, t.Hosts),
		hostHit: make([]bool, t.Hosts), dirty: make([]bool, t.Hosts)}
	for l, k := range t.Links {
		cl := int8(0)
		if !t.IsHost(k.A) && !t.IsHost(k.B) {
			cl = int8(min(t.SwitchOf(k.A).Tier, t.SwitchOf(k.B).Tier) + 1)
		}
		c.class[l] = cl
		c.nClass[cl]++
	}
	if _, ok := t.Clos2Config(); ok {
		c.clos2 = true
		for _, s := range t.Switches {
			if s.Tier == 1 {
				c.nT1 = max(c.nT1, s.Index+1)
			}
		}
		c.uplinks, c.reach, c.dirtyT0 = make([][]int32, len(t.Switches)), make([][]bool, len(t.Switches)), make([]bool, len(t.Switches))
		for l := range t.Links {
			if c.class[l] == 1 {
				a := c.t0End(l)
				c.uplinks[a] = append(c.uplinks[a], int32(l))
			}
		}
		for a, s := range t.Switches {
			if s.Tier == 0 {
				c.reach[a] = make([]bool, c.nT1)
				c.dirtyT0[a] = true
			}
		}
		n := len(w.wl.Flows)
		c.share, c.flowInt, c.byHost = make([]float64, n), make([]float64, n), make([][]int32, t.Hosts)
		for i, f := range w.wl.Flows {
			c.byHost[f.Src] = append(c.byHost[f.Src], int32(i))
			if f.Dst != f.Src {
				c.byHost[f.Dst] = append(c.byHost[f.Dst], int32(i))
			}
		}
	}
	return c
}

// advance integrates the current state from c.now to at.
func (c *capState) advance(at Time) {
	if at <= c.now {
		return
	}
	c.refresh()
	dt := float64(at - c.now)
	for i := range c.bad {
		c.badInt[i] += float64(c.bad[i]) * dt
	}
	for h, n := range c.hostLost {
		if n > 0 {
			c.hostInt[h] += float64(n) * dt
		}
	}
	for i, s := range c.share {
		if s > 0 {
			if from, to := max(c.now, c.flowFrom(i)), min(at, c.flowTo(i)); to > from {
				c.flowInt[i] += s * float64(to-from)
			}
		}
	}
	c.now = at
}

// flowFrom and flowTo bound flow i's life: from its start (never, if it
// did not start) until it completed, or the window's end.
func (c *capState) flowFrom(i int) Time {
	if fs := &c.w.flows[i]; fs.start >= 0 {
		return fs.start
	}
	return c.end
}

func (c *capState) flowTo(i int) Time {
	if fs := &c.w.flows[i]; fs.sendDone >= 0 {
		return min(fs.sendDone, c.end)
	}
	return c.end
}

// t0End returns the T0 end of T0–T1 link l.
func (c *capState) t0End(l int) int {
	k := &c.t.Links[l]
	if a := int(k.A) - c.t.Hosts; c.t.Switches[a].Tier == 0 {
		return a
	}
	return int(k.B) - c.t.Hosts
}

// t1End returns the T1 end of T0–T1 link l.
func (c *capState) t1End(l int) int {
	k := &c.t.Links[l]
	if a := int(k.A) - c.t.Hosts; c.t.Switches[a].Tier == 1 {
		return a
	}
	return int(k.B) - c.t.Hosts
}

// unusable reports whether link l carries nothing now.
func (c *capState) unusable(l int) bool {
	if c.down[l] {
		return true
	}
	k := &c.t.Links[l]
	for _, n := range []topo.NodeID{k.A, k.B} {
		if !c.t.IsHost(n) && c.bh[int(n)-c.t.Hosts] {
			return true
		}
	}
	return false
}

// apply takes event e into the state, updating the class counts and
// marking the hosts whose ports or flows it touches.
func (c *capState) apply(e capEvent) {
	t := c.t
	var links []int
	if e.link >= 0 {
		links = []int{int(e.link)}
	} else {
		s := &t.Switches[e.sw]
		for p := range s.Ports {
			links = append(links, int(t.SwitchPortLink[s.PortBase+p]))
		}
	}
	before := make([]bool, len(links))
	for i, l := range links {
		before[i] = c.unusable(l)
	}
	if e.link >= 0 {
		c.down[e.link] = !e.on
	} else {
		c.bh[e.sw] = e.on
	}
	for i, l := range links {
		after := c.unusable(l)
		if after != before[i] {
			if after {
				c.bad[c.class[l]]++
			} else {
				c.bad[c.class[l]]--
			}
		}
		c.touch(l, after != before[i])
	}
}

// touch marks the hosts link l's change concerns: the host at its end
// (its port count changes when changed), or the hosts under its T0.
func (c *capState) touch(l int, changed bool) {
	t := c.t
	k := &t.Links[l]
	switch {
	case t.IsHost(k.A):
		if changed {
			if c.unusable(l) {
				c.hostLost[k.A]++
				c.hostHit[k.A] = true
			} else {
				c.hostLost[k.A]--
			}
		}
		c.dirty[k.A] = true
	case c.class[l] == 1:
		a := c.t0End(l)
		if c.dirtyT0 != nil {
			c.dirtyT0[a] = true
		}
		s := &t.Switches[a]
		for p := range s.Ports {
			if m := &t.Links[t.SwitchPortLink[s.PortBase+p]]; t.IsHost(m.A) {
				c.dirty[m.A] = true
			}
		}
	default:
		c.dirtyAll = true
	}
}

// refresh recomputes the share of the flows of the marked hosts.
func (c *capState) refresh() {
	if !c.clos2 {
		clear(c.dirty)
		return
	}
	for a, d := range c.dirtyT0 {
		if !d {
			continue
		}
		clear(c.reach[a])
		for _, l := range c.uplinks[a] {
			if !c.unusable(int(l)) {
				c.reach[a][c.t.Switches[c.t1End(int(l))].Index] = true
			}
		}
		c.dirtyT0[a] = false
	}
	for h, d := range c.dirty {
		if !d && !c.dirtyAll {
			continue
		}
		for _, i := range c.byHost[h] {
			c.share[i] = c.flowShare(int(i))
		}
	}
	clear(c.dirty)
	c.dirtyAll = false
}

// flowShare is the share of flow i's paths unusable now: per plane, its
// two host links and, between different T0s, each T1 with both T0
// links.
func (c *capState) flowShare(i int) float64 {
	t := c.t
	f := &c.w.wl.Flows[i]
	lost := 0.0
	for p := range t.Planes {
		ls, ld := int(t.HostLink[f.Src*t.Planes+p]), int(t.HostLink[f.Dst*t.Planes+p])
		if c.unusable(ls) || c.unusable(ld) {
			lost++
			continue
		}
		a, b := int32(t.T0(f.Src, p)), int32(t.T0(f.Dst, p))
		if a == b {
			continue
		}
		ra, rb := c.reach[a], c.reach[b]
		bad := 0
		for j := range ra {
			if !ra[j] || !rb[j] {
				bad++
			}
		}
		lost += float64(bad) / float64(len(ra))
	}
	return lost / float64(t.Planes)
}

func (c *capState) result() *CapacityRemoved {
	t := c.t
	win := float64(c.end)
	r := &CapacityRemoved{WindowNs: int64(c.end / 1000), ByClass: map[string]float64{}}
	var bad, all float64
	for i, n := range c.nClass {
		if n == 0 {
			continue
		}
		r.ByClass[classNames[i]] = c.badInt[i] / (float64(n) * win)
		bad += c.badInt[i]
		all += float64(n)
	}
	r.Fabric = bad / (all * win)
	var sum float64
	for h := range t.Hosts {
		s := c.hostInt[h] / (float64(t.Planes) * win)
		sum += s
		r.HostsMax = max(r.HostsMax, s)
		if c.hostHit[h] {
			r.HostsHit++
		}
	}
	r.HostsMean = sum / float64(t.Hosts)
	if c.clos2 && len(c.share) > 0 {
		r.PerFlow = make([]float64, len(c.share))
		var mean, worst float64
		for i := range c.share {
			if life := float64(c.flowTo(i) - c.flowFrom(i)); life > 0 {
				r.PerFlow[i] = c.flowInt[i] / life
			}
			mean += r.PerFlow[i]
			worst = max(worst, r.PerFlow[i])
		}
		mean /= float64(len(c.share))
		r.Flows, r.FlowsMax = &mean, &worst
		c.refresh()
		for i, sh := range c.share {
			if fs := &c.w.flows[i]; sh == 1 && fs.start >= 0 && fs.sendDone < 0 && !fs.failed {
				r.FlowsCutOff++
			}
		}
	}
	return r
}

// Baseline sets a run with failures beside the same run without them.
type Baseline struct {
	// CompletionNs is the completion time without failures; Slowdown
	// the completion time with failures over it.
	CompletionNs int64   `json:"completion_ns"`
	Slowdown     float64 `json:"slowdown"`
	// GoodputDip is the payload delivered by CompletionNs with failures,
	// as a share of the payload delivered by then without: 1 − B/B₀.
	// StepDip is the dip of a step's goodput (its bytes over its
	// completion time): 1 − 1/Slowdown.
	GoodputDip float64 `json:"goodput_dip"`
	StepDip    float64 `json:"step_dip"`
	// A flow that lost a share r of its path capacity (CapacityRemoved)
	// should take no longer than FCT₀/(1 − r) + MarginNs, FCT₀ its
	// completion time without failures. MarginNs is six base RTTs: the
	// loss timeout (four base RTTs) a silent failure costs before the
	// transport can know of it, the round trip of the probe that
	// confirms the loss, and the resend's. FlowsOverBound counts the
	// flows that took longer or never completed; WorstOverNs is by how
	// much the worst completed one did.
	MarginNs       int64 `json:"margin_ns"`
	FlowsOverBound int   `json:"flows_over_bound"`
	WorstOverNs    int64 `json:"worst_over_ns"`
	// BoundNs is the completion time the capacity removed allows: the
	// latest, over the flows, of a flow's start plus its bound above
	// (0 when a flow lost every path). BoundDip is the step dip at that
	// completion time, 1 − CompletionNs/BoundNs (1 without a bound):
	// the dip a transport that lost only the capacity removed, and the
	// margin, would show. A step ends with its slowest flow, so StepDip
	// is to be set against BoundDip, not against the capacity removed
	// averaged over the flows.
	BoundNs  int64   `json:"bound_ns"`
	BoundDip float64 `json:"bound_dip"`
	// StepNs and StepMeanNs are a training job's step times without
	// failures (null, 0 without a job).
	StepNs     []int64 `json:"step_ns"`
	StepMeanNs float64 `json:"step_mean_ns"`
}

// CompareBaseline compares r, a run with failures, with base, the same
// run without them. It returns nil when r has no capacity figures.
func CompareBaseline(r, base *Result) *Baseline {
	c := r.CapacityRemoved
	if c == nil || base.CompletionNs <= 0 {
		return nil
	}
	b := &Baseline{CompletionNs: base.CompletionNs, MarginNs: 6 * r.baseRTT.Nanoseconds()}
	if base.Job != nil {
		b.StepNs, b.StepMeanNs = base.Job.StepNs, base.Job.StepMeanNs
	}
	if r.CompletionNs > 0 && r.FlowsCompleted == r.Flows {
		b.Slowdown = float64(r.CompletionNs) / float64(base.CompletionNs)
		b.StepDip = 1 - 1/b.Slowdown
	} else {
		b.StepDip = 1
	}
	if d0 := base.Series.deliveredBy(base.CompletionNs); d0 > 0 {
		b.GoodputDip = 1 - r.Series.deliveredBy(base.CompletionNs)/d0
	}
	unbounded := false
	for i, f := range r.FlowResults {
		if i >= len(base.FlowResults) || len(c.PerFlow) <= i || base.FlowResults[i].FCTNs < 0 {
			continue
		}
		share := c.PerFlow[i]
		if share >= 1 {
			unbounded = true
		}
		if f.FCTNs < 0 || share >= 1 {
			b.FlowsOverBound++
			continue
		}
		bound := float64(base.FlowResults[i].FCTNs)/(1-share) + float64(b.MarginNs)
		if over := f.FCTNs - int64(bound); over > 0 {
			b.FlowsOverBound++
			b.WorstOverNs = max(b.WorstOverNs, over)
		}
		b.BoundNs = max(b.BoundNs, f.StartNs+int64(bound))
	}
	switch {
	case unbounded || b.BoundNs <= 0:
		b.BoundNs, b.BoundDip = 0, 1
	default:
		b.BoundDip = max(0, 1-float64(base.CompletionNs)/float64(b.BoundNs))
	}
	return b
}

// deliveredBy returns the payload bytes the series counts delivered by
// atNs (whole sample intervals).
func (s *Series) deliveredBy(atNs int64) float64 {
	var bytes float64
	prev := int64(0)
	for i, t := range s.TimesNs {
		if t > atNs {
			break
		}
		bytes += s.TotalGbps[i] * float64(t-prev) / 8
		prev = t
	}
	return bytes
}
