package roce

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// duo is two endpoints with a QP each and real memory, whose packets the
// test carries by hand.
type duo struct {
	t        *testing.T
	a, b     *Endpoint
	qa, qb   *QP
	src, dst []byte
	buf      []byte
}

func newDuo(t *testing.T, cfg Config, window int) *duo {
	const mtu = 1024
	x := &duo{t: t, buf: make([]byte, MaxHeaderLen+mtu+8)}
	mk := func(h int) *Endpoint {
		c := cfg
		c.Ports, c.MTU, c.Seed = []netip.Addr{hostAddr(h)}, mtu, 3
		ep, err := NewEndpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	x.a, x.b = mk(0), mk(1)
	x.qa, _ = x.a.CreateQP()
	x.qb, _ = x.b.CreateQP()
	if err := x.qa.Connect(0, ConnectAttr{Remote: hostAddr(1), RemoteQPN: x.qb.QPN(), ReorderWindow: window}); err != nil {
		t.Fatal(err)
	}
	if err := x.qb.Connect(0, ConnectAttr{Remote: hostAddr(0), RemoteQPN: x.qa.QPN(), ReorderWindow: window}); err != nil {
		t.Fatal(err)
	}
	x.src = make([]byte, 20*mtu)
	for i := range x.src {
		x.src[i] = byte(i*7 + i>>8)
	}
	x.dst = make([]byte, len(x.src))
	srcMR, _ := x.a.RegisterMemory(x.src)
	dstMR, _ := x.b.RegisterMemory(x.dst)
	x.qb.PostRecv(77)
	// A long WRITE, then a WRITE_IMM: 12 and 8 packets.
	x.qa.PostWrite(0, verbs.WriteRequest{ID: 1, Local: srcMR, Remote: dstMR, Length: 12*mtu - 100})
	x.qa.PostWrite(0, verbs.WriteRequest{ID: 2, Local: srcMR, Remote: dstMR, LocalOffset: 12 * mtu, RemoteOffset: 12 * mtu,
		Length: 8 * mtu, WithImm: true, Imm: 9})
	return x
}

// sendAll returns every packet ep sends at now, copied.
func (x *duo) sendAll(ep *Endpoint, now mtime.Time) [][]byte {
	var out [][]byte
	for {
		tx, ok := ep.PollTransmit(now, 1, x.buf)
		if !ok {
			return out
		}
		out = append(out, append([]byte(nil), x.buf[:tx.Len]...))
	}
}

// TestReorderWindow: a responder with a reorder window takes a WRITE and
// a WRITE_IMM whose 20 packets arrive in a shuffled order as if they had
// come in order: the data lands intact, the receive completes once, and
// nothing is NAKed, dropped or sent again. Without the window, the same
// arrivals cost sequence-error NAKs and drops.
func TestReorderWindow(t *testing.T) {
	for _, window := range []int{64, 0} {
		x := newDuo(t, Config{}, window)
		data := x.sendAll(x.a, 1)
		if len(data) != 20 {
			t.Fatalf("%d data packets, want 20", len(data))
		}
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(data), func(i, j int) { data[i], data[j] = data[j], data[i] })
		for _, p := range data {
			x.b.HandleDatagram(2, 0, p, len(p))
		}
		for _, p := range x.sendAll(x.b, 3) {
			x.a.HandleDatagram(4, 0, p, len(p))
		}
		sa, sb := x.qa.Stats(), x.qb.Stats()
		if window == 0 {
			if sb.SeqNAKsSent == 0 || sb.OutOfSequence == 0 {
				t.Errorf("in-order responder: %d NAKs, %d out of sequence, want some", sb.SeqNAKsSent, sb.OutOfSequence)
			}
			continue
		}
		if sb.NACKsSent != 0 || sb.Dropped() != 0 || sa.Retransmits != 0 || sb.Reordered == 0 {
			t.Errorf("window %d: %d NAKs, %d drops, %d retransmits, %d held", window, sb.NACKsSent, sb.Dropped(), sa.Retransmits, sb.Reordered)
		}
		if sb.PayloadArrived != sb.PayloadReceived {
			t.Errorf("window %d: %d payload bytes arrived, %d placed, want equal", window, sb.PayloadArrived, sb.PayloadReceived)
		}
		const end1 = 12*1024 - 100 // the first WRITE's end; the second starts at 12 KiB
		if !bytes.Equal(x.dst[:end1], x.src[:end1]) || !bytes.Equal(x.dst[12*1024:], x.src[12*1024:]) {
			t.Error("data placed wrong")
		}
		var imms, done int
		for ev, ok := x.b.PollEvent(); ok; ev, ok = x.b.PollEvent() {
			if ev.Kind == verbs.EventRecvImm && ev.WRID == 77 && ev.Imm == 9 {
				imms++
			}
		}
		for ev, ok := x.a.PollEvent(); ok; ev, ok = x.a.PollEvent() {
			if ev.Kind == verbs.EventWriteDone && ev.Err == nil {
				done++
			}
		}
		if imms != 1 || done != 2 {
			t.Errorf("%d receive completions (want 1), %d write completions (want 2)", imms, done)
		}
	}
}

