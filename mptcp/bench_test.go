package mptcp

import (
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/internal/testkit/dumbbell"
	"github.com/openmrc/mrc/tcp"
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

func newLoop(tb testing.TB, cc CC) *loop {
	l := &loop{tb: tb}
	for s := range 2 {
		ep, err := NewEndpoint(Config{CC: cc, TCP: tcp.Config{Ports: []netip.Addr{addr(s)}, SkipChecksum: true}})
		if err != nil {
			tb.Fatal(err)
		}
		l.eps[s] = ep
		l.conns[s], _ = ep.CreateConn()
	}
	for s := range 2 {
		o := 1 - s
		if err := l.conns[s].Connect(0, ConnectAttr{Remote: []netip.Addr{addr(o)}, RemoteQPN: l.conns[o].QPN()}); err != nil {
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
// sender and receiver, the segment and its ACK, 8 subflows, for each
// congestion control (package tcp's BenchmarkSteadyState is the same loop
// over one TCP connection).
func BenchmarkSteadyState(b *testing.B) {
	for _, cc := range []CC{LIA, OLIA, Uncoupled} {
		b.Run(cc.String(), func(b *testing.B) {
			l := newLoop(b, cc)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l.Step()
			}
			b.StopTimer()
			// A subflow's lone segment may draw a tail loss probe while
			// its receiver delays the ACK (docs/mptcp.md): no loss.
			if s := l.conns[0].Stats(); s.Retransmits > s.Subflows.TailProbes || l.eps[1].Stats().Dropped() > 0 {
				b.Fatalf("%d retransmissions (%d probes), %d drops in a lossless loop", s.Retransmits, s.Subflows.TailProbes, l.eps[1].Stats().Dropped())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(l.Data), "ns/pkt")
		})
	}
}

// TestSteadyStateAllocs checks that the steady-state loop allocates
// nothing, and that data flows on every subflow.
func TestSteadyStateAllocs(t *testing.T) {
	for _, cc := range []CC{LIA, OLIA} {
		l := newLoop(t, cc)
		for range 50000 { // past the first completions and ring growth
			l.Step()
		}
		if n := testing.AllocsPerRun(20000, l.Step); n != 0 {
			t.Fatalf("%v: %v allocations per segment", cc, n)
		}
		s := l.conns[0].Stats()
		if l.Data < 60000 || s.WritesDone == 0 {
			t.Fatalf("%v: only %d segments moved, %d messages done", cc, l.Data, s.WritesDone)
		}
		for i := range l.conns[0].subs {
			if l.conns[0].Subflow(i).Stats().DataSent == 0 {
				t.Errorf("%v: subflow %d sent nothing", cc, i)
			}
		}
	}
}
