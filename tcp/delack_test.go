package tcp

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// TestDelayedAcksHalveTheAcks: on a bulk transfer the receiver sends an
// ACK for every second full-sized segment (RFC 5681 §4.2), besides its
// first quick ACKs, and the delayed-ACK timer never has to fire (the
// message's last segment, PSH, is acknowledged at once); with delayed
// ACKs off, every segment is acknowledged.
func TestDelayedAcksHalveTheAcks(t *testing.T) {
	const size = 8 << 20
	for _, off := range []bool{false, true} {
		d := newDumbbell(t, 2, 10e9, 5*time.Microsecond, Config{DisableDelayedACK: off}, vswitch.QueueConfig{Buffer: 4 << 20})
		f := startFlow(d, 0, 1, size)
		track(d, f)
		if !d.Run(time.Second, f.finished) {
			t.Fatalf("delayed ACKs off=%v: not done at %v", off, d.Now)
		}
		segs, st := f.snd.Stats().DataSent, f.rcv.Stats()
		t.Logf("delayed ACKs off=%v: %d segments, %d ACKs, %d by the timer, done at %v", off, segs, st.SACKsSent, st.DelayedAcks, d.Now)
		quick := uint64(quickAcks(d.eps[1].cfg.MSS))
		switch {
		case off && st.SACKsSent != segs:
			t.Errorf("delayed ACKs off: %d ACKs for %d segments, want one each", st.SACKsSent, segs)
		case !off && (st.SACKsSent < segs/2 || st.SACKsSent > segs/2+quick+1):
			t.Errorf("%d ACKs for %d segments, want one per two plus at most %d quick ACKs", st.SACKsSent, segs, quick)
		case st.DelayedAcks != 0 || d.Now.Sub(0) > 10*time.Millisecond:
			t.Errorf("%d ACKs waited for the timer; done at %v", st.DelayedAcks, d.Now)
		}
	}
}

// pair is two endpoints wired by hand: the test carries each segment and
// sees each ACK as it is sent.
type pair struct {
	t    *testing.T
	now  mtime.Time
	a, b *Endpoint
	ca   *Conn // the sender
	cb   *Conn // the receiver
	buf  []byte
	segs []sent // segments a sent, in order
}

// sent is a segment as sent: its headers and its length on the wire.
type sent struct {
	pkt     []byte
	wireLen int
}

func newPair(t *testing.T, cfg Config) *pair {
	p := &pair{t: t, buf: make([]byte, IPv6HeaderRoom)}
	for i, ep := range []**Endpoint{&p.a, &p.b} {
		c := cfg
		c.Ports = []netip.Addr{addr(i)}
		var err error
		if *ep, err = NewEndpoint(c); err != nil {
			t.Fatal(err)
		}
	}
	p.ca, _ = p.a.CreateConn()
	p.cb, _ = p.b.CreateConn()
	if err := p.ca.Connect(0, ConnectAttr{Remote: addr(1), RemoteQPN: p.cb.QPN()}); err != nil {
		t.Fatal(err)
	}
	if err := p.cb.Connect(0, ConnectAttr{Remote: addr(0), RemoteQPN: p.ca.QPN()}); err != nil {
		t.Fatal(err)
	}
	return p
}

// send posts n bytes at the sender and collects the segments its window
// lets out.
func (p *pair) send(n uint64) {
	if err := p.ca.PostWrite(p.now, writeOf(0, n)); err != nil {
		p.t.Fatal(err)
	}
	for {
		tx, ok := p.a.PollTransmit(p.now, 1, p.buf)
		if !ok {
			return
		}
		p.segs = append(p.segs, sent{append([]byte(nil), p.buf[:tx.Len]...), tx.WireLen})
	}
}

// ack is what the receiver sent: its cumulative ACK, SACK blocks and ECE.
type ack struct {
	ack   uint32
	nsack int
	ece   bool
}

// deliver hands segment i to the receiver, CE-marked if ce, and returns
// the ACKs it sends at once.
func (p *pair) deliver(i int, ce bool) []ack {
	pkt := append([]byte(nil), p.segs[i].pkt...)
	if ce {
		var ip wire.IPv6
		if _, err := ip.Decode(pkt); err != nil {
			p.t.Fatal(err)
		}
		ip.SetECN(wire.CE)
		ip.Append(pkt[:0])
	}
	p.b.HandleDatagram(p.now, 0, pkt, p.segs[i].wireLen)
	return p.acks()
}

// acks returns the ACKs the receiver has to send now.
func (p *pair) acks() []ack {
	var out []ack
	for {
		tx, ok := p.b.PollTransmit(p.now, 1, p.buf)
		if !ok {
			return out
		}
		var h Header
		if _, err := h.Decode(p.buf[wire.IPv6Len:tx.Len]); err != nil {
			p.t.Fatal(err)
		}
		out = append(out, ack{ack: h.Ack, nsack: h.NSACK, ece: h.Flags&FlagECE != 0})
	}
}

