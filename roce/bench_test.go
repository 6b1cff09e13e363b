package roce

import (
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// loop is the steady-state transfer loop of the benchmark: the requester
// builds a data packet, the responder validates, places and (every
// AckEvery packets) acknowledges it, and the requester processes the
// ACKs and reposts WRITEs as they complete.
type loop struct {
	tb         testing.TB
	eps        [2]*Endpoint
	qps        [2]*QP
	src, dst   verbs.MR
	bufA, bufB []byte
	now        mtime.Time
	id         uint64
	data       int
}

func newLoop(tb testing.TB, phantom bool) *loop {
	const mtu = 4096
	l := &loop{tb: tb, bufA: make([]byte, MaxHeaderLen+mtu+8), bufB: make([]byte, MaxHeaderLen+mtu+8)}
	for s := range 2 {
		ep, err := NewEndpoint(Config{Ports: []netip.Addr{hostAddr(s)}, MTU: mtu, SkipICRC: phantom, Seed: 1})
		if err != nil {
			tb.Fatal(err)
		}
		l.eps[s] = ep
		l.qps[s], _ = ep.CreateQP()
	}
	for s := range 2 {
		o := 1 - s
		if err := l.qps[s].Connect(0, ConnectAttr{Remote: hostAddr(o), RemoteQPN: l.qps[o].QPN()}); err != nil {
			tb.Fatal(err)
		}
	}
	if phantom {
		l.src, _ = l.eps[0].RegisterPhantom(1 << 30)
		l.dst, _ = l.eps[1].RegisterPhantom(1 << 30)
	} else {
		l.src, _ = l.eps[0].RegisterMemory(make([]byte, 64<<20))
		l.dst, _ = l.eps[1].RegisterMemory(make([]byte, 64<<20))
	}
	l.post()
	l.post()
	return l
}

func (l *loop) post() {
	l.id++
	if err := l.qps[0].PostWrite(l.now, verbs.WriteRequest{ID: l.id, Local: l.src, Remote: l.dst, Length: min(l.src.Len, l.dst.Len)}); err != nil {
		l.tb.Fatal(err)
	}
}

// step moves one data packet (at 400 Gb/s-like spacing) and everything it
// triggers.
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
	l.now += 80
	if l.now >= a.NextTimeout() {
		a.HandleTimeout(l.now)
	}
	if l.now >= b.NextTimeout() {
		b.HandleTimeout(l.now)
	}
}

// BenchmarkSteadyState measures the transfer loop per data packet, as
// the MRC core's benchmark of the same name does. "phantom" leaves the
// payload out (the protocol's own cost, as in the simulator); "4KiB"
// carries and places real payloads, with the UDP checksum and ICRC
// computed and verified over them.
func BenchmarkSteadyState(b *testing.B) {
	for _, tc := range []struct {
		name    string
		phantom bool
	}{{"phantom", true}, {"4KiB", false}} {
		b.Run(tc.name, func(b *testing.B) {
			l := newLoop(b, tc.phantom)
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
			b.ReportMetric(float64(l.data)*4096*8/b.Elapsed().Seconds()/1e9, "Gbit/s")
		})
	}
}

// TestSteadyStateAllocs checks that the steady-state loop allocates
// nothing, with payloads and without.
func TestSteadyStateAllocs(t *testing.T) {
	for _, phantom := range []bool{true, false} {
		l := newLoop(t, phantom)
		for range 5000 { // past the first completions and ring growth
			l.step()
		}
		if n := testing.AllocsPerRun(2000, l.step); n != 0 {
			t.Fatalf("phantom=%v: %v allocations per packet", phantom, n)
		}
		if l.data < 6000 {
			t.Fatalf("only %d packets moved", l.data)
		}
	}
}
