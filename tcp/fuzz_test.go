package tcp

import (
	"testing"

	"github.com/openmrc/mrc/wire"
)

// checkSender fails unless the sender's bookkeeping is consistent: pipe
// and the lost count match the scoreboard, segments are in order within
// [una, nxt), and messages cover the stream.
func checkSender(t *testing.T, q *Conn) {
	t.Helper()
	s := &q.snd
	pipe, lost, retx := 0, 0, 0
	prev := s.una
	for i := range s.segs.Len() {
		g := s.segs.At(i)
		if g.start < prev || g.end <= g.start || g.end > s.nxt {
			t.Fatalf("segment %d [%d, %d) out of order (una %d nxt %d)", i, g.start, g.end, s.una, s.nxt)
		}
		prev = g.end
		if g.inPipe {
			pipe += g.len()
			if g.retx {
				retx++
			}
		}
		if g.lost {
			lost++
		}
		if g.inPipe && (g.lost || g.sacked) {
			t.Fatalf("segment %d in pipe and lost %v / sacked %v", i, g.lost, g.sacked)
		}
	}
	if pipe != s.pipe || lost != s.lostPending || retx != s.retxOut || s.una > s.nxt || s.nxt > s.end || s.cwnd < q.ep.cfg.MSS {
		t.Fatalf("pipe %d (scoreboard %d), lost %d (%d), resent %d (%d), una %d nxt %d end %d cwnd %d", s.pipe, pipe, s.lostPending, lost, s.retxOut, retx, s.una, s.nxt, s.end, s.cwnd)
	}
}

// checkReceiver fails unless the out-of-order ranges are disjoint,
// ascending, above nxt and counted right.
func checkReceiver(t *testing.T, q *Conn) {
	t.Helper()
	r := &q.rcv.stream
	var n uint64
	prev := r.Next()
	for i, s := range r.Ranges() {
		if s.Start <= prev || s.End <= s.Start {
			t.Fatalf("range %d [%d, %d) after %d", i, s.Start, s.End, prev)
		}
		prev = s.End
		n += s.End - s.Start
	}
	if r.Next()+n != r.Received() || q.stats.PayloadReceived != r.Received() {
		t.Fatalf("out of order %d bytes (counted %d), received %d, nxt %d", n, r.Received()-r.Next(), q.stats.PayloadReceived, r.Next())
	}
}

// FuzzHandleDatagram feeds arbitrary TCP segments (correctly addressed,
// so they reach a connection) to both ends of a transfer in progress,
// between normal exchanges: nothing panics, the sender's bookkeeping
// stays consistent, and after a segment to the receiver the transfer
// still moves data. (A forged ACK to the sender of bytes the receiver
// lacks stalls real TCP too: the sender believes it and never resends.)
func FuzzHandleDatagram(f *testing.F) {
	f.Add([]byte{0x80, 0x00, 0x81, 0x00, 0, 0, 0, 0, 0, 0, 0x40, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0}, uint16(0), false, true)
	h := Header{Flags: FlagACK, NSACK: 2, SACK: [MaxSACKBlocks]SACKBlock{{0x1000, 0x3000}, {0x5000, 0x6000}}, Ack: 0x800}
	f.Add(h.Append(nil), uint16(0), false, true)
	f.Add(h.Append(nil), uint16(4096), true, false)
	f.Fuzz(func(t *testing.T, seg []byte, payload uint16, toReceiver, ce bool) {
		d := newDumbbell(t, 2, 10e9, 0, Config{SkipChecksum: true, Variant: DCTCP}, vswitchQueue())
		fl := startFlow(d, 0, 1, 1<<20)
		d.Run(20_000, nil) // 20 µs: some data and ACKs in flight
		dst, src, to := fl.snd, fl.rcv, 0
		if toReceiver {
			dst, src, to = fl.rcv, fl.snd, 1
		}
		ip := wire.IPv6{NextHeader: ProtoTCP, HopLimit: 64, Src: src.src, Dst: dst.src, PayloadLen: uint16(len(seg)) + payload}
		if ce {
			ip.SetECN(wire.CE)
		}
		if len(seg) >= 4 { // keep the ports right, so the segment reaches the connection
			seg[0], seg[1], seg[2], seg[3] = byte(src.sport>>8), byte(src.sport), byte(dst.sport>>8), byte(dst.sport)
		}
		pkt := append(ip.Append(nil), seg...)
		d.eps[to].HandleDatagram(d.Now, 0, pkt, len(pkt)+int(payload))
		d.Kick(to)
		checkSender(t, fl.snd)
		checkReceiver(t, fl.rcv)
		before := fl.rcv.rcv.stream.Next()
		d.Run(200_000_000, func() bool { return fl.rcv.rcv.stream.Next() > before+1<<16 || fl.finished() })
		checkSender(t, fl.snd)
		if toReceiver && fl.rcv.rcv.stream.Next() <= before && !fl.finished() {
			t.Fatalf("no progress after the fuzzed segment: %d bytes in order, %d posted", fl.rcv.rcv.stream.Next(), fl.posted)
		}
	})
}

// TestSenderInvariantsUnderLoss runs the sender checks over a lossy
// transfer, where the scoreboard is busy.
func TestSenderInvariantsUnderLoss(t *testing.T) {
	d := newDumbbell(t, 3, 10e9, 5e3, Config{MinRTO: 1e6}, vswitchQueue())
	f0 := startFlow(d, 0, 2, 4<<20)
	f1 := startFlow(d, 1, 2, 4<<20)
	track(d, f0, f1)
	for steps := 0; !(f0.finished() && f1.finished()); steps++ {
		if !d.Step() || steps > 5_000_000 {
			t.Fatalf("stuck at %v", d.Now)
		}
		if steps%64 == 0 {
			checkSender(t, f0.snd)
			checkSender(t, f1.snd)
			checkReceiver(t, f0.rcv)
			checkReceiver(t, f1.rcv)
		}
	}
	if f0.snd.Stats().Retransmits+f1.snd.Stats().Retransmits == 0 {
		t.Fatal("no losses: the test does not exercise recovery")
	}
}
