package roce

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// bottleneck runs two long flows from hosts 0 and 1 into host 2 through
// the switch's 100 Gb/s egress port to host 2, which marks ECN RED-style
// with the DCQCN paper's congestion point parameters (Kmin 5 KB, Kmax
// 200 KB, Pmax 1%). Flow 1 starts at start1. It returns each flow's
// goodput over [from, to) in Gb/s, and the largest and mean queue at the
// bottleneck over that window in bytes.
type bottleneckResult struct {
	gbps        [2]float64
	maxQ, meanQ int
	cuts        [2]uint64
	cnps        uint64
}

func bottleneck(t *testing.T, cc CCMode, dc DCQCNConfig, start1, from, to time.Duration) bottleneckResult {
	t.Helper()
	n := newTnet(t, tnetConfig{Hosts: 3, Seed: 42, CC: cc, DCQCN: dc, ECNMin: 5 << 10, ECNMax: 200 << 10, PMax: 0.01})
	var qs [2]*QP
	for h := range 2 {
		qs[h], _ = n.connect(h, 2, ConnectAttr{}, ConnectAttr{})
		src, _ := n.eps[h].RegisterPhantom(1 << 40)
		dst, _ := n.eps[2].RegisterPhantom(1 << 40)
		post := func(id uint64) {
			if err := qs[h].PostWrite(n.now, verbs.WriteRequest{ID: id, Local: src, Remote: dst, Length: 1 << 30}); err != nil {
				t.Fatal(err)
			}
		}
		post(0)
		post(1)
		_ = post
	}
	started := false
	n.kick(0)
	n.OnEvent = func(h int, ev verbs.Event) {
		if ev.Kind == verbs.EventQPError {
			t.Fatalf("host %d: %v", h, ev)
		}
	}
	g := &n.egress[2]
	var sumQ, samples int64
	var base [2]int64
	for n.now < mtime.Time(to) {
		if !started && n.now >= mtime.Time(start1) {
			started = true
			n.kick(1)
		}
		if n.now >= mtime.Time(from) && samples == 0 {
			base = [2]int64{g.served[0], g.served[1]}
			g.maxBytes = g.bytes
		}
		if n.now >= mtime.Time(from) {
			sumQ += int64(g.bytes)
			samples++
		}
		if !n.Step() {
			t.Fatal("network idle")
		}
	}
	var r bottleneckResult
	for h := range 2 {
		r.gbps[h] = float64(g.served[h]-base[h]) * 8 / (to - from).Seconds() / 1e9
		r.cuts[h] = qs[h].Stats().RateCuts
	}
	r.maxQ, r.meanQ = g.maxBytes, int(sumQ/max(samples, 1))
	r.cnps = n.eps[2].Stats().CNPsSent
	return r
}

// TestDCQCNBottleneck closes the loop through real endpoints: flow 0 runs
// alone at line rate, flow 1 joins at 2 ms, both DCQCN. Once DCQCN has
// recovered from the join (the paper's R_AI of 40 Mb/s and 10 MB byte
// counter take a while at 100 Gb/s), the two split the bottleneck about
// evenly, fill it, and keep its queue bounded, below Kmax on average.
// Without congestion control the same scenario builds a queue without
// bound.
func TestDCQCNBottleneck(t *testing.T) {
	if testing.Short() {
		t.Skip("40 ms of simulated 100 Gb/s")
	}
	r := bottleneck(t, CCDCQCN, DCQCNConfig{}, 2*time.Millisecond, 25*time.Millisecond, 40*time.Millisecond)
	t.Logf("DCQCN, 25–40 ms: %.1f + %.1f Gb/s, queue max %d KB mean %d KB; %v cuts, %d CNPs",
		r.gbps[0], r.gbps[1], r.maxQ>>10, r.meanQ>>10, r.cuts, r.cnps)
	total := r.gbps[0] + r.gbps[1]
	jain := total * total / (2 * (r.gbps[0]*r.gbps[0] + r.gbps[1]*r.gbps[1]))
	switch {
	case r.cuts[0] == 0 || r.cuts[1] == 0:
		t.Fatalf("a flow never cut its rate: %v", r.cuts)
	case total < 90:
		t.Fatalf("bottleneck underused: %.1f Gb/s", total)
	case jain < 0.98 || min(r.gbps[0], r.gbps[1]) < 0.4*total:
		t.Fatalf("unfair: %.1f vs %.1f Gb/s (Jain %.3f)", r.gbps[0], r.gbps[1], jain)
	case r.maxQ > 512<<10 || r.meanQ > 200<<10:
		t.Fatalf("queue max %d KB mean %d KB", r.maxQ>>10, r.meanQ>>10)
	}

	none := bottleneck(t, CCNone, DCQCNConfig{}, 2*time.Millisecond, 3*time.Millisecond, 4*time.Millisecond)
	t.Logf("no CC, 3–4 ms: %.1f + %.1f Gb/s, queue max %d KB", none.gbps[0], none.gbps[1], none.maxQ>>10)
	if none.maxQ < 10<<20 || none.cnps != 0 {
		t.Fatalf("without CC the queue peaked at %d KB (%d CNPs): the scenario does not congest", none.maxQ>>10, none.cnps)
	}
}
