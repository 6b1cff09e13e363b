package roce

import (
	"errors"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
)

// host is the method set a host drives: *mrc.Endpoint's. Both transports
// must have it exactly, so that the simulator can swap them.
type host interface {
	PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool)
	HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int)
	NextTimeout() mtime.Time
	HandleTimeout(now mtime.Time)
	PollEvent() (verbs.Event, bool)
}

var (
	_ host = (*mrc.Endpoint)(nil)
	_ host = (*Endpoint)(nil)
)

// TestTransferLossless moves 3 MiB as WRITEs and WRITE_IMMs of assorted
// sizes over a lossless link and checks every byte, the completion order
// and that nothing was resent.
func TestTransferLossless(t *testing.T) {
	for _, tc := range []struct {
		name     string
		immEvery int
		cc       CCMode
		mtu      int
	}{
		{"write", 0, CCDCQCN, 4096},
		{"write_imm", 1, CCDCQCN, 4096},
		{"mixed", 3, CCDCQCN, 1024},
		{"mixed_nocc", 3, CCNone, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newTransfer(t, tnetConfig{Seed: 1, CC: tc.cc, MTU: tc.mtu}, ConnectAttr{SQDepth: 1 << 16}, 3<<20)
			x.postAll(1, tc.immEvery)
			if !x.net.run(time.Second, x.finished) {
				t.Fatalf("unfinished: %v", x)
			}
			x.check()
			sa, sb := x.qa.Stats(), x.qb.Stats()
			if sa.Retransmits != 0 || sa.GoBacks != 0 || sb.Duplicates != 0 || sb.OutOfSequence != 0 {
				t.Fatalf("resends on a lossless link: %v", x)
			}
			if sa.WritesDone != uint64(x.posted) || sb.ImmsDelivered != uint64(x.wantImm) {
				t.Fatalf("stats: %d writes done, %d imms delivered", sa.WritesDone, sb.ImmsDelivered)
			}
			if sb.PayloadReceived != uint64(len(x.src)) || sa.PayloadSent != uint64(len(x.src)) {
				t.Fatalf("payload sent %d received %d, want %d", sa.PayloadSent, sb.PayloadReceived, len(x.src))
			}
			if sa.SACKsReceived == 0 || sa.SACKsReceived != sb.SACKsSent {
				t.Fatalf("ACKs: %d sent, %d received", sb.SACKsSent, sa.SACKsReceived)
			}
			// A lone flow at line rate: 3 MiB at 100 Gb/s is 252 µs of
			// payload; headers and the path add a little.
			if el := time.Duration(x.net.now); tc.mtu == 4096 && el > 300*time.Microsecond {
				t.Fatalf("took %v", el)
			}
		})
	}
}

// TestPathIsFixed checks that every packet of a QP, both ways, carries
// the QP's one source port and flow label, that these are drawn from the
// seed, and that QPs differ.
func TestPathIsFixed(t *testing.T) {
	paths := func(seed uint64) [][2]uint32 {
		n := newTnet(t, tnetConfig{Seed: seed})
		var out [][2]uint32
		for range 4 {
			qa, qb := n.connect(0, 1, ConnectAttr{}, ConnectAttr{})
			for _, q := range []*QP{qa, qb} {
				sp, fl := q.Path()
				if sp < 0xC000 || fl == 0 || fl > 0xFFFFF {
					t.Fatalf("QP %d path %#x/%#x", q.QPN(), sp, fl)
				}
				out = append(out, [2]uint32{uint32(sp), fl})
			}
		}
		return out
	}
	a, b, c := paths(7), paths(7), paths(8)
	seen := map[[2]uint32]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different paths: %v vs %v", a[i], b[i])
		}
		seen[a[i]] = true
	}
	if len(seen) != len(a) {
		t.Fatalf("QPs share paths: %v", a)
	}
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("the seed does not change the paths")
	}

	x := newTransfer(t, tnetConfig{Seed: 3, Loss: 0.01}, ConnectAttr{TimeoutExp: 4}, 1<<20)
	want := map[int][2]uint32{}
	for h, q := range []*QP{x.qa, x.qb} {
		sp, fl := q.Path()
		want[h] = [2]uint32{uint32(sp), fl}
	}
	x.net.Tap = func(_ mtime.Time, from int, tx verbs.Transmit, pkt []byte) {
		var p Packet
		if err := p.Decode(pkt); err != nil {
			t.Fatal(err)
		}
		if got := [2]uint32{uint32(p.UDP.SrcPort), p.IP.FlowLabel}; got != want[from] || tx.Port != 0 {
			t.Fatalf("host %d sent a %v on %#x/%#x port %d, want %#x/%#x", from, p.Opcode(), got[0], got[1], tx.Port, want[from][0], want[from][1])
		}
	}
	x.postAll(3, 2)
	if !x.net.run(time.Second, x.finished) {
		t.Fatalf("unfinished: %v", x)
	}
	x.check()
}

