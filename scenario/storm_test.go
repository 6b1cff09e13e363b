package scenario

import (
	"context"
	"testing"
)

// TestStorm1k runs MRC through the storm-1k preset: a drawn fault storm
// (a failure every few microseconds), a T1 reboot and a silent T1
// blackhole. Every flow must complete with no QP error and every byte
// sent must be delivered; beside the same run without failures, the
// goodput dip over the window must stay within the capacity the failures
// removed from the flows plus dipMargin (withinCapacity).
func TestStorm1k(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,024-GPU simulation (about 5 s)")
	}
	s, err := LoadPreset("storm-1k")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{Transports: []string{"mrc"}})
	if err != nil {
		t.Fatal(err)
	}
	fs := p.Runs[0].Failures
	kinds := map[string]int{}
	var last int64
	for _, f := range fs {
		kinds[string(f.Kind)]++
		last = max(last, f.At.Nanoseconds())
	}
	if gap := float64(last) / float64(len(fs)); len(fs) < 50 || gap > 5000 || kinds["link_flap"] < 20 || kinds["switch_blackhole"] < 1 || kinds["switch_reboot"] < 1 {
		t.Fatalf("%d failures, one every %.0f ns, by kind %v: not a storm", len(fs), gap, kinds)
	}
	rep, err := Run(context.Background(), p, RunOptions{Baseline: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	t.Logf("mrc: %d/%d flows in %d ns, %d retransmits, drops %v, %d failures", r.FlowsCompleted, r.Flows, r.CompletionNs, r.Retransmits, r.Drops, len(r.Failures))
	const want = 3 * 1024 * 512 << 10
	switch {
	case r.Flows != 3072 || r.FlowsCompleted != r.Flows || r.FlowsFailed != 0:
		t.Errorf("%d of %d flows completed, %d failed", r.FlowsCompleted, r.Flows, r.FlowsFailed)
	case r.QPErrors != 0:
		t.Errorf("%d QP errors", r.QPErrors)
	case r.BytesSent != want || r.BytesDelivered != r.BytesSent:
		t.Errorf("%d bytes sent, %d delivered, want %d both", r.BytesSent, r.BytesDelivered, want)
	}
	if len(r.Failures) != len(fs) {
		t.Errorf("the results list %d failures, the run had %d", len(r.Failures), len(fs))
	}
	c, b := r.CapacityRemoved, r.Baseline
	if c == nil || c.Flows == nil || b == nil {
		t.Fatalf("capacity %+v, baseline %+v", c, b)
	}
	t.Logf("capacity removed: fabric %.3f, t0_t1 %.3f, flows %.3f (max %.3f), %d hosts hit (max %.3f); without failures %d ns; dip %.3f over the window, %.3f of the step (%.3f allowed); %d flows over the bound",
		c.Fabric, c.ByClass["t0_t1"], *c.Flows, *c.FlowsMax, c.HostsHit, c.HostsMax, b.CompletionNs, b.GoodputDip, b.StepDip, b.BoundDip, b.FlowsOverBound)
	if c.Fabric <= 0 || *c.Flows <= 0 || *c.FlowsMax < *c.Flows || c.HostsHit == 0 || c.HostsMax < c.HostsMean || b.CompletionNs >= r.CompletionNs {
		t.Errorf("capacity or baseline figures inconsistent: %+v, %+v", c, b)
	}
	if err := withinCapacity(r.Result); err != nil {
		t.Error(err)
	}
}

// TestStorm1kTraining runs MRC through the storm-1k-training preset:
// storm-1k's fabric and fault storm under a training job whose steps
// each end in a data-parallel all-reduce across 128 servers. Every step
// must finish, every transfer complete with no QP error and every byte
// sent be delivered, and the results name the drawn failures. (Its
// baseline, the same run without failures, is docs/failures.md's, by
// hand: it would double the test's time.)
func TestStorm1kTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,024-GPU simulation (about 15 s)")
	}
	s, err := LoadPreset("storm-1k-training")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{Transports: []string{"mrc"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Job == nil {
		t.Fatal("storm-1k-training has no training job")
	}
	fs := p.Runs[0].Failures
	rep, err := Run(context.Background(), p, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	j := r.Job
	if j == nil {
		t.Fatal("no job result")
	}
	t.Logf("mrc: steps %v, %d retransmits, drops %v, %d failures", j.StepNs, r.Retransmits, r.Drops, len(r.Failures))
	switch {
	case j.StepsDone != j.Steps || j.Steps != 3:
		t.Errorf("%d of %d steps done", j.StepsDone, j.Steps)
	case r.FlowsCompleted != r.Flows || r.FlowsFailed != 0:
		t.Errorf("%d of %d transfers completed, %d failed", r.FlowsCompleted, r.Flows, r.FlowsFailed)
	case r.QPErrors != 0:
		t.Errorf("%d QP errors", r.QPErrors)
	case r.BytesDelivered != r.BytesSent || r.BytesSent != p.Runs[0].Workload.Bytes():
		t.Errorf("%d bytes sent, %d delivered, the job moves %d", r.BytesSent, r.BytesDelivered, p.Runs[0].Workload.Bytes())
	}
	if len(r.Failures) != len(fs) || len(fs) < 50 {
		t.Errorf("the results list %d failures, the run had %d", len(r.Failures), len(fs))
	}
	if c := r.CapacityRemoved; c == nil || c.Fabric <= 0 || r.FailedDataPackets == 0 {
		t.Errorf("capacity removed %+v, %d data packets into failures: the storm missed the job", c, r.FailedDataPackets)
	}
}
