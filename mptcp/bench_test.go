package mptcp

import (
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
)

// loop is the steady-state transfer loop of the benchmark: the sender
// builds a segment on one of its subflows, the receiver takes it, places
// it in the data stream and acknowledges it, and the sender processes the
// ACK (subflow and data level), schedules more data and reposts messages
// as they complete.
type loop struct {
	tb         testing.TB
	eps        [2]*Endpoint
	conns      [2]*Conn
	bufA, bufB []byte
	now        mtime.Time
	id         uint64
	data       int
}

func newLoop(tb testing.TB, cc CC) *loop {
	l := &loop{tb: tb, bufA: make([]byte, tcp.IPv6HeaderRoom), bufB: make([]byte, tcp.IPv6HeaderRoom)}
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
	l.post()
	l.post()
	return l
}

func (l *loop) post() {
	l.id++
	if err := l.conns[1].PostRecv(l.id); err != nil {
		l.tb.Fatal(err)
	}
	if err := l.conns[0].PostWrite(l.now, verbs.WriteRequest{ID: l.id, Length: 64 << 20}); err != nil {
		l.tb.Fatal(err)
	}
}

// step moves one data segment and everything it triggers.
func (l *loop) step() {
	a, b := l.eps[0], l.eps[1]
	if tx, ok := a.PollTransmit(l.now, 1, l.bufA); ok {
		l.data++
		b.HandleDatagram(l.now, 0, l.bufA[:tx.Len], tx.WireLen)
	}
	for {
		tx, ok := b.PollTransmit(l.now, 1, l.bufB)
		if !ok {
			break
		}
		a.HandleDatagram(l.now, 0, l.bufB[:tx.Len], tx.WireLen)
	}
	for {
		ev, ok := a.PollEvent()
		if !ok {
			break
		}
		if ev.Kind == verbs.EventWriteDone {
			l.post()
		}
	}
	for _, ok := b.PollEvent(); ok; _, ok = b.PollEvent() {
	}
	l.now += 80
	if l.now >= a.NextTimeout() {
		a.HandleTimeout(l.now)
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
				l.step()
			}
			b.StopTimer()
			if s := l.conns[0].Stats(); s.Retransmits > 0 || l.eps[1].Stats().Dropped() > 0 {
				b.Fatalf("%d retransmissions, %d drops in a lossless loop", s.Retransmits, l.eps[1].Stats().Dropped())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(l.data), "ns/pkt")
		})
	}
}

// TestSteadyStateAllocs checks that the steady-state loop allocates
// nothing, and that data flows on every subflow.
func TestSteadyStateAllocs(t *testing.T) {
	for _, cc := range []CC{LIA, OLIA} {
		l := newLoop(t, cc)
		for range 50000 { // past the first completions and ring growth
			l.step()
		}
		if n := testing.AllocsPerRun(20000, l.step); n != 0 {
			t.Fatalf("%v: %v allocations per segment", cc, n)
		}
		s := l.conns[0].Stats()
		if l.data < 60000 || s.WritesDone == 0 {
			t.Fatalf("%v: only %d segments moved, %d messages done", cc, l.data, s.WritesDone)
		}
		for i := range l.conns[0].subs {
			if l.conns[0].Subflow(i).Stats().DataSent == 0 {
				t.Errorf("%v: subflow %d sent nothing", cc, i)
			}
		}
	}
}