// TestPhantomTransfer moves 1 GiB between phantom regions: packets keep
// their true wire length and carry no payload.
func TestPhantomTransfer(t *testing.T) {
	n := newTnet(t, tnetConfig{Seed: 5})
	qa, qb := n.connect(0, 1, ConnectAttr{}, ConnectAttr{})
	src, _ := n.eps[0].RegisterPhantom(1 << 30)
	dst, _ := n.eps[1].RegisterPhantom(1 << 30)
	var wire, bytes int64
	n.Tap = func(_ mtime.Time, from int, tx verbs.Transmit, pkt []byte) {
		if tx.Kind == KindData {
			if tx.WireLen != tx.Len+4096+4 {
				t.Fatalf("phantom data packet: %d bytes written, wire length %d", tx.Len, tx.WireLen)
			}
			wire += int64(tx.WireLen)
		}
		bytes += int64(tx.Len)
	}
	done := 0
	n.OnEvent = func(h int, ev verbs.Event) {
		if ev.Kind != verbs.EventWriteDone || ev.Err != nil {
			t.Fatalf("event %v", ev)
		}
		done++
	}
	for i := range 4 {
		if err := qa.PostWrite(0, verbs.WriteRequest{ID: uint64(i), Local: src, LocalOffset: uint64(i) << 28,
			Remote: dst, RemoteOffset: uint64(i) << 28, Length: 1 << 28}); err != nil {
			t.Fatal(err)
		}
	}
	n.kick(0)
	if !n.run(time.Second, func() bool { return done == 4 }) {
		t.Fatalf("%d of 4 done", done)
	}
	if s := qb.Stats(); s.PayloadReceived != 1<<30 || s.Dropped() != 0 {
		t.Fatalf("received %d bytes, %d drops", s.PayloadReceived, s.Dropped())
	}
	if wire < 1<<30 || bytes > wire/50 {
		t.Fatalf("wire %d bytes, written %d", wire, bytes)
	}
}

// TestQPErrorFlushes checks SetError: posted WRITEs complete with
// mrc.ErrFlushed after the QP error event, and the QP refuses work.
func TestQPErrorFlushes(t *testing.T) {
	x := newTransfer(t, tnetConfig{Seed: 2}, ConnectAttr{}, 1<<16)
	x.postAll(2, 0)
	x.qa.SetError(x.net.now)
	var evs []verbs.Event
	for ev, ok := x.net.eps[0].PollEvent(); ok; ev, ok = x.net.eps[0].PollEvent() {
		evs = append(evs, ev)
	}
	if len(evs) != x.posted+1 || evs[0].Kind != verbs.EventQPError || !errors.Is(evs[0].Err, verbs.ErrFlushed) {
		t.Fatalf("events %v", evs)
	}
	for i, ev := range evs[1:] {
		if ev.Kind != verbs.EventWriteDone || ev.WRID != uint64(i) || !errors.Is(ev.Err, verbs.ErrFlushed) {
			t.Fatalf("event %d: %v", i, ev)
		}
	}
	if err := x.qa.PostWrite(0, verbs.WriteRequest{Local: x.srcMR, Remote: x.dstMR, Length: 1}); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("PostWrite after error: %v", err)
	}
	if tx, ok := x.net.eps[0].PollTransmit(x.net.now, 1, x.net.buf); ok {
		t.Fatalf("a failed QP sent %v", tx)
	}
}

