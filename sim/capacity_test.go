package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim/topo"
)

// TestCapacityRemoved checks the arithmetic of CapacityRemoved on a fabric
// small enough to work out by hand: 16 hosts, 2 planes, per plane 2 T0s of
// 8 hosts and 4 T1s. T0 t0-p1-0 blackholes for the whole run: hosts 0-7
// lose plane 1 (half their ports) and so do their flows; the T0-T1 link
// t0-p0-0/t1-p0-0 is down for the first 20 µs: a flow between the two
// T0s of plane 0 loses a quarter of that plane's paths meanwhile.
func TestCapacityRemoved(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 8, T0Up: 4})
	wl := smallPerm(t, 16, 1<<20)
	const down = 20 * time.Microsecond
	w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 3, Failures: []Failure{
		{Kind: SwitchBlackhole, Element: "t0-p1-0"},
		{Kind: LinkDown, Element: "t0-p0-0/t1-p0-0", Until: down}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkComplete(t, r, wl)
	c := r.CapacityRemoved
	if c == nil || c.Flows == nil || c.WindowNs != r.CompletionNs {
		t.Fatalf("capacity %+v, completion %d ns", c, r.CompletionNs)
	}
	win := float64(c.WindowNs)
	linkShare := float64(down.Nanoseconds()) / win
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-3 {
			t.Errorf("%s: %.5f, want %.5f", what, got, want)
		}
	}
	// 48 links: 32 host links, 16 T0-T1; the T0 takes 8 + 4.
	near("fabric", c.Fabric, (12+linkShare)/48)
	near("host_t0", c.ByClass["host_t0"], 8.0/32)
	near("t0_t1", c.ByClass["t0_t1"], (4+linkShare)/16)
	near("hosts_mean", c.HostsMean, 8*0.5/16)
	near("hosts_max", c.HostsMax, 0.5)
	if c.HostsHit != 8 {
		t.Errorf("%d hosts hit, want 8", c.HostsHit)
	}
	var mean, worst float64
	for i, f := range r.FlowResults {
		a, b := f.Src < 8, f.Dst < 8
		share := 0.0
		if a || b {
			share = 0.5
		}
		if a != b {
			overlap := max(0, min(float64(f.StartNs+f.FCTNs), float64(down.Nanoseconds()))-float64(f.StartNs))
			share += 0.125 * overlap / float64(f.FCTNs)
		}
		near("flow", c.PerFlow[i], share)
		mean += share / float64(len(r.FlowResults))
		worst = max(worst, share)
	}
	near("flows", *c.Flows, mean)
	near("flows_max", *c.FlowsMax, worst)
}

// TestFlowsCutOff: host 3 loses plane 0 to its T0's blackhole and plane 1
// to its link going down, so its two flows have no path left and cannot
// finish; every other flow, plane 0 gone or not, finishes. The run stops
// at its duration with exactly those two counted as cut off.
func TestFlowsCutOff(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 8, T0Up: 4})
	wl := smallPerm(t, 16, 256<<10)
	r := run(t, Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 3, StopAt: 2 * time.Millisecond, Failures: []Failure{
		{Kind: SwitchBlackhole, Element: "t0-p0-0"},
		{Kind: LinkDown, Element: "h3/p1", At: time.Microsecond}}})
	cut := 0
	for _, f := range wl.Flows {
		if f.Src == 3 || f.Dst == 3 {
			cut++
		}
	}
	if cut != 2 {
		t.Fatalf("host 3 has %d flows, want 2", cut)
	}
	if r.StoppedBy != StoppedDuration || r.FlowsCompleted != r.Flows-cut {
		t.Fatalf("stopped by %s with %d of %d flows completed, want all but %d", r.StoppedBy, r.FlowsCompleted, r.Flows, cut)
	}
	if c := r.CapacityRemoved; c == nil || c.FlowsCutOff != cut {
		t.Fatalf("capacity removed %+v, want %d flows cut off", c, cut)
	}
}

