package sim

import (
	"context"
	"os"
	"testing"

	"github.com/openmrc/mrc/sim/htsim"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// BenchmarkPermutation measures the event loop on a 256-host, 4-plane
// two-tier fabric carrying a 256 KiB permutation with MRC: events per
// second and wall nanoseconds per event (setup excluded).
func BenchmarkPermutation(b *testing.B) {
	tp, err := topo.Clos2(topo.Clos2Config{Hosts: 256, Planes: 4, T0Down: 16, T0Up: 16})
	if err != nil {
		b.Fatal(err)
	}
	wl, _ := workload.Permutation(256, 256<<10, 1)
	var events uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := w.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}

func htsimInputs(t testing.TB) (*topo.Topology, *workload.Workload) {
	dir := "../scenario/presets/htsim/" // bundled with mrc
	if _, err := os.Stat(dir); err != nil {
		dir = "/work/shared/data/htsim/"
		if _, err := os.Stat(dir); err != nil {
			t.Skip("htsim samples not available")
		}
	}
	tf, err := htsim.ReadTopoFile(dir + "leaf_spine_1024.topo")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tf.Build(1)
	if err != nil {
		t.Fatal(err)
	}
	wl, _, err := htsim.ReadCMFile(dir + "perm_1024n_1024c_0u_2000000b.cm")
	if err != nil {
		t.Fatal(err)
	}
	return tp, wl
}

// BenchmarkHtsimPermutation runs htsim's reference input (1024 × 2 MB on
// its 1024-host leaf-spine); htsim takes 10–12 s on this machine class.
func BenchmarkHtsimPermutation(b *testing.B) {
	tp, wl := htsimInputs(b)
	var r *Result
	for b.Loop() {
		b.StopTimer()
		w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if r, err = w.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Events), "events")
	b.ReportMetric(float64(r.FCT.Max), "tail-fct-ns")
}

// The htsim reference scenario as a regression test: every flow completes
// and the tail stays within 1.6 × the serialisation bound.
func TestHtsimPermutation(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	tp, wl := htsimInputs(t)
	r := run(t, Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
	checkComplete(t, r, wl)
	t.Logf("FCT %+v ns, ideal %d ns, %d events, %.2f s", r.FCT, r.IdealNs, r.Events, r.WallS)
	if float64(r.FCT.Max) > 1.6*float64(r.IdealNs) {
		t.Errorf("tail FCT %d ns, more than 1.6 × the ideal %d ns", r.FCT.Max, r.IdealNs)
	}
}