// TestRNR posts WRITE_IMMs before the peer posts receives: the responder
// answers RNR NAKs, the requester waits the RNR timer and resends, and
// everything lands once the receives are posted.
func TestRNR(t *testing.T) {
	x := newTransfer(t, tnetConfig{Seed: 4}, ConnectAttr{MinRNRTimer: 1}, 8*3*4096) // 10 µs RNR timer
	// Post without receives, then add them late.
	mtu := x.net.cfg.MTU
	for i := range 8 {
		wr := verbs.WriteRequest{ID: uint64(i), Local: x.srcMR, LocalOffset: uint64(i * 3 * mtu), Remote: x.dstMR,
			RemoteOffset: uint64(i * 3 * mtu), Length: uint64(3 * mtu), WithImm: true, Imm: 0xABC00000 + uint32(i)}
		if err := x.qa.PostWrite(0, wr); err != nil {
			t.Fatal(err)
		}
	}
	x.posted, x.wantImm = 8, 8
	x.net.kick(0)
	x.net.run(100*time.Microsecond, func() bool { return false })
	if s := x.qb.Stats(); s.RNRNAKsSent == 0 || s.ImmsDelivered != 0 {
		t.Fatalf("no RNR NAKs before the receives: %+v", s)
	}
	for i := range 8 {
		x.qb.PostRecv(uint64(1000 + i))
	}
	if !x.net.run(time.Second, x.finished) {
		t.Fatalf("unfinished: %v", x)
	}
	x.check()
	sa := x.qa.Stats()
	if sa.RNRNAKsReceived == 0 || sa.GoBacks < sa.RNRNAKsReceived {
		t.Fatalf("requester: %d RNR NAKs, %d go-backs", sa.RNRNAKsReceived, sa.GoBacks)
	}
}

// TestTrace runs a lossy, congested transfer with a tracer and checks
// that every record kind the package emits shows up, in time order, and
// that the counts agree with the stats.
func TestTrace(t *testing.T) {
	kinds := map[trace.Kind]int{}
	reasons := map[string]int{}
	var last mtime.Time
	tr := trace.Func(func(r *trace.Record) {
		if r.Time < last {
			t.Fatalf("trace goes back in time: %v after %v", r.Time, last)
		}
		last = r.Time
		kinds[r.Kind]++
		reasons[r.Reason]++
	})
	x := newTransfer(t, tnetConfig{Seed: 2, Loss: 0.02, Tracer: tr, MarkProb: 0.05},
		ConnectAttr{TimeoutExp: 4}, 1<<20)
	x.postAll(2, 2)
	if !x.net.run(time.Second, x.finished) {
		t.Fatalf("unfinished: %v", x)
	}
	x.check()
	sa, sb := x.qa.Stats(), x.qb.Stats()
	for _, k := range []trace.Kind{trace.PacketSent, trace.PacketRetransmitted, trace.PacketAcked, trace.PacketNacked,
		trace.PacketReceived, trace.PacketDropped, trace.SACKSent, trace.CwndChanged, trace.QPState} {
		if kinds[k] == 0 {
			t.Errorf("no %v records", k)
		}
	}
	if kinds[trace.PacketSent] != int(sa.DataSent+sb.DataSent) || kinds[trace.PacketRetransmitted] != int(sa.Retransmits) ||
		kinds[trace.PacketReceived] != int(sb.DataReceived) || reasons["cnp"] != int(sb.CNPsSent) || reasons["rate_mbps"] == 0 {
		t.Fatalf("trace counts %v, reasons %v; stats %+v", kinds, reasons, sa)
	}
}
