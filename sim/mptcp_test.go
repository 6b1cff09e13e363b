package sim

import (
	"testing"

	"github.com/openmrc/mrc/sim/topo"
)

// MPTCP delivers every byte of a permutation once, over every plane, and
// the same seed gives the same JSON.
func TestMPTCPDeliversDeterministically(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 2, T0Down: 8, T0Up: 4})
	wl := smallPerm(t, 32, 1<<20)
	tr, err := LookupTransport("mptcp")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Topology: tp, Workload: wl, Transport: tr, Seed: 4}
	r := run(t, cfg)
	checkComplete(t, r, wl)
	if a, b := stripWall(t, r), stripWall(t, run(t, cfg)); a != b {
		t.Errorf("same seed, different results")
	}
	for p, pl := range r.PerPlane {
		if pl.RxPayloadBytes == 0 {
			t.Errorf("plane %d carried nothing: subflows should spread over the planes", p)
		}
	}
	t.Logf("completion %d ns, %d retransmits", r.CompletionNs, r.Retransmits)
}
