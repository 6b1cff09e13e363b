package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
)

// TestTraceMatchesStats runs a lossy transfer with a tracer on each side
// and checks that the records agree with the counters.
func TestTraceMatchesStats(t *testing.T) {
	var counts [2]map[trace.Kind]uint64
	var tracers [2]trace.Tracer
	for s := range 2 {
		counts[s] = map[trace.Kind]uint64{}
		var last mtime.Time
		tracers[s] = trace.Func(func(r *trace.Record) {
			if r.Time < last {
				t.Fatalf("trace time went backwards: %v after %v", r.Time, last)
			}
			last = r.Time
			counts[s][r.Kind]++
		})
	}
	cfg := testnet.Config{Seed: 11, Planes: 2, Loss: 0.01, Trim: 0.02, ECN: 0.05, Tracers: tracers}
	x := newTransfer(t, cfg, mrc.EVProfile{}, mrc.RTSAttr{}, 2<<20)
	x.postAll(4)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatal("unfinished")
	}
	x.check()
	a, b := x.qa.Stats(), x.qb.Stats()
	for _, c := range []struct {
		name  string
		side  int
		kind  trace.Kind
		count uint64
	}{
		{"sent", 0, trace.PacketSent, a.DataSent},
		{"retransmitted", 0, trace.PacketRetransmitted, a.Retransmits},
		{"acked", 0, trace.PacketAcked, a.DataSent},
		{"lost", 0, trace.PacketLost, a.LossTimeouts},
		{"nacked", 0, trace.PacketNacked, a.NACKsReceived},
		{"probes", 0, trace.ProbeSent, a.ProbesSent},
		{"received", 1, trace.PacketReceived, b.DataReceived},
		{"trimmed", 1, trace.PacketTrimmed, b.TrimmedReceived},
		{"sacks", 1, trace.SACKSent, b.SACKsSent},
		{"dropped", 1, trace.PacketDropped, x.net.Endpoint(testnet.B).Stats().Dropped()},
		{"qp states", 0, trace.QPState, 3},
	} {
		if got := counts[c.side][c.kind]; got != c.count {
			t.Errorf("%s: %d records, counters say %d", c.name, got, c.count)
		}
	}
	if counts[0][trace.PacketLost] == 0 || counts[0][trace.PacketNacked] == 0 || counts[0][trace.CwndChanged] == 0 {
		t.Fatalf("a lossy run traced no losses, NACKs or window changes: %v", counts[0])
	}
}
