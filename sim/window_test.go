package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"regexp"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/trace"
)

// Windows run node by node give the run that time order gives, to the bit:
// the results, every trace record and every captured packet, in the same
// order, on runs with every kind of event (everyKindOfEvent).
func TestNodeOrderMatchesTimeOrder(t *testing.T) {
	for _, c := range everyKindOfEvent(t) {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.HostGroups = 3
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

// namedConfig is a test case: a configuration and its name.
type namedConfig struct {
	name string
	cfg  Config
}

// everyKindOfEvent returns runs, seeded, on one 32-host fabric, that use
// every kind of event: failures of each kind (lossy links draw random
// numbers, reboots and flaps are actions), trimming incasts, PFC frames,
// credits, TCP's timers.
func everyKindOfEvent(t *testing.T) []namedConfig {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 4, T0Down: 8, T0Up: 4})
	perm := smallPerm(t, 32, 256<<10)
	incast, err := workload.Incast(24, 256<<10, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	failures := failuresOfEveryKind()
	cases := []namedConfig{
		{"mrc-failures", Config{Workload: perm, Transport: MRC(), Failures: failures}},
		{"mrc-incast", Config{Workload: incast, Transport: MRC()}},
		{"roce-pfc-incast", Config{Workload: incast, Transport: RoCE(true)}},
		{"ib-ar-failures", Config{Workload: perm, Transport: ibTransport(t, "ib-ar"), Failures: failures[3:]}},
		{"dctcp-failures", Config{Workload: perm, Transport: ibTransport(t, "dctcp"), Failures: failures[2:]}},
	}
	for i := range cases {
		cases[i].cfg.Topology, cases[i].cfg.Seed = tp, 7
	}
	return cases
}

// TestPartitionsDoNotChangeResults: how the fabric is cut into partitions
// (HostGroups, SwitchGroups) changes no result, trace record or captured
// packet. Only the event count does: a failure's action runs once in
// each partition it touches. The cases are everyKindOfEvent's and a
// training job under failures. On this fabric no cut changes the window
// (the links are all as long); where one does, the goodput series is
// sampled at other times, and the rest is still the same (the second
// half of the test).
func TestPartitionsDoNotChangeResults(t *testing.T) {
	events := regexp.MustCompile(`"events": \d+`)
	cases := everyKindOfEvent(t)
	j := ringJob(32, 256<<10, 2)
	tp := cases[0].cfg.Topology
	j.ReadyLatency = tp.OneWay(144 + 38)
	plan, err := job.Compile(j, tp.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, namedConfig{"mrc-job-failures", Config{Topology: tp, Seed: 7, Workload: plan.Workload, Job: plan,
		Transport: MRC(), Failures: failuresOfEveryKind()}})
	groups := [][2]int{{1, 1}, {2, 1}, {3, 2}, {4, 2}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var first string
			for _, g := range groups {
				cfg := c.cfg
				cfg.HostGroups, cfg.SwitchGroups = g[0], g[1]
				got, _ := observedRun(t, cfg, false)
				got = events.ReplaceAllString(got, "")
				if first == "" {
					first = got
				} else if got != first {
					t.Errorf("host and switch groups %v differ from %v:\n%.300s\n%.300s", g, groups[0], first, got)
				}
			}
		})
	}
	// Fabric links shorter than the host links: one switch partition has
	// no fabric link to cross, and takes windows as long as the host
	// links.
	short := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 4, T0Down: 8, T0Up: 4, HostDelay: 1500 * time.Nanosecond, FabricDelay: 600 * time.Nanosecond})
	var first string
	for _, sg := range []int{2, 1} {
		cfg := cases[0].cfg
		cfg.Topology, cfg.SwitchGroups = short, sg
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want := mtime.PicosOf(600 * time.Nanosecond); sg == 2 && w.lookahead != want || sg == 1 && w.lookahead == want {
			t.Fatalf("switch groups %d: lookahead %d ps; the case no longer changes the window", sg, w.lookahead)
		}
		r := run(t, cfg)
		r.Series = Series{}
		got := events.ReplaceAllString(stripWall(t, r), "")
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("one switch partition, longer windows: results differ:\n%.300s\n%.300s", first, got)
		}
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
