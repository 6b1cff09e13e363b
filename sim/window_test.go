package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/trace"
)

// Windows run node by node give the run that time order gives, to the bit:
// the results, every trace record and every captured packet, in the same
// order. The cases use every kind of event: failures of each kind (lossy
// links draw random numbers, reboots and flaps are actions), trimming
// incasts, PFC frames, credits, TCP's timers.
func TestNodeOrderMatchesTimeOrder(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 4, T0Down: 8, T0Up: 4})
	perm := smallPerm(t, 32, 256<<10)
	incast, err := workload.Incast(24, 256<<10, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	failures := failuresOfEveryKind()
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"mrc-failures", Config{Workload: perm, Transport: MRC(), Failures: failures}},
		{"mrc-incast", Config{Workload: incast, Transport: MRC()}},
		{"roce-pfc-incast", Config{Workload: incast, Transport: RoCE(true)}},
		{"ib-ar-failures", Config{Workload: perm, Transport: ibTransport(t, "ib-ar"), Failures: failures[3:]}},
		{"dctcp-failures", Config{Workload: perm, Transport: ibTransport(t, "dctcp"), Failures: failures[2:]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Topology, cfg.Seed, cfg.HostGroups = tp, 7, 3
			byTime, timeOrdered := observedRun(t, cfg, true)
			byNode, nodeOrdered := observedRun(t, cfg, false)
			if timeOrdered || !nodeOrdered {
				t.Fatalf("windows run node by node: %v with timeOrder set, %v without; want false, true", timeOrdered, nodeOrdered)
			}
			if byTime != byNode {
				t.Errorf("node order and time order differ:\n%.300s\n%.300s", byTime, byNode)
			}
		})
	}
}

// observedRun runs cfg with a capture point at a host and a switch and a
// tracer, in time order if timeOrder, and returns the results' JSON with a
// digest of what the hooks saw, and whether its windows ran node by node.
func observedRun(t *testing.T, cfg Config, timeOrder bool) (string, bool) {
	t.Helper()
	h := fnv.New64a()
	cfg.Taps = []string{"h3", "t1-p0-2"}
	cfg.Capture = func(c *Captured) {
		fmt.Fprintf(h, "%d %s %v %d %x\n", c.Time, c.Iface, c.Out, c.WireLen, c.Data)
	}
	cfg.Trace = func(host int, r *trace.Record) { fmt.Fprintf(h, "%d %+v\n", host, *r) }
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.timeOrder = timeOrder
	r, err := w.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkComplete(t, r, cfg.Workload)
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], h.Sum64())
	return fmt.Sprintf("%x\n%s", sum, stripWall(t, r)), w.nodeOrder
}
