package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/wire"
)

// observed runs a small trimming, failing fabric with taps and a tracer,
// and returns a digest of what the hooks saw, the result, and the
// captured packets.
func observed(t *testing.T, workers int, taps []string) (string, *Result, []Captured) {
	t.Helper()
	tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 2})
	wl := smallPerm(t, 16, 256<<10)
	var caps []Captured
	h := fnv.New64a()
	var last Time
	ordered := true
	var lastTrace int64
	traces := 0
	kinds := map[trace.Kind]int{}
	cfg := Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 5, Workers: workers,
		Failures: []Failure{{Kind: LinkDown, Element: "random:t0-t1", Count: 2, At: 5 * time.Microsecond}},
		Taps:     taps,
		Capture: func(c *Captured) {
			if c.Time < last {
				ordered = false
			}
			last = c.Time
			fmt.Fprintf(h, "%d %s %v %d %x\n", c.Time, c.Iface, c.Out, c.WireLen, c.Data)
			cp := *c
			cp.Data = bytes.Clone(c.Data)
			caps = append(caps, cp)
		},
		Trace: func(host int, r *trace.Record) {
			if int64(r.Time) < lastTrace {
				ordered = false
			}
			lastTrace = int64(r.Time)
			traces++
			kinds[r.Kind]++
			fmt.Fprintf(h, "%d %+v\n", host, *r)
		},
	}
	r := run(t, cfg)
	if !ordered {
		t.Error("observations out of time order")
	}
	if traces == 0 || kinds[trace.PacketSent] == 0 || kinds[trace.QPState] == 0 {
		t.Errorf("trace: %d records, kinds %v", traces, kinds)
	}
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], h.Sum64())
	return fmt.Sprintf("%x/%d/%d", sum, len(caps), traces), r, caps
}

// TestTapsAndTrace checks the capture points and the trace: every point
// sees packets, in time order, the same for any number of workers, and
// observing does not change the run.
func TestTapsAndTrace(t *testing.T) {
	taps := []string{"h0/p0", "h3", "t1-p0-0:1", "t0-p1-2/t1-p1-1", "flow:5"}
	a, ra, caps := observed(t, 1, taps)
	b, rb, _ := observed(t, 2, taps)
	if a != b {
		t.Errorf("observations differ between 1 and 2 workers: %s vs %s", a, b)
	}
	plain := run(t, Config{Topology: clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 2}), Workload: smallPerm(t, 16, 256<<10),
		Transport: MRC(), Seed: 5, Failures: []Failure{{Kind: LinkDown, Element: "random:t0-t1", Count: 2, At: 5 * time.Microsecond}}})
	ra.WallS, rb.WallS, plain.WallS = 0, 0, 0
	if ra.Events != plain.Events || ra.CompletionNs != plain.CompletionNs || ra.Retransmits != plain.Retransmits {
		t.Errorf("observing changed the run: %d events vs %d", ra.Events, plain.Events)
	}
	seen := map[string]int{}
	var out, in int
	for _, c := range caps {
		seen[c.Iface]++
		var p wire.Packet
		if err := p.Decode(c.Data); err != nil {
			t.Fatalf("%s: undecodable packet: %v", c.Iface, err)
		}
		if c.Out {
			out++
		} else {
			in++
		}
		if c.WireLen < len(c.Data) {
			t.Fatalf("wire length %d below the %d bytes captured", c.WireLen, len(c.Data))
		}
	}
	wl := smallPerm(t, 16, 256<<10)
	f5 := wl.Flows[4]
	for _, want := range []string{"h0/p0", "h3/p0", "h3/p1", "t1-p0-0:1", "t0-p1-2:5", fmt.Sprintf("h%d/p0", f5.Src), fmt.Sprintf("h%d/p1", f5.Dst)} {
		if seen[want] == 0 {
			t.Errorf("no packets at %s (saw %v)", want, seen)
		}
	}
	if out == 0 || in == 0 {
		t.Errorf("%d out, %d in", out, in)
	}

	// Bad capture points are errors naming them.
	for _, bad := range []string{"h99/p0", "h1/p5", "t1-p0-0:99", "flow:999", "flow:x", "t0-p0-0/t1-p1-0", "nope"} {
		_, err := New(Config{Topology: clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 2}), Workload: wl,
			Transport: MRC(), Taps: []string{bad}, Capture: func(*Captured) {}})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("tap %q: %v", bad, err)
		}
	}
}

// TestRoCEBypass checks that RoCE data packets count as traffic into a
// failed element (bypass time), as MRC's do.
func TestRoCEBypass(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 2})
	r := run(t, Config{Topology: tp, Workload: smallPerm(t, 16, 1<<20), Transport: RoCE(false), Seed: 1, StopAt: 3 * time.Millisecond,
		Failures: []Failure{{Kind: LinkDown, Element: "random:t0-t1", Count: 4, At: 5 * time.Microsecond}}})
	if r.BypassNs == nil {
		t.Fatal("no bypass time")
	}
	var pk uint64
	for _, f := range r.Failures {
		pk += f.DataPackets
	}
	if pk == 0 || *r.BypassNs == 0 {
		t.Errorf("RoCE sent %d data packets into the failed links, bypass %d ns", pk, *r.BypassNs)
	}
}
