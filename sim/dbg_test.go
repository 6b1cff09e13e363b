package sim

import (
	"testing"

	"github.com/openmrc/mrc/sim/topo"
)

func TestDbgMP(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 2, T0Down: 8, T0Up: 4})
	wl := smallPerm(t, 32, 1<<20)
	for _, n := range []string{"tcp", "mptcp"} {
		tr, _ := LookupTransport(n)
		r := run(t, Config{Topology: tp, Workload: wl, Transport: tr, Seed: 4})
		t.Logf("%s: completion %d ns, %d retransmits, %d loss timeouts drops %v p99 %v", n, r.CompletionNs, r.Retransmits, r.LossTimeouts, r.Drops, r.FCT)
	}
}
