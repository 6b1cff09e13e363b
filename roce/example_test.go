package roce_test

import (
	"fmt"
	"net/netip"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/verbs"
)

// transport is what a host drives: the method set roce.Endpoint shares
// with mrc.Endpoint.
type transport interface {
	PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool)
	HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int)
	NextTimeout() mtime.Time
	HandleTimeout(now mtime.Time)
	PollEvent() (verbs.Event, bool)
	PendingEvents() int
}

// Example connects two RoCE endpoints back to back, WRITEs 10 000 bytes
// with an immediate, and drives both with the loop a host uses for either
// transport: packets cross a wire that takes 1 µs and has no speed limit.
func Example() {
	addr := func(i byte) netip.Addr { return netip.AddrFrom16([16]byte{0xfd, 15: i}) }
	a, _ := roce.NewEndpoint(roce.Config{Ports: []netip.Addr{addr(1)}, Seed: 1})
	b, _ := roce.NewEndpoint(roce.Config{Ports: []netip.Addr{addr(2)}, Seed: 2})

	// QP setup: create on both sides, exchange QP numbers and addresses
	// out of band, then Connect (RESET→INIT→RTR→RTS in one call).
	qa, _ := a.CreateQP()
	qb, _ := b.CreateQP()
	qa.Connect(0, roce.ConnectAttr{Remote: addr(2), RemoteQPN: qb.QPN()})
	qb.Connect(0, roce.ConnectAttr{Remote: addr(1), RemoteQPN: qa.QPN()})

	src := make([]byte, 10000)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([]byte, len(src))
	srcMR, _ := a.RegisterMemory(src)
	dstMR, _ := b.RegisterMemory(dst)
	qb.PostRecv(7)
	qa.PostWrite(0, verbs.WriteRequest{ID: 1, Local: srcMR, Remote: dstMR, Length: 10000, WithImm: true, Imm: 42})

	type inflight struct {
		at   mtime.Time
		to   int
		pkt  []byte
		wlen int
	}
	eps := []transport{a, b}
	var wire []inflight
	buf := make([]byte, mrc.MaxHeaderLen+4096+8) // big enough for either transport
	for now := mtime.Time(0); now < 100_000; now += 100 {
		for i, ep := range eps {
			if now >= ep.NextTimeout() {
				ep.HandleTimeout(now)
			}
			for _, w := range wire {
				if w.to == i && w.at == now {
					ep.HandleDatagram(now, 0, w.pkt, w.wlen)
				}
			}
			for {
				tx, ok := ep.PollTransmit(now, verbs.AllPorts, buf)
				if !ok {
					break
				}
				wire = append(wire, inflight{now + 1000, 1 - i, append([]byte(nil), buf[:tx.Len]...), tx.WireLen})
			}
			for ev, ok := ep.PollEvent(); ok; ev, ok = ep.PollEvent() {
				switch ev.Kind {
				case verbs.EventRecvImm:
					fmt.Printf("%v: B received %d bytes, immediate %d, into receive %d\n", usec(ev.Time), ev.Bytes, ev.Imm, ev.WRID)
				case verbs.EventWriteDone:
					fmt.Printf("%v: A's WRITE %d of %d bytes completed, err %v\n", usec(ev.Time), ev.WRID, ev.Bytes, ev.Err)
				}
			}
		}
	}
	fmt.Println("byte-exact:", string(src) == string(dst))
	s := a.Stats()
	fmt.Printf("A sent %d data packets, got %d ACKs\n", s.DataSent, s.SACKsReceived)
	// Output:
	// 1.0µs: B received 10000 bytes, immediate 42, into receive 7
	// 2.0µs: A's WRITE 1 of 10000 bytes completed, err <nil>
	// byte-exact: true
	// A sent 3 data packets, got 1 ACKs
}

type usec mtime.Time

func (t usec) String() string { return fmt.Sprintf("%.1fµs", float64(t)/1e3) }
