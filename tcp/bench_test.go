package tcp

import (
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/internal/testkit/dumbbell"
	"github.com/openmrc/mrc/verbs"
)

// loop is the steady-state transfer loop of the benchmark
// (dumbbell.Pair), with its two endpoints and the connection between them,
// reposting messages as they complete.
type loop struct {
	*dumbbell.Pair
	tb    testing.TB
	eps   [2]*Endpoint
	conns [2]*Conn
	id    uint64
}

func newLoop(tb testing.TB, v Variant, verify bool) *loop {
	l := &loop{tb: tb}
	for s := range 2 {
		ep, err := NewEndpoint(Config{Ports: []netip.Addr{addr(s)}, Variant: v, SkipChecksum: !verify})
		if err != nil {
			tb.Fatal(err)
		}
		l.eps[s] = ep
		l.conns[s], _ = ep.CreateConn()
	}
	for s := range 2 {
		o := 1 - s
		if err := l.conns[s].Connect(0, ConnectAttr{Remote: addr(o), RemoteQPN: l.conns[o].QPN()}); err != nil {
			tb.Fatal(err)
		}
	}
	l.Pair = dumbbell.NewPair(l.eps[0], l.eps[1], l.post)
	l.post()
	l.post()
	return l
}

func (l *loop) post() {
	l.id++
	if err := l.conns[1].PostRecv(l.id); err != nil {
		l.tb.Fatal(err)
	}
	if err := l.conns[0].PostWrite(l.Now, verbs.WriteRequest{ID: l.id, Length: 64 << 20}); err != nil {
		l.tb.Fatal(err)
	}
}

// BenchmarkSteadyState measures the transfer loop per data segment:
// sender and receiver, the segment and its ACK. "verify" checks the
// checksum of every received segment (the simulator skips it).
func BenchmarkSteadyState(b *testing.B) {
	for _, tc := range []struct {
		name   string
		v      Variant
		verify bool
	}{{"newreno", NewReno, false}, {"dctcp", DCTCP, false}, {"dctcp-verify", DCTCP, true}} {
		b.Run(tc.name, func(b *testing.B) {
			l := newLoop(b, tc.v, tc.verify)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l.Step()
			}
			b.StopTimer()
			if s := l.conns[0].Stats(); s.Retransmits > 0 || l.eps[1].Stats().Dropped() > 0 {
				b.Fatalf("%d retransmissions, %d drops in a lossless loop", s.Retransmits, l.eps[1].Stats().Dropped())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(l.Data), "ns/pkt")
		})
	}
}

// TestSteadyStateAllocs checks that the steady-state loop allocates
// nothing, with and without checksum verification.
func TestSteadyStateAllocs(t *testing.T) {
	for _, tc := range []struct {
		v      Variant
		verify bool
	}{{NewReno, false}, {DCTCP, true}} {
		l := newLoop(t, tc.v, tc.verify)
		for range 50000 { // past the first completions and ring growth
			l.Step()
		}
		if n := testing.AllocsPerRun(20000, l.Step); n != 0 {
			t.Fatalf("%v: %v allocations per segment", tc.v, n)
		}
		if l.Data < 60000 || l.conns[0].Stats().WritesDone == 0 {
			t.Fatalf("only %d segments moved, %d messages done", l.Data, l.conns[0].Stats().WritesDone)
		}
	}
}
