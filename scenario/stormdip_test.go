package scenario

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim"
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

// TestStorm1kGoodputDip runs MRC through storm-1k and the same run
// without failures: the goodput the failures cost over the window must
// stay within the capacity they removed from the flows plus dipMargin.
// As a control, the same check must fail on a run where the goodput is
// lost to a fault the capacity figure does not count: every port of 32
// hosts drops all it carries (a lossy link of loss 1).
func TestStorm1kGoodputDip(t *testing.T) {
	if testing.Short() {
		t.Skip("two 1,024-GPU simulations (about 15 s)")
	}
	s, err := LoadPreset("storm-1k")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{Transports: []string{"mrc"}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(c sim.Config) *sim.Result {
		w, err := sim.New(c)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	clean := p.Runs[0]
	clean.Failures = nil
	base := run(clean)
	r := run(p.Runs[0])
	r.Baseline = sim.CompareBaseline(r, base)
	c, b := r.CapacityRemoved, r.Baseline
	if c == nil || b == nil || c.Flows == nil {
		t.Fatalf("capacity %v, baseline %v", c, b)
	}
	t.Logf("capacity removed: fabric %.3f, t0_t1 %.3f, flows %.3f (max %.3f), %d hosts hit (max %.3f); baseline %d ns, dip %.3f over the window, step %.3f, %d flows over the bound",
		c.Fabric, c.ByClass["t0_t1"], *c.Flows, *c.FlowsMax, c.HostsHit, c.HostsMax, b.CompletionNs, b.GoodputDip, b.StepDip, b.FlowsOverBound)
	if c.Fabric <= 0 || *c.Flows <= 0 || *c.FlowsMax < *c.Flows || c.HostsHit == 0 || c.HostsMax < c.HostsMean {
		t.Errorf("capacity figures inconsistent: %+v", c)
	}
	if err := withinCapacity(r); err != nil {
		t.Error(err)
	}

	// The control: the storm's workload, 32 hosts cut off silently.
	cut := p.Runs[0]
	cut.Failures = nil
	for h := range 32 {
		for pl := range cut.Topology.Planes {
			cut.Failures = append(cut.Failures, sim.Failure{Kind: sim.LossyLink, Element: fmt.Sprintf("h%d/p%d", h, pl), Loss: 1})
		}
	}
	cut.StopAt = 2 * time.Duration(b.CompletionNs)
	cr := run(cut)
	cr.Baseline = sim.CompareBaseline(cr, base)
	if cr.CapacityRemoved == nil || cr.CapacityRemoved.Flows == nil || cr.Baseline == nil {
		t.Fatal("the control run has no capacity figures or baseline")
	}
	if err := withinCapacity(cr); err == nil {
		t.Errorf("32 hosts cut off by an uncounted fault: the check passed (dip %.3f, capacity removed %.3f)", cr.Baseline.GoodputDip, *cr.CapacityRemoved.Flows)
	}
}