// TestWhenTheReceiverAcks: the receiver acknowledges at once its first
// quick ACKs (Linux's quickack mode), every second full-sized segment,
// a segment out of order and the one that fills the hole (RFC 5681
// §4.2), a duplicate and a segment that ends a message; a lone segment
// waits for the delayed-ACK timer, which fires after DelAck.
func TestWhenTheReceiverAcks(t *testing.T) {
	const mss = 4096
	p := newPair(t, Config{MSS: mss, InitCwnd: 16})
	p.send(14*mss + 100) // 15 segments, the last short with PSH
	if len(p.segs) != 15 {
		t.Fatalf("%d segments sent, want 15", len(p.segs))
	}
	quick := quickAcks(mss)
	expect := func(what string, got []ack, n int) {
		t.Helper()
		if len(got) != n {
			t.Errorf("%s: %d ACKs at once, want %d", what, len(got), n)
		}
	}
	for i := range quick {
		expect("a quick ACK", p.deliver(i, false), 1)
	}
	i := quick
	expect("a lone full segment", p.deliver(i, false), 0)
	if at := p.b.NextTimeout(); at != p.now.Add(DefaultDelAck) {
		t.Errorf("the receiver's timer at %v, want the delayed ACK at %v", at, p.now.Add(DefaultDelAck))
	}
	expect("the second full segment", p.deliver(i+1, false), 1)
	ooo := p.deliver(i+3, false)
	expect("a segment out of order", ooo, 1)
	if len(ooo) == 1 && (ooo[0].ack != p.ca.sendISN+uint32((i+2)*mss) || ooo[0].nsack != 1) {
		t.Errorf("out of order: cumulative ACK %d with %d SACK blocks, want the hole's start and one", ooo[0].ack-p.ca.sendISN, ooo[0].nsack)
	}
	expect("the segment that fills the hole", p.deliver(i+2, false), 1)
	expect("a duplicate", p.deliver(i+2, false), 1)
	expect("a lone full segment", p.deliver(i+4, false), 0)
	p.now = p.b.NextTimeout()
	p.b.HandleTimeout(p.now)
	expect("the delayed-ACK timer", p.acks(), 1)
	if n := p.cb.Stats().DelayedAcks; n != 1 {
		t.Errorf("%d ACKs by the timer, want 1", n)
	}
	expect("a lone full segment", p.deliver(i+5, false), 0)
	for j := i + 6; j < 14; j++ {
		p.deliver(j, false)
	}
	expect("the segment that ends the message", p.deliver(14, false), 1)
	if p.b.NextTimeout() != mtime.Never {
		t.Errorf("a timer left at %v with nothing owed", p.b.NextTimeout())
	}
}

// TestDCTCPEchoWithDelayedAcks: DCTCP's receiver with delayed ACKs
// follows RFC 8257 §3.2's two-state machine: a change of CE state is
// acknowledged at once, after an ACK with the old ECE for the segments
// received before it, so over any pattern of marks the bytes the
// sender sees acknowledged with ECE are exactly the CE-marked bytes,
// with about half as many ACKs as segments while the state holds.
func TestDCTCPEchoWithDelayedAcks(t *testing.T) {
	const mss, n = 1000, 60
	for seed := range uint64(20) {
		p := newPair(t, Config{MSS: mss, Variant: DCTCP, InitCwnd: n})
		p.send(n * mss)
		rng := rand.New(rand.NewPCG(seed, 1))
		marked, echoed, acks := 0, 0, 0
		ce, prevCE := false, false
		prev := p.ca.sendISN
		for i := range n {
			if rng.IntN(4) == 0 { // runs of marks and of no marks
				ce = !ce
			}
			if ce {
				marked += mss
			}
			got := p.deliver(i, ce)
			if i >= quickAcks(mss) && ce != prevCE && len(got) == 0 {
				t.Errorf("seed %d segment %d: CE state changed to %v without an immediate ACK", seed, i, ce)
			}
			prevCE = ce
			for _, a := range got {
				if a.ece {
					echoed += int(a.ack - prev)
				}
				prev = a.ack
				acks++
			}
		}
		if prev != p.ca.sendISN+n*mss {
			t.Fatalf("seed %d: data acknowledged to %d of %d", seed, prev-p.ca.sendISN, n*mss)
		}
		if echoed != marked {
			t.Errorf("seed %d: %d bytes acknowledged with ECE, %d CE-marked", seed, echoed, marked)
		}
		if acks >= n {
			t.Errorf("seed %d: %d ACKs for %d segments: none delayed", seed, acks, n)
		}
	}
}

// TestProbeAllowsForDelayedAck: with one segment in flight whose ACK the
// receiver may delay, the tail loss probe waits 2·SRTT plus the
// delayed-ACK timeout (RFC 8985 §7.2's WCDelAckT); not when the segment
// ends a message (acknowledged at once), nor with delayed ACKs off.
func TestProbeAllowsForDelayedAck(t *testing.T) {
	const mss, rtt = 1000, 10 * time.Microsecond
	for _, c := range []struct {
		bytes uint64
		off   bool
		want  time.Duration
	}{{2 * mss, false, 2*rtt + DefaultDelAck}, {mss, false, 2 * rtt}, {2 * mss, true, 2 * rtt}} {
		p := newPair(t, Config{MSS: mss, InitCwnd: 1, HandshakeRTT: rtt, DisableDelayedACK: c.off})
		p.send(c.bytes)
		if len(p.segs) != 1 {
			t.Fatalf("%d segments sent, want one", len(p.segs))
		}
		if got := p.a.NextTimeout().Sub(p.now); got != c.want {
			t.Errorf("%d bytes, delayed ACKs off=%v: probe after %v, want %v", c.bytes, c.off, got, c.want)
		}
	}
}
