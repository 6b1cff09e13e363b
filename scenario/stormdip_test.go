package scenario

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// dipMargin is how far, in share of the bytes, the goodput over the
// window may fall below the capacity the failures left the flows: two
// percentage points, for what the capacity figure does not count, the
// packets in flight into a failure and the loss timeout (four base RTTs)
// before a silent one is known (docs/failures.md).
const dipMargin = 0.02

// withinCapacity reports whether r's goodput dip against its baseline
// stays within the capacity removed from its flows plus dipMargin.
func withinCapacity(r *sim.Result) error {
	c, b := r.CapacityRemoved, r.Baseline
	switch {
	case c == nil || c.Flows == nil || b == nil:
		return fmt.Errorf("no capacity figures or baseline")
	case b.GoodputDip > *c.Flows+dipMargin:
		return fmt.Errorf("goodput dip %.1f%% over the %d ns window, capacity removed %.1f%% + %.0f%% margin",
			100*b.GoodputDip, b.CompletionNs, 100**c.Flows, 100*dipMargin)
	}
	return nil
}

// TestGoodputDipCheckCatchesUncountedLoss is withinCapacity's control:
// a permutation on 64 hosts × 4 planes, 8 of them silently cut off (every
// port drops all it carries, a lossy link of loss 1, which the capacity
// figure does not count as removed). The goodput they lose is not
// explained by the capacity removed, and the check must say so.
func TestGoodputDipCheckCatchesUncountedLoss(t *testing.T) {
	tp, err := topo.Clos2(topo.Clos2Config{Hosts: 64, Planes: 4, T0Down: 8, T0Up: 4})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := workload.Permutation(64, 256<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(fs []sim.Failure, stop time.Duration) *sim.Result {
		w, err := sim.New(sim.Config{Topology: tp, Workload: wl, Transport: sim.MRC(), Seed: 1, Failures: fs, StopAt: stop})
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := run(nil, 0)
	var cut []sim.Failure
	for h := range 8 {
		for p := range 4 {
			cut = append(cut, sim.Failure{Kind: sim.LossyLink, Element: fmt.Sprintf("h%d/p%d", h*8, p), Loss: 1})
		}
	}
	r := run(cut, 2*time.Duration(base.CompletionNs))
	r.Baseline = sim.CompareBaseline(r, base)
	if r.CapacityRemoved == nil || r.CapacityRemoved.Flows == nil || r.Baseline == nil {
		t.Fatal("no capacity figures or baseline")
	}
	t.Logf("dip %.3f, capacity removed %.3f", r.Baseline.GoodputDip, *r.CapacityRemoved.Flows)
	if err := withinCapacity(r); err == nil {
		t.Errorf("8 of 64 hosts cut off by an uncounted fault: the check passed (dip %.3f, capacity removed %.3f)", r.Baseline.GoodputDip, *r.CapacityRemoved.Flows)
	}
}