// A link is down while any failure holds it: a flap on a host link whose
// T0 is down, and the end of one failure of a link another still holds,
// leave it down. Before, each failure's end brought the link up, the NIC
// was told its port was up, and it sent into a dead T0.
func TestOverlappingFailuresHoldALink(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 8, T0Up: 4})
	wl := smallPerm(t, 16, 1<<20)
	const us = time.Microsecond
	w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 3, Failures: []Failure{
		{Kind: SwitchDown, Element: "t0-p0-0"},
		{Kind: LinkFlap, Element: "h0/p0", At: 5 * us, Until: 30 * us, FlapRate: 2e5, DownFor: 2 * us},
		{Kind: LinkDown, Element: "t0-p1-0/t1-p1-0", Until: 20 * us},
		{Kind: SwitchReboot, Element: "t1-p1-0", At: 10 * us, Until: 40 * us}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkComplete(t, r, wl)
	c := r.CapacityRemoved
	if c == nil {
		t.Fatal("no capacity figures")
	}
	win := float64(c.WindowNs)
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-3 {
			t.Errorf("%s: %.5f, want %.5f", what, got, want)
		}
	}
	// The T0 takes its 8 host links and 4 uplinks for the whole run; the
	// link down until 20 µs stays down until the reboot ends at 40 µs,
	// and the reboot takes the T1's other link for its 30 µs.
	near("host_t0", c.ByClass["host_t0"], 8.0/32)
	near("t0_t1", c.ByClass["t0_t1"], (4+(40e3+30e3)/win)/16)
	h0 := tp.HostLink[0*tp.Planes+0]
	for at := Time(0); at < Time(r.CompletionNs)*1000; at += Time(us.Nanoseconds()) * 1000 {
		if w.linkUpAt(int(h0), at) {
			t.Fatalf("h0/p0 up at %v under its dead T0", at)
		}
	}
}

// TestBoundDip checks the step bound by hand: flow 0 starts at 0, takes
// 40 µs without failures and lost half its paths (bound 0 + 80 + the
// margin of six 5 µs base RTTs = 110 µs); flow 1 starts at 60 µs, takes
// 40 µs and lost nothing (60 + 40 + 30 = 130 µs). The run without
// failures ends at 100 µs, so the capacity removed allows a step dip of
// 1 − 100/130. A flow that lost every path leaves no bound.
func TestBoundDip(t *testing.T) {
	const us = 1000
	base := &Result{CompletionNs: 100 * us, FlowResults: []FlowResult{{StartNs: 0, FCTNs: 40 * us}, {StartNs: 60 * us, FCTNs: 40 * us}}}
	r := &Result{Flows: 2, FlowsCompleted: 2, CompletionNs: 150 * us, baseRTT: 5 * time.Microsecond,
		FlowResults:     []FlowResult{{StartNs: 0, FCTNs: 90 * us}, {StartNs: 60 * us, FCTNs: 90 * us}},
		CapacityRemoved: &CapacityRemoved{PerFlow: []float64{0.5, 0}}}
	b := CompareBaseline(r, base)
	if b.BoundNs != 130*us || math.Abs(b.BoundDip-(1-100.0/130)) > 1e-9 || math.Abs(b.StepDip-(1-100.0/150)) > 1e-9 {
		t.Errorf("bound %d ns, bound dip %.4f, step dip %.4f; want 130000, %.4f, %.4f", b.BoundNs, b.BoundDip, b.StepDip, 1-100.0/130, 1-100.0/150)
	}
	if b.FlowsOverBound != 1 || b.WorstOverNs != 20*us {
		t.Errorf("%d flows over their bound, worst by %d ns; want flow 1 by 20000", b.FlowsOverBound, b.WorstOverNs)
	}
	r.CapacityRemoved.PerFlow[0] = 1
	if b := CompareBaseline(r, base); b.BoundNs != 0 || b.BoundDip != 1 {
		t.Errorf("a flow cut off: bound %d ns, dip %.3f; want 0, 1", b.BoundNs, b.BoundDip)
	}
}
