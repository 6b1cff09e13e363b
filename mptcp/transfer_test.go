package mptcp

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// TestTransferCompletes: messages of odd sizes arrive whole and in order
// at the data level, are completed at both ends, and every byte is
// delivered once, with and without losses (a switch buffer far below the
// window), for each congestion control; every subflow carries data.
func TestTransferCompletes(t *testing.T) {
	sizes := []uint64{1, 4095, 4096, 4097, 1 << 20, 3, 5 << 20}
	var total uint64
	for _, n := range sizes {
		total += n
	}
	for _, cc := range []CC{LIA, OLIA, Uncoupled} {
		for _, buffer := range []int{4 << 20, 24 << 10} {
			cfg := Config{CC: cc, Subflows: 4, TCP: tcp.Config{MinRTO: time.Millisecond}}
			d := newNet(t, 3, 10e9, 5*time.Microsecond, cfg, tcp.Config{}, vswitch.QueueConfig{Buffer: buffer})
			f0 := d.startMPTCP(0, 2, sizes...)
			f1 := d.startMPTCP(1, 2, sizes...)
			d.track(f0, f1)
			if !d.Run(2*time.Second, func() bool { return f0.finished() && f1.finished() }) {
				t.Fatalf("%v buffer %d: not done at %v: %+v %+v", cc, buffer, d.Now, *f0, *f1)
			}
			for _, f := range []*flow{f0, f1} {
				s, r := f.snd.(*Conn), f.rcv.(*Conn)
				st, rs := s.Stats(), r.Stats()
				if f.writes != len(sizes) || f.recvImms != len(sizes) || rs.PayloadReceived != total || st.PayloadSent != total || f.received != total {
					t.Errorf("%v buffer %d: %d writes %d receives, %d bytes received, %d sent, want %d each",
						cc, buffer, f.writes, f.recvImms, rs.PayloadReceived, st.PayloadSent, total)
				}
				for i := range s.subs {
					if s.Subflow(i).Stats().DataSent == 0 {
						t.Errorf("%v buffer %d: subflow %d carried nothing", cc, buffer, i)
					}
				}
			}
			s0 := f0.snd.(*Conn).Stats()
			drops := d.Sw.Counters.Drops[vswitch.DropQueueFull]
			t.Logf("%v buffer %d: %v, %d drops, %d retransmits (%d reinjections), %d RTOs", cc, buffer, d.Now, drops,
				s0.Retransmits, s0.Reinjections, s0.RetryTimeouts)
			if buffer < 1<<20 && (drops == 0 || s0.Retransmits == 0) {
				t.Errorf("%v: a %d-byte buffer dropped %d and caused %d retransmits: the test does not test recovery", cc, buffer, drops, s0.Retransmits)
			}
		}
	}
}

// subflowPort returns the TCP source port of an IPv6 | TCP packet.
func subflowPort(pkt []byte) uint16 {
	if len(pkt) < wire.IPv6Len+4 {
		return 0
	}
	return binary.BigEndian.Uint16(pkt[wire.IPv6Len:])
}

// TestReinjection kills one subflow's path mid-transfer, both ways for
// good (a link failure that routing never repairs): the subflow's
// retransmission timer fires, its data is reinjected on the other
// subflows, and the connection completes with every byte delivered
// once, at Linux's 200 ms minimum RTO and a datacenter's 1 ms.
func TestReinjection(t *testing.T) {
	for _, minRTO := range []time.Duration{0, time.Millisecond} {
		cfg := Config{Subflows: 4, TCP: tcp.Config{MinRTO: minRTO}}
		d := newNet(t, 2, 10e9, 5*time.Microsecond, cfg, tcp.Config{}, vswitch.QueueConfig{Buffer: 1 << 20})
		const size = 64 << 20
		f := d.startMPTCP(0, 1, size)
		d.track(f)
		s := f.snd.(*Conn)
		dead := s.Subflow(1).LocalPort()
		peer := f.rcv.(*Conn).Subflow(1).LocalPort()
		const failAt = 2 * time.Millisecond
		d.Drop = func(pkt []byte) bool {
			p := subflowPort(pkt)
			return d.Now >= mtimeOf(failAt) && (p == dead || p == peer)
		}
		if !d.Run(10*time.Second, f.finished) {
			t.Fatalf("min RTO %v: not done at %v: %+v", minRTO, d.Now, *f)
		}
		st, rs := s.Stats(), f.rcv.(*Conn).Stats()
		sub := s.Subflow(1).Stats()
		t.Logf("min RTO %v: done at %v; dead subflow: %d RTOs; %d reinjections; %d duplicates at the receiver", minRTO, d.Now,
			sub.RetryTimeouts, st.Reinjections, rs.Duplicates)
		switch {
		case f.received != size || rs.PayloadReceived != size || st.PayloadSent != size:
			t.Errorf("min RTO %v: %d bytes received in messages, %d placed, %d sent, want %d", minRTO, f.received, rs.PayloadReceived, st.PayloadSent, size)
		case sub.RetryTimeouts == 0 || st.Reinjections == 0:
			t.Errorf("min RTO %v: %d timeouts on the dead subflow, %d reinjections", minRTO, sub.RetryTimeouts, st.Reinjections)
		}
	}
}

