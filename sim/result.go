package sim

import (
	"encoding/json"
	"io"
	"slices"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// Result is what a run produced: a Go value that marshals to the JSON the
// mrc CLI prints (snake_case keys; times in nanoseconds unless named
// otherwise). docs/sim.md describes every field.
type Result struct {
	Scenario  string `json:"scenario"`
	Transport string `json:"transport"`
	Seed      uint64 `json:"seed"`
	Hosts     int    `json:"hosts"`
	Planes    int    `json:"planes"`

	Flows          int    `json:"flows"`
	FlowsCompleted int    `json:"flows_completed"` // receiver has every byte and the sender saw it acknowledged
	FlowsFailed    int    `json:"flows_failed"`    // the transport gave up (QP error)
	BytesSent      uint64 `json:"bytes_sent"`      // payload bytes sent (first transmissions)
	BytesDelivered uint64 `json:"bytes_delivered"` // payload bytes placed at receivers, each once
	// FCT is the flow completion time: from the flow's start until the
	// sender has every byte acknowledged.
	FCT FCTStats `json:"fct_ns"`
	// CompletionNs is when the last flow completed, from the first
	// start: the collective's completion time.
	CompletionNs int64 `json:"completion_ns"`
	// IdealNs is what an unloaded fabric would take: the busiest NIC's
	// bytes (sent or received, with headers) at the NIC's full rate, plus
	// one base RTT (the lone-flow FCT).
	IdealNs int64 `json:"ideal_ns"`
	// GoodputFractionOfIdeal is IdealNs / CompletionNs.
	GoodputFractionOfIdeal float64 `json:"goodput_fraction_of_ideal"`

	Retransmits  uint64            `json:"retransmits"`
	Trims        uint64            `json:"trims"`         // packets trimmed by switches
	TrimNACKs    uint64            `json:"trim_nacks"`    // NACKs for trimmed packets the senders received
	LossTimeouts uint64            `json:"loss_timeouts"` // packets the senders declared lost by timer
	ECNMarks     uint64            `json:"ecn_marks"`     // CE marks set by switches
	Drops        map[string]uint64 `json:"drops"`         // packets lost, by cause
	PFCPauses    uint64            `json:"pfc_pauses"`    // lossless fabrics
	QPErrors     uint64            `json:"qp_errors"`     // connections the transport failed
	BypassNs     *int64            `json:"bypass_ns"`     // max over failures; null without failures
	BypassQP     *BypassStats      `json:"bypass_qp_ns"`  // per-flow bypass times over every failure; null without failures
	Failures     []FailureResult   `json:"failures"`      // one per failed element
	// CapacityRemoved is what the failures took from the fabric over
	// the run; null without failures.
	CapacityRemoved *CapacityRemoved `json:"capacity_removed"`
	// Baseline compares the run with the same run without failures
	// (CompareBaseline); null unless asked for (mrc sim --baseline).
	Baseline    *Baseline      `json:"baseline"`
	PerPlane    []PlaneResult  `json:"per_plane"` // by plane
	Links       []LinkClass    `json:"link_utilisation"`
	EVStates    EVStateChanges `json:"ev_state_changes"`
	Events      uint64         `json:"events"`
	SimTimeNs   int64          `json:"sim_time_ns"` // when the run stopped (see StoppedBy)
	WallS       float64        `json:"wall_s"`
	Interrupted bool           `json:"interrupted"`
	// StoppedBy says why the run stopped: "done" (every flow completed
	// or failed), "duration" (StopAt, with flows unfinished), "idle"
	// (nothing left to simulate, flows unfinished) or "interrupted".
	StoppedBy   string       `json:"stopped_by"`
	Series      Series       `json:"series"`
	FlowResults []FlowResult `json:"flow_results"`

	// Job is a training job's steps and collectives (Config.Job); null
	// for other workloads.
	Job *job.Result `json:"job"`

	baseRTT time.Duration // the fabric's unloaded round trip (CompareBaseline)
}

// FCTStats summarises flow completion times in nanoseconds.
type FCTStats struct {
	Min  int64   `json:"min"`
	P50  int64   `json:"p50"`
	P99  int64   `json:"p99"`
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// FailureResult is one failed element.
type FailureResult struct {
	Kind    string `json:"kind"`
	Element string `json:"element"`
	AtNs    int64  `json:"at_ns"`
	UntilNs int64  `json:"until_ns"` // 0: never repaired
	// BypassNs is the time from the failure until the element took its
	// last data packet (0 if it took none): how long data kept being
	// sent into it. DataPackets is how many data packets it took
	// (dropped, or for a lossy link, carried at risk).
	BypassNs    int64  `json:"bypass_ns"`
	DataPackets uint64 `json:"data_packets"`
	// QPs is how many flows (QP pairs) sent data into it;
	// QPBypassP50Ns and QPBypassP99Ns are the median and 99th
	// percentile over them of the time from the failure until the
	// flow's last data packet into it (BypassNs is their maximum).
	QPs           int   `json:"qps"`
	QPBypassP50Ns int64 `json:"qp_bypass_p50_ns"`
	QPBypassP99Ns int64 `json:"qp_bypass_p99_ns"`
	// ControlBypassNs and ControlPackets are the same for the QPs'
	// control packets: ACKs, SACKs, NACKs, CNPs (RoCE's ACKs hashed onto
	// a black hole, MRC's SACKs on a reverse path not yet moved). Probes
	// count as neither: MRC probes a retired path on purpose.
	ControlBypassNs int64  `json:"control_bypass_ns"`
	ControlPackets  uint64 `json:"control_packets"`
}

// BypassStats summarises per-flow bypass times in nanoseconds
// (nearest-rank percentiles; all 0 when no flow sent data into a
// failure).
type BypassStats struct {
	QPs int `json:"qps"` // (failure, flow) pairs with data into the failure
	// P50, P99 and Max are over the time from the failure until the
	// flow's last data packet into the element.
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
	// ReactP50, ReactP99 and ReactMax are over the time from the flow's
	// first data packet into the element until its last: how long the
	// flow went on using the failed element once it had met it. The
	// rest of its bypass time is how long it took to meet it at all.
	ReactP50 int64 `json:"react_p50"`
	ReactP99 int64 `json:"react_p99"`
	ReactMax int64 `json:"react_max"`
}

// PlaneResult is one plane's traffic.
type PlaneResult struct {
	Plane          int     `json:"plane"`
	TxBytes        uint64  `json:"tx_bytes"`         // wire bytes the hosts sent on this plane
	RxPayloadBytes uint64  `json:"rx_payload_bytes"` // data payload bytes that reached hosts on it (duplicates included)
	GoodputGbps    float64 `json:"goodput_gbps"`     // RxPayloadBytes over the completion time
	Utilisation    float64 `json:"utilisation"`      // host uplinks: TxBytes / (hosts × port rate × completion time)
}

// LinkClass is the utilisation of one class of links (one direction
// between two tiers) over the completion time.
type LinkClass struct {
	Class string  `json:"class"` // host_t0, t0_host, t0_t1, t1_t0, t1_t2, t2_t1
	Links int     `json:"links"`
	Mean  float64 `json:"mean"`
	Max   float64 `json:"max"`
}

// EVStateChanges counts EV path-state changes.
type EVStateChanges struct {
	ToGood       uint64 `json:"to_good"` // reported by the core's events
	ToAssumedBad uint64 `json:"to_assumed_bad"`
	ToDenied     uint64 `json:"to_denied"`
	Skips        uint64 `json:"skips"` // GOOD → SKIP (internal state, from counters)
	Retired      uint64 `json:"retired"`
	Resurrected  uint64 `json:"resurrected"`
}

// Series is goodput over time, sampled between windows.
type Series struct {
	TimesNs   []int64     `json:"times_ns"`   // sample times
	TotalGbps []float64   `json:"total_gbps"` // payload delivered to hosts since the previous sample
	PlaneGbps [][]float64 `json:"plane_gbps"` // [plane][sample]
	FlowIDs   []int       `json:"flow_ids"`   // flows with a series
	FlowGbps  [][]float64 `json:"flow_gbps"`  // [flow][sample]: new payload bytes as they reach the receiver
}

// FlowResult is one flow's outcome; times in nanoseconds, -1 if it did
// not happen.
type FlowResult struct {
	ID      int    `json:"id"`
	Src     int    `json:"src"`
	Dst     int    `json:"dst"`
	Size    uint64 `json:"size"`
	Tag     string `json:"tag"`
	StartNs int64  `json:"start_ns"`
	FCTNs   int64  `json:"fct_ns"`  // until the sender has every byte acknowledged
	RecvNs  int64  `json:"recv_ns"` // until the receiver has every byte
	Failed  bool   `json:"failed"`
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(out io.Writer) error {
	e := json.NewEncoder(out)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// sampler records the goodput series at window ends. A packet's payload
// reaches its host over the packet's serialisation on the last link, not
// at the instant its last bit lands, so a sample counts the bytes that
// arrived during its interval: those of completed packets, plus the share
// already received of the packet each host link is delivering. Without
// the share, a short interval could count a whole packet that was mostly
// received in the interval before, and show more than the links carry.
type sampler struct {
	w      *World
	every  Time
	next   Time
	last   Time
	rxMark []float64 // by plane: the payload counted so far
	flMark []float64 // by series flow
	flows  []int32
	inDL   [][]int32 // by plane: the directed links into hosts
	s      Series
}

func (w *World) newSampler() *sampler {
	every := mtime.PicosOf(w.cfg.SampleEvery)
	if every == 0 {
		every = max(w.idealPs()/100, 1_000_000)
	}
	t := w.t
	sm := &sampler{w: w, every: every, next: every, rxMark: make([]float64, t.Planes), inDL: make([][]int32, t.Planes)}
	for h := range t.Hosts {
		for p := range t.Planes {
			sm.inDL[p] = append(sm.inDL[p], w.hostOut(int32(h), p)^1)
		}
	}
	n := min(max(w.cfg.SeriesFlows, 0), len(w.flows))
	for i := range n {
		sm.flows = append(sm.flows, int32(i))
		sm.s.FlowIDs = append(sm.s.FlowIDs, w.wl.Flows[i].ID)
	}
	sm.flMark = make([]float64, n)
	sm.s.PlaneGbps = make([][]float64, t.Planes)
	sm.s.FlowGbps = make([][]float64, n)
	return sm
}

func (sm *sampler) maybe(now Time) {
	if now >= sm.next {
		sm.take(now)
		sm.next = now + sm.every
	}
}

func (sm *sampler) final(now Time) {
	if now > sm.last {
		sm.take(now)
	}
}

// arriving returns the packet directed link dl is delivering at now (the
// head of its pipe, if its serialisation has begun and the link is up),
// or nilPkt, and the share of its payload already received.
func (w *World) arriving(dl int32, now Time) (uint32, float64) {
	r := &w.rx[dl]
	if r.head == nilPkt || !r.up {
		return nilPkt, 0
	}
	h := r.head
	p, _ := w.pools[h>>idxBits].at(h & idxMask)
	payload := int32(p.wl) - int32(p.n) - wire.ICRCLen
	ser := vswitch.SerializationPs(int(p.wl)+w.overhead, w.lk[dl].rate)
	start := r.headAt - ser
	if payload <= 0 || ser <= 0 || now <= start {
		return nilPkt, 0
	}
	return h, float64(payload) * min(float64(now-start)/float64(ser), 1)
}

// advance returns how much of the payload counted up to now is new since
// the mark, and moves the mark. A partly received packet that is then
// lost (a link failing under it) makes the count go back; the mark stays
// put, so no sample counts more than arrived in its interval.
func advance(mark *float64, now float64) float64 {
	d := max(now-*mark, 0)
	*mark = max(*mark, now)
	return d
}

func (sm *sampler) take(now Time) {
	w := sm.w
	dt := float64(now - sm.last) // ps
	if dt <= 0 {
		return
	}
	gbps := func(bytes float64) float64 { return bytes * 8 / dt * 1000 } // bytes per ps → Gb/s
	var total float64
	for p := range w.t.Planes {
		var rx float64
		for _, s := range w.shards {
			rx += float64(s.planeRx[p])
		}
		for _, dl := range sm.inDL[p] {
			_, part := w.arriving(dl, now)
			rx += part
		}
		d := advance(&sm.rxMark[p], rx)
		total += d
		sm.s.PlaneGbps[p] = append(sm.s.PlaneGbps[p], gbps(d))
	}
	sm.s.TotalGbps = append(sm.s.TotalGbps, gbps(total))
	for i, f := range sm.flows {
		fl := &w.wl.Flows[f]
		fs := &w.flows[f]
		got := float64(w.hosts[fl.Dst].nic.Delivered(fs.dstQP))
		for p := range w.t.Planes {
			if h, part := w.arriving(sm.inDL[p][fl.Dst], now); h != nilPkt {
				if t := w.tag(h); t.src == int32(fl.Src) && t.qpn == fs.srcQP {
					got += part
				}
			}
		}
		sm.s.FlowGbps[i] = append(sm.s.FlowGbps[i], gbps(advance(&sm.flMark[i], got)))
	}
	sm.s.TimesNs = append(sm.s.TimesNs, now.Nanoseconds())
	sm.last = now
}

// idealPs is the serialisation bound of the workload in picoseconds: the
// busiest NIC's bytes on the wire at its full rate (all planes).
func (w *World) idealPs() Time {
	tx := make([]uint64, w.t.Hosts)
	rx := make([]uint64, w.t.Hosts)
	hdr := uint64(84 + w.overhead)
	if w.cfg.Transport.Fabric == vswitch.ModeSRv6 {
		hdr += 40
	}
	mtu := uint64(w.cfg.MTU)
	for _, f := range w.wl.Flows {
		b := f.Size + (f.Size+mtu-1)/mtu*hdr
		tx[f.Src] += b
		rx[f.Dst] += b
	}
	var most uint64
	for h := range tx {
		most = max(most, tx[h], rx[h])
	}
	rate := float64(w.t.HostRate()) * float64(w.t.Planes)
	return Time(float64(most) * 8 / rate * 1e12)
}

func (w *World) result(sm *sampler, wall time.Duration) *Result {
	t := w.t
	r := &Result{
		Scenario: w.cfg.Name, Transport: w.cfg.Transport.Name, Seed: w.cfg.Seed,
		Hosts: t.Hosts, Planes: t.Planes, Flows: len(w.flows),
		Events: w.events(), SimTimeNs: w.stopped.Nanoseconds(), StoppedBy: w.stopBy, WallS: wall.Seconds(),
		Drops: map[string]uint64{}, Series: sm.s,
	}
	// Flows.
	first, last := never, Time(0)
	var fcts []int64
	var sum float64
	for i, fs := range w.flows {
		fl := &w.wl.Flows[i]
		fr := FlowResult{ID: fl.ID, Src: fl.Src, Dst: fl.Dst, Size: fl.Size, Tag: fl.Tag, StartNs: -1, FCTNs: -1, RecvNs: -1, Failed: fs.failed}
		if fs.start >= 0 {
			fr.StartNs = fs.start.Nanoseconds()
			first = min(first, fs.start)
		}
		if fs.failed {
			r.FlowsFailed++
		}
		if fs.sendDone >= 0 && fs.recvDone >= 0 && !fs.failed {
			r.FlowsCompleted++
			fct := (fs.sendDone - fs.start).Nanoseconds()
			fr.FCTNs, fr.RecvNs = fct, (fs.recvDone - fs.start).Nanoseconds()
			fcts = append(fcts, fct)
			sum += float64(fct)
			last = max(last, fs.sendDone, fs.recvDone)
		}
		r.FlowResults = append(r.FlowResults, fr)
	}
	if len(fcts) > 0 {
		slices.Sort(fcts)
		r.FCT = FCTStats{Min: fcts[0], P50: percentile(fcts, 0.5), P99: percentile(fcts, 0.99), Max: fcts[len(fcts)-1], Mean: sum / float64(len(fcts))}
	}
	if r.FlowsCompleted > 0 && first < never {
		r.CompletionNs = (last - first).Nanoseconds()
	}
	r.IdealNs = w.idealPs().Nanoseconds() + w.baseRTT.Nanoseconds()
	if r.CompletionNs > 0 {
		r.GoodputFractionOfIdeal = float64(r.IdealNs) / float64(r.CompletionNs)
	}

	// Transport counters.
	var ts TransportStats
	for h := range w.hosts {
		ts.add(w.hosts[h].nic.Stats())
	}
	r.BytesSent, r.BytesDelivered = ts.PayloadSent, ts.PayloadReceived
	r.Retransmits, r.TrimNACKs, r.LossTimeouts = ts.Retransmits, ts.TrimNACKs+ts.LastHopNACKs, ts.LossTimeouts
	r.EVStates.Skips, r.EVStates.Retired, r.EVStates.Resurrected = ts.EVSkips, ts.EVRetired, ts.EVResurrected
	if ts.Drops > 0 {
		r.Drops["nic"] = ts.Drops
	}

	// Switch and link counters.
	var sc vswitch.Counters
	for i := range w.sws {
		sc.Add(&w.sws[i].vs.Counters)
	}
	r.Trims = sc.Trimmed + sc.TrimmedLastHop
	r.ECNMarks = sc.Marked
	r.PFCPauses = sc.Pauses
	for _, s := range w.shards {
		for c, n := range s.linkDrops {
			sc.Drops[c] += n
		}
		for k := range s.evTo {
			switch k {
			case 0:
				r.EVStates.ToGood += s.evTo[k]
			case 2:
				r.EVStates.ToAssumedBad += s.evTo[k]
			case 3:
				r.EVStates.ToDenied += s.evTo[k]
			}
		}
		r.QPErrors += s.qpErrors
	}
	for c, n := range sc.Drops {
		if n > 0 {
			r.Drops[vswitch.DropCause(c).String()] = n
		}
	}

	w.failureResults(r)
	r.baseRTT = w.baseRTT
	capEnd := w.stopped
	if r.FlowsCompleted == r.Flows && last > 0 {
		capEnd = last
	}
	r.CapacityRemoved = w.capacity(capEnd)

	// Planes and link classes over the completion interval (the whole
	// run when flows did not complete: their bytes were sent over it).
	dur := float64(last - max(first, 0))
	if dur <= 0 || r.FlowsCompleted < r.Flows {
		dur = float64(w.stopped - max(min(first, w.stopped), 0))
	}
	if dur <= 0 {
		dur = float64(w.stopped)
	}
	for p := range t.Planes {
		pr := PlaneResult{Plane: p}
		for _, s := range w.shards {
			pr.TxBytes += s.planeTx[p]
			pr.RxPayloadBytes += s.planeRx[p]
		}
		if dur > 0 {
			pr.GoodputGbps = float64(pr.RxPayloadBytes) * 8 / dur * 1000
			pr.Utilisation = float64(pr.TxBytes) * 8 / (float64(t.Hosts) * float64(t.HostRate()) * dur / 1e12)
		}
		r.PerPlane = append(r.PerPlane, pr)
	}
	r.Links = w.linkClasses(dur)
	return r
}

// percentile returns the nearest-rank p-quantile of sorted, which is not
// empty.
func percentile(sorted []int64, p float64) int64 {
	i := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// failuresMet returns the elements of the failures that the connection
// of the flow with ID id sent data packets into, in the order the
// failures happened.
func (w *World) failuresMet(id int) []string {
	conn, ok := w.connOf(id)
	if !ok {
		return nil
	}
	var out []string
	for f := range w.fails {
		k := uint64(f)<<32 | uint64(conn)
		for _, s := range w.shards {
			if _, ok := s.qpLast[k]; ok {
				out = append(out, w.fails[f].element)
				break
			}
		}
	}
	return out
}

// connOf returns the connection (World.qpFlow's flow index) of the flow
// with ID id.
func (w *World) connOf(id int) (int32, bool) {
	i := slices.IndexFunc(w.wl.Flows, func(f workload.Flow) bool { return f.ID == id })
	if i < 0 {
		return 0, false
	}
	conn, ok := w.qpFlow[qpKey(int32(w.wl.Flows[i].Src), w.flows[i].srcQP)]
	return conn, ok
}

// failureResults fills r's failures, bypass times and their per-flow
// distribution.
func (w *World) failureResults(r *Result) {
	if len(w.fails) == 0 {
		return
	}
	// Per (failure, flow): the flow's first and last data packets into
	// it, over every partition.
	first, last := map[uint64]Time{}, map[uint64]Time{}
	for _, s := range w.shards {
		for k, t := range s.qpLast {
			last[k] = max(last[k], t)
		}
		for k, t := range s.qpFirst {
			if f, ok := first[k]; !ok || t < f {
				first[k] = t
			}
		}
	}
	perFail := make([][]int64, len(w.fails))
	var reacts []int64
	for k, t := range last {
		f := k >> 32
		perFail[f] = append(perFail[f], (t - w.fails[f].at).Nanoseconds())
		reacts = append(reacts, (t - first[k]).Nanoseconds())
	}
	var worst int64
	var all []int64
	for i, f := range w.fails {
		fr := FailureResult{Kind: string(f.kind), Element: f.element, AtNs: f.at.Nanoseconds(), UntilNs: f.until.Nanoseconds()}
		var lastData, lastCtl Time = -1, -1
		for _, s := range w.shards {
			fr.DataPackets += s.failHits[i]
			fr.ControlPackets += s.failCtl[i]
			if s.failHits[i] > 0 {
				lastData = max(lastData, s.failLast[i])
			}
			if s.failCtl[i] > 0 {
				lastCtl = max(lastCtl, s.failLastCtl[i])
			}
		}
		if lastData >= f.at {
			fr.BypassNs = (lastData - f.at).Nanoseconds()
		}
		if lastCtl >= f.at {
			fr.ControlBypassNs = (lastCtl - f.at).Nanoseconds()
		}
		if qs := perFail[i]; len(qs) > 0 {
			slices.Sort(qs)
			fr.QPs, fr.QPBypassP50Ns, fr.QPBypassP99Ns = len(qs), percentile(qs, 0.5), percentile(qs, 0.99)
			all = append(all, qs...)
		}
		worst = max(worst, fr.BypassNs)
		r.Failures = append(r.Failures, fr)
	}
	r.BypassNs = &worst
	r.BypassQP = &BypassStats{}
	if len(all) > 0 {
		slices.Sort(all)
		slices.Sort(reacts)
		*r.BypassQP = BypassStats{QPs: len(all), P50: percentile(all, 0.5), P99: percentile(all, 0.99), Max: all[len(all)-1],
			ReactP50: percentile(reacts, 0.5), ReactP99: percentile(reacts, 0.99), ReactMax: reacts[len(reacts)-1]}
	}
}

func (w *World) linkClasses(dur float64) []LinkClass {
	t := w.t
	name := func(n int32) string {
		if int(n) < t.Hosts {
			return "host"
		}
		return "t" + string(rune('0'+t.Switches[int(n)-t.Hosts].Tier))
	}
	idx := map[string]int{}
	var out []LinkClass
	for dl := range w.lk {
		info := &w.lk[dl]
		c := name(info.from) + "_" + name(info.to)
		i, ok := idx[c]
		if !ok {
			i = len(out)
			idx[c] = i
			out = append(out, LinkClass{Class: c})
		}
		u := 0.0
		if dur > 0 {
			u = float64(w.tx[dl].sentBytes) * 8 / (float64(info.rate) * dur / 1e12)
		}
		lc := &out[i]
		lc.Links++
		lc.Mean += u
		lc.Max = max(lc.Max, u)
	}
	for i := range out {
		out[i].Mean /= float64(out[i].Links)
	}
	return out
}
