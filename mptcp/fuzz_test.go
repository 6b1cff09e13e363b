package mptcp

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// FuzzDSS: Decode never panics, and what it accepts re-encodes to the
// same bytes but for the flags that mean nothing (reserved bits, the
// width of an absent field; the option's length says whether a mapping
// has a checksum, so every field is kept) and decodes to the same fields.
func FuzzDSS(f *testing.F) {
	for _, d := range []DSS{
		{HasACK: true, ACK64: true, DataACK: 1 << 40},
		{HasACK: true, ACK64: true, DataACK: 9, HasMap: true, DSN64: true, DSN: 1 << 33, SSN: 7, Length: 4096},
		{HasACK: true, DataACK: 3, HasMap: true, DSN: 5, SSN: 1, Length: 10, HasChecksum: true, Checksum: 0xbeef, DataFIN: true},
		{HasMap: true, DSN: 1, SSN: 2, Length: 3},
	} {
		f.Add(d.Append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d DSS
		if d.Decode(b) != nil {
			return
		}
		enc := d.Append(nil)
		if len(enc) != d.Len() || len(enc) != int(b[1]) {
			t.Fatalf("re-encoded to %d bytes (Len %d), the input said %d", len(enc), d.Len(), b[1])
		}
		flags := b[3] & 0x1f // reserved bits dropped, and the width flags of absent fields
		if flags&flagA == 0 {
			flags &^= flaga
		}
		if flags&flagM == 0 {
			flags &^= flagm
		}
		if string(enc[:2]) != string(b[:2]) || string(enc[4:]) != string(b[4:len(enc)]) || enc[3] != flags {
			t.Fatalf("re-encoded % x from % x", enc, b[:len(enc)])
		}
		var g DSS
		if err := g.Decode(enc); err != nil || g != d {
			t.Fatalf("round trip: %+v (%v), want %+v", g, err, d)
		}
	})
}

// FuzzHandleDatagram feeds arbitrary TCP segments, with a DSS option of
// the fuzzer's, to a subflow of either end of a transfer in progress,
// between normal exchanges: nothing panics, and a transfer that a
// segment to the receiver could not corrupt (it cannot forge what the
// sender believes) still delivers every byte once. The receive window
// is smaller than the transfer, so a mapping it admits lies within the
// data stream, where the real data overlaps it; one past the window is
// dropped. (A forged data ACK to the sender of bytes the receiver lacks
// stalls MPTCP as a forged ACK stalls TCP.)
func FuzzHandleDatagram(f *testing.F) {
	h := tcp.Header{Flags: tcp.FlagACK, Ack: 0x800, Window: 0xffff}
	d := DSS{HasACK: true, ACK64: true, DataACK: 0x801, HasMap: true, DSN64: true, DSN: 0x1001, SSN: 1, Length: 100}
	h.MPTCPLen = len(d.Append(h.MPTCP[:0]))
	f.Add(h.Append(nil), uint16(100), true, uint8(1))
	f.Add(h.Append(nil), uint16(0), false, uint8(0))
	h.NSACK, h.SACK[0] = 1, tcp.SACKBlock{Left: 0x1000, Right: 0x3000}
	f.Add(h.Append(nil), uint16(0), false, uint8(2))
	// 100 bytes mapped just past the stream's end, 1 MiB on.
	h = tcp.Header{Flags: tcp.FlagACK, Seq: 0x20000, Window: 0xffff}
	d = DSS{HasMap: true, DSN64: true, DSN: 1<<20 + 1, SSN: 0x20001, Length: 100}
	h.MPTCPLen = len(d.Append(h.MPTCP[:0]))
	f.Add(h.Append(nil), uint16(100), true, uint8(0))
	f.Fuzz(func(t *testing.T, seg []byte, payload uint16, toReceiver bool, sub uint8) {
		cfg := Config{Subflows: 3, RecvWindow: 256 << 10, TCP: tcp.Config{SkipChecksum: true, MinRTO: time.Millisecond}}
		n := newNet(t, 2, 10e9, 0, cfg, tcp.Config{}, vswitch.QueueConfig{Buffer: 24 << 10})
		fl := n.startMPTCP(0, 1, 1<<20)
		n.track(fl)
		n.Run(20_000, nil) // 20 µs: some data and ACKs in flight
		snd, rcv := fl.snd.(*Conn), fl.rcv.(*Conn)
		dst, src, to := snd, rcv, 0
		if toReceiver {
			dst, src, to = rcv, snd, 1
		}
		i := int(sub) % len(dst.subs)
		ip := wire.IPv6{NextHeader: tcp.ProtoTCP, HopLimit: 64, Src: addr(1 - to).As16(), Dst: addr(to).As16(), PayloadLen: uint16(len(seg)) + payload}
		if len(seg) >= 4 { // keep the ports right, so the segment reaches the subflow
			sp, dp := src.Subflow(i).LocalPort(), dst.Subflow(i).LocalPort()
			seg[0], seg[1], seg[2], seg[3] = byte(sp>>8), byte(sp), byte(dp>>8), byte(dp)
		}
		pkt := append(ip.Append(nil), seg...)
		n.hosts[to].HandleDatagram(n.Now, 0, pkt, len(pkt)+int(payload))
		n.Kick(to)
		if !toReceiver {
			n.Run(n.Now.Sub(0)+time.Second, fl.finished)
			return
		}
		if !n.Run(n.Now.Sub(0)+2*time.Second, fl.finished) || rcv.Received() != 1<<20 {
			t.Fatalf("after the fuzzed segment: %+v, %d bytes placed", *fl, rcv.Received())
		}
	})
}
