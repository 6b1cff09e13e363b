package ib

import (
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/verbs"
)

func hostAddr(h int) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(h + 1)})
}

// loop is the steady-state transfer loop: the requester builds a data
// packet, the responder takes it and (every AckEvery packets, or at once
// for a FECN) acknowledges, the requester takes the ACKs and reposts
// WRITEs as they complete. Payloads are phantom, as in the simulator.
type loop struct {
	tb         testing.TB
	eps        [2]*Endpoint
	qps        [2]*roce.QP
	src, dst   verbs.MR
	bufA, bufB []byte
	now        mtime.Time
	id         uint64
	data       int
}

func newLoop(tb testing.TB, cfg Config) *loop {
	l := &loop{tb: tb, bufA: make([]byte, MaxPacket(4096)+8), bufB: make([]byte, MaxPacket(4096)+8)}
	for s := range 2 {
		c := cfg
		c.Ports, c.SkipICRC, c.Seed = []netip.Addr{hostAddr(s)}, true, 1
		ep, err := NewEndpoint(c)
		if err != nil {
			tb.Fatal(err)
		}
		l.eps[s] = ep
		l.qps[s], _ = ep.CreateQP()
	}
	for s := range 2 {
		o := 1 - s
		if err := l.eps[s].Connect(0, l.qps[s], 0, hostAddr(o), l.qps[o].QPN()); err != nil {
			tb.Fatal(err)
		}
	}
	l.src, _ = l.eps[0].RegisterPhantom(1 << 30)
	l.dst, _ = l.eps[1].RegisterPhantom(1 << 30)
	l.post()
	l.post()
	return l
}

func (l *loop) post() {
	l.id++
	if err := l.qps[0].PostWrite(l.now, verbs.WriteRequest{ID: l.id, Local: l.src, Remote: l.dst, Length: l.src.Len}); err != nil {
		l.tb.Fatal(err)
	}
}

// step moves one data packet (80 ns apart, 400 Gb/s-like) and everything
// it triggers.
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
	for ev, ok := a.PollEvent(); ok; ev, ok = a.PollEvent() {
		if ev.Kind == verbs.EventWriteDone {
			l.post()
		}
	}
	l.now += 80
	if l.now >= a.NextTimeout() {
		a.HandleTimeout(l.now)
	}
	if l.now >= b.NextTimeout() {
		b.HandleTimeout(l.now)
	}
}

var loopConfigs = []struct {
	name string
	cfg  Config
}{
	{"static", Config{}},
	{"fecn", Config{CC: CCCCA}},
	{"adaptive", Config{ReorderWindow: 1024}},
}

// BenchmarkSteadyState measures the transfer loop per data packet,
// sender and receiver together, as roce's benchmark of the same name
// does: IB's RC without congestion control (static routing), with CCA's
// reaction point on every packet (fecn), and with the reorder window of
// adaptive routing (nothing arrives out of order here: its bookkeeping
// only).
func BenchmarkSteadyState(b *testing.B) {
	for _, tc := range loopConfigs {
		b.Run(tc.name, func(b *testing.B) {
			l := newLoop(b, tc.cfg)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l.step()
			}
			b.StopTimer()
			if s := l.qps[0].Stats(); s.Retransmits > 0 || l.eps[1].Stats().Dropped() > 0 {
				b.Fatalf("%d retransmissions, %d drops in a lossless loop", s.Retransmits, l.eps[1].Stats().Dropped())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(l.data), "ns/pkt")
		})
	}
}

// TestSteadyStateAllocs checks that the steady-state loop allocates
// nothing in any configuration, and moves a packet per step.
func TestSteadyStateAllocs(t *testing.T) {
	for _, tc := range loopConfigs {
		l := newLoop(t, tc.cfg)
		for range 5000 { // past the first completions and ring growth
			l.step()
		}
		if n := testing.AllocsPerRun(2000, l.step); n != 0 {
			t.Fatalf("%s: %v allocations per packet", tc.name, n)
		}
		if l.data < 6000 {
			t.Fatalf("%s: only %d packets moved", tc.name, l.data)
		}
	}
}