// TestStaleACKs: under reordering an ACK can arrive after a later one; a
// QP with a reorder window ignores it without counting a drop, one
// without counts it as a stale drop.
func TestStaleACKs(t *testing.T) {
	for _, window := range []int{64, 0} {
		x := newDuo(t, Config{AckEvery: 4}, window)
		var acks [][]byte
		for _, p := range x.sendAll(x.a, 1) {
			x.b.HandleDatagram(2, 0, p, len(p))
			acks = append(acks, x.sendAll(x.b, 2)...)
		}
		if len(acks) < 3 {
			t.Fatalf("%d ACKs", len(acks))
		}
		for i := len(acks) - 1; i >= 0; i-- { // newest first
			x.a.HandleDatagram(3, 0, acks[i], len(acks[i]))
		}
		s := x.qa.Stats()
		if window > 0 && (s.StaleACKs != uint64(len(acks)-1) || s.Dropped() != 0) {
			t.Errorf("reordering QP: %d stale, %d drops; want %d and 0", s.StaleACKs, s.Dropped(), len(acks)-1)
		}
		if window == 0 && (s.StaleACKs != 0 || s.Drops[verbs.DropStale] != uint64(len(acks)-1)) {
			t.Errorf("in-order QP: %d stale, drops %v", s.StaleACKs, s.Drops)
		}
	}
}

// spyReaction is a Reaction that paces data gap ns apart after a BECN
// and records what the QP told it.
type spyReaction struct {
	gap   mtime.Time
	last  mtime.Time
	sent  int
	becns int
}

func (r *spyReaction) SendAt(now mtime.Time) mtime.Time {
	if r.becns == 0 || r.sent == 0 {
		return 0
	}
	return r.last + r.gap
}
func (r *spyReaction) OnSent(now mtime.Time, wireLen int)   { r.last = now; r.sent++ }
func (r *spyReaction) OnBECN(now mtime.Time) bool           { r.becns++; return true }
func (r *spyReaction) NextChange(now mtime.Time) mtime.Time { return mtime.Never }

// TestBECN: under CCBECN a CE-marked data packet is answered by an ACK
// carrying BECN at once; the requester hands the BECN to its reaction
// point and then sends data no sooner than the reaction point allows.
func TestBECN(t *testing.T) {
	spies := map[int]*spyReaction{}
	n := 0
	cfg := Config{CC: CCBECN, NewReaction: func(mtime.Time) Reaction {
		n++
		spies[n] = &spyReaction{gap: 1000}
		return spies[n]
	}}
	x := newDuo(t, cfg, 0)
	spy := spies[1] // qa's
	tx, ok := x.a.PollTransmit(1, 1, x.buf)
	if !ok {
		t.Fatal("nothing sent")
	}
	pkt := append([]byte(nil), x.buf[:tx.Len]...)
	wire.SetOuterECN(pkt, wire.CE)
	x.b.HandleDatagram(2, 0, pkt, len(pkt))
	ctrl := x.sendAll(x.b, 2)
	var p Packet
	if len(ctrl) != 1 || p.Decode(ctrl[0]) != nil || p.Opcode() != OpAck || p.BTH.Resv8a&becn == 0 {
		t.Fatalf("answer to a FECN: %d packets, %+v", len(ctrl), p.BTH)
	}
	x.a.HandleDatagram(3, 0, ctrl[0], len(ctrl[0]))
	if spy.becns != 1 || x.qa.Stats().BECNsReceived != 1 || x.qb.Stats().BECNsSent != 1 {
		t.Fatalf("BECNs: reaction %d, received %d, sent %d", spy.becns, x.qa.Stats().BECNsReceived, x.qb.Stats().BECNsSent)
	}
	if _, ok := x.a.PollTransmit(3, 1, x.buf); ok {
		t.Fatal("sent before the reaction point allowed")
	}
	if nt := x.a.NextTimeout(); nt > 1001 {
		t.Fatalf("next timeout %d, want at most 1001 (the paced send)", nt)
	}
	x.a.HandleTimeout(1001)
	if _, ok := x.a.PollTransmit(1001, 1, x.buf); !ok {
		t.Fatal("not sent when the reaction point allowed")
	}
}