// TestSubflowsDelayAcks: an MPTCP connection's subflows delay their ACKs
// as package tcp does (an ACK per two full segments, RFC 5681 §4.2), and
// the data ACK that completes the sender's message is not held back by
// the delayed-ACK timer: the transfer ends at the link's pace, far
// inside one delayed-ACK timeout. With delayed ACKs off, every segment
// is acknowledged.
func TestSubflowsDelayAcks(t *testing.T) {
	const size = 8 << 20
	for _, off := range []bool{false, true} {
		cfg := Config{TCP: tcp.Config{DisableDelayedACK: off}}
		d := newNet(t, 2, 10e9, 5*time.Microsecond, cfg, tcp.Config{}, vswitch.QueueConfig{Buffer: 4 << 20})
		f := d.startMPTCP(0, 1, size)
		d.track(f)
		if !d.Run(time.Second, f.finished) {
			t.Fatalf("delayed ACKs off=%v: not done at %v", off, d.Now)
		}
		segs, st := f.snd.(*Conn).Stats().Subflows.DataSent, f.rcv.(*Conn).Stats().Subflows
		t.Logf("delayed ACKs off=%v: %d segments, %d ACKs, %d by the timer, done at %v", off, segs, st.SACKsSent, st.DelayedAcks, d.Now)
		switch {
		case off && st.SACKsSent != segs:
			t.Errorf("delayed ACKs off: %d ACKs for %d segments, want one each", st.SACKsSent, segs)
		case !off && float64(st.SACKsSent) > 0.6*float64(segs):
			t.Errorf("%d ACKs for %d segments, want about one per two", st.SACKsSent, segs)
		case d.Now.Sub(0) > 10*time.Millisecond:
			t.Errorf("done at %v: the last data ACK waited", d.Now)
		}
	}
}

// TestDrainedDataLevelAcksEverySubflow: once the data level holds
// nothing out of order (the application has read all that arrived),
// every subflow sends at once the ACK it was delaying, as Linux's
// receiver acknowledges pushed segments once its application has read
// them; until then a subflow's lone segment waits.
func TestDrainedDataLevelAcksEverySubflow(t *testing.T) {
	const mss = 16 << 10 // two quick ACKs per subflow
	var eps [2]*Endpoint
	var conns [2]*Conn
	for i := range eps {
		ep, err := NewEndpoint(Config{Subflows: 2, TCP: tcp.Config{Ports: []netip.Addr{addr(i)}, MSS: mss, InitCwnd: 4}})
		if err != nil {
			t.Fatal(err)
		}
		eps[i] = ep
		conns[i], _ = ep.CreateConn()
	}
	for i, c := range conns {
		if err := c.Connect(0, ConnectAttr{Remote: []netip.Addr{addr(1 - i)}, RemoteQPN: conns[1-i].QPN()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := conns[1].PostRecv(1); err != nil {
		t.Fatal(err)
	}
	if err := conns[0].PostWrite(0, verbs.WriteRequest{ID: 1, Length: 8 * mss}); err != nil {
		t.Fatal(err)
	}
	// The runs in data order: the scheduler fills subflow 0's window
	// (runs 0-3), then subflow 1's (runs 4-7).
	type seg struct {
		pkt     []byte
		wireLen int
	}
	var bySubflow [2][]seg
	buf := make([]byte, tcp.IPv6HeaderRoom)
	for {
		tx, ok := eps[0].PollTransmit(0, 1, buf)
		if !ok {
			break
		}
		i := int(subflowPort(buf) - conns[0].Subflow(0).LocalPort())
		bySubflow[i] = append(bySubflow[i], seg{append([]byte(nil), buf[:tx.Len]...), tx.WireLen})
	}
	runs := append(bySubflow[0], bySubflow[1]...)
	if len(bySubflow[0]) != 4 || len(runs) != 8 {
		t.Fatalf("%d and %d runs sent on the subflows, want 4 each", len(bySubflow[0]), len(bySubflow[1]))
	}
	deliver := func(i int) int {
		eps[1].HandleDatagram(0, 0, runs[i].pkt, runs[i].wireLen)
		n := 0
		for _, ok := eps[1].PollTransmit(0, 1, buf); ok; _, ok = eps[1].PollTransmit(0, 1, buf) {
			n++
		}
		return n
	}
	for _, i := range []int{4, 5, 0, 1} {
		deliver(i) // each subflow's quick ACKs; runs 4 and 5 out of order at the data level
	}
	if n := deliver(6); n != 0 {
		t.Errorf("subflow 1's lone segment, data level out of order: %d ACKs at once, want none", n)
	}
	if n := deliver(2); n != 0 {
		t.Errorf("subflow 0's lone segment, data level still out of order: %d ACKs at once, want none", n)
	}
	if n := deliver(3); n != 2 {
		t.Errorf("the data level drained: %d ACKs at once, want one on each subflow", n)
	}
}

// TestReceiveWindowBoundsTheSender: the sender never has more than the
// receive window scheduled beyond its data ACK, and a window of two and
// a half segments, below what four subflows' windows hold, still
// completes the transfer; the default window lets more out.
func TestReceiveWindowBoundsTheSender(t *testing.T) {
	const size = 1 << 20
	for _, window := range []int{10 << 10, 0} {
		cfg := Config{Subflows: 4, RecvWindow: window, TCP: tcp.Config{MinRTO: time.Millisecond}}
		d := newNet(t, 2, 10e9, 5*time.Microsecond, cfg, tcp.Config{}, vswitch.QueueConfig{Buffer: 4 << 20})
		f := d.startMPTCP(0, 1, size)
		d.track(f)
		s := f.snd.(*Conn)
		var most uint64
		if !d.Run(time.Second, func() bool { most = max(most, s.nxt-s.una); return f.finished() }) {
			t.Fatalf("window %d: not done at %v: %+v", window, d.Now, *f)
		}
		t.Logf("window %d: done at %v, at most %d bytes beyond the data ACK", window, d.Now, most)
		if window > 0 && most > uint64(window) {
			t.Errorf("window %d: %d bytes beyond the data ACK", window, most)
		}
		if window == 0 && most <= 10<<10 {
			t.Errorf("the default window let out at most %d bytes: the small window bounds nothing", most)
		}
	}
}
