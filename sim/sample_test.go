package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// checkCapacity fails if any sample of r's series, or any utilisation,
// exceeds the capacity it measures: all host ports (total), one plane's
// host ports (per plane), the receiving NIC (per flow), a link (1).
func checkCapacity(t *testing.T, name string, r *Result, tp *topo.Topology) {
	t.Helper()
	port := float64(tp.HostRate()) / 1e9 // Gb/s
	over := func(what string, v, limit float64) {
		if v > limit*(1+1e-9) {
			t.Errorf("%s: %s %.2f, above the %.2f it can carry", name, what, v, limit)
		}
	}
	s := &r.Series
	for i := range s.TimesNs {
		at := fmt.Sprintf("t=%d ns:", s.TimesNs[i])
		over(at+" total Gb/s", s.TotalGbps[i], port*float64(tp.Hosts*tp.Planes))
		for p := range s.PlaneGbps {
			over(fmt.Sprintf("%s plane %d Gb/s", at, p), s.PlaneGbps[p][i], port*float64(tp.Hosts))
		}
		for f := range s.FlowGbps {
			over(fmt.Sprintf("%s flow %d Gb/s", at, s.FlowIDs[f]), s.FlowGbps[f][i], port*float64(tp.Planes))
		}
	}
	for _, p := range r.PerPlane {
		over(fmt.Sprintf("plane %d utilisation", p.Plane), p.Utilisation, 1)
	}
	for _, l := range r.Links {
		over(l.Class+" max utilisation", l.Max, 1)
	}
}

// TestSeriesWithinCapacity runs small scenarios over many seeds, with
// samples a few packets long and not a multiple of a packet's
// serialisation (where attributing a packet's bytes to the instant it
// completes overshoots most), and checks that no sample of any series
// exceeds the capacity it measures.
func TestSeriesWithinCapacity(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		// Samples are taken between windows, which last the host links'
		// delay.
		hostDelay := time.Duration(300+97*seed) * time.Nanosecond
		tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 4, HostDelay: hostDelay})
		var wl *workload.Workload
		var err error
		switch seed % 3 {
		case 0:
			wl, err = workload.Permutation(16, 1<<20, seed)
		case 1:
			wl, err = workload.AllToAll(16, 64<<10, true)
		case 2:
			wl, err = workload.Incast(8, 256<<10, -1, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		tr := Transports()[int(seed)%len(Transports())]
		every := time.Duration(300+int(seed)*137) * time.Nanosecond
		var fails []Failure
		if seed%2 == 0 {
			fails = []Failure{{Kind: LinkDown, Element: "random:t0-t1", At: 5 * time.Microsecond}}
		}
		r := run(t, Config{Topology: tp, Workload: wl, Transport: tr, Seed: seed, SampleEvery: every, SeriesFlows: 64,
			Failures: fails, StopAt: 5 * time.Millisecond})
		checkCapacity(t, fmt.Sprintf("seed %d, %s, %s, samples %v", seed, wl.Name, tr.Name, every), r, tp)
	}
}

// TestSeriesWithinCapacityReordered checks a flow's series where a
// responder holds packets out of order: InfiniBand under adaptive
// routing, with a link failure that loses packets in flight. The resend
// that fills a gap releases the whole held run at one instant; the flow's
// series counts those bytes as they arrived, so it stays within what the
// receiving NIC can carry.
func TestSeriesWithinCapacityReordered(t *testing.T) {
	tr, err := LookupTransport("ib-ar")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 4; seed++ {
		tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 4, HostDelay: 500 * time.Nanosecond})
		wl, err := workload.Permutation(16, 1<<20, seed)
		if err != nil {
			t.Fatal(err)
		}
		fails := []Failure{{Kind: LinkDown, Element: "random:t0-t1", At: 5 * time.Microsecond}}
		r := run(t, Config{Topology: tp, Workload: wl, Transport: tr, Seed: seed, SampleEvery: 700 * time.Nanosecond,
			SeriesFlows: 64, Failures: fails, StopAt: 100 * time.Millisecond})
		if r.Retransmits == 0 {
			t.Fatalf("seed %d: no resends, so no gap was filled; the test checks nothing", seed)
		}
		checkCapacity(t, fmt.Sprintf("seed %d", seed), r, tp)
	}
}
