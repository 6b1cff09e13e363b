package mptcp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/internal/testkit/dumbbell"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// host runs an MPTCP stack and a TCP stack side by side on one address,
// as a Linux host runs sockets of both kinds: a packet goes to the stack
// its sender's address was connected with.
type host struct {
	mp     *Endpoint
	tc     *tcp.Endpoint
	tcpSrc map[[16]byte]bool // peers of the TCP stack
	turn   bool
	ip     wire.IPv6
	lastMP bool // the last event PollEvent returned came from the MPTCP stack
}

func (h *host) PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool) {
	h.turn = !h.turn
	first, second := Endpointer(h.mp), Endpointer(h.tc)
	if h.turn {
		first, second = second, first
	}
	if tx, ok := first.PollTransmit(now, free, buf); ok {
		return tx, true
	}
	return second.PollTransmit(now, free, buf)
}

func (h *host) HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int) {
	if _, err := h.ip.Decode(pkt); err == nil && h.tcpSrc[h.ip.Src] {
		h.tc.HandleDatagram(now, port, pkt, wireLen)
		return
	}
	h.mp.HandleDatagram(now, port, pkt, wireLen)
}

func (h *host) NextTimeout() mtime.Time { return mtime.Min(h.mp.NextTimeout(), h.tc.NextTimeout()) }

func (h *host) HandleTimeout(now mtime.Time) {
	h.mp.HandleTimeout(now)
	h.tc.HandleTimeout(now)
}

func (h *host) PollEvent() (verbs.Event, bool) {
	ev, ok := h.mp.PollEvent()
	h.lastMP = ok
	if ok {
		return ev, true
	}
	return h.tc.PollEvent()
}

// Endpointer is the host-facing method set both stacks have.
type Endpointer = dumbbell.Host

// network is a dumbbell.Net of hosts that run both stacks.
type network struct {
	*dumbbell.Net
	hosts []*host
}

var addr = dumbbell.Addr

// newNet builds n hosts with cfg (Ports and Seed set per host) for
// MPTCP and tcfg for TCP, and a switch whose every port has queue q.
func newNet(t testing.TB, n int, rate int64, delay time.Duration, cfg Config, tcfg tcp.Config, q vswitch.QueueConfig) *network {
	t.Helper()
	d := &network{}
	hs := make([]dumbbell.Host, n)
	for h := range n {
		c, tc := cfg, tcfg
		c.TCP.Ports, tc.Ports = []netip.Addr{addr(h)}, []netip.Addr{addr(h)}
		c.TCP.Seed, tc.Seed = uint64(h), uint64(h)
		mp, err := NewEndpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		te, err := tcp.NewEndpoint(tc)
		if err != nil {
			t.Fatal(err)
		}
		d.hosts = append(d.hosts, &host{mp: mp, tc: te, tcpSrc: map[[16]byte]bool{}})
		hs[h] = d.hosts[h]
	}
	d.Net = dumbbell.New(t, hs, rate, delay, q)
	return d
}

// connect opens an MPTCP connection from host a to host b.
func (d *network) connect(a, b int) (*Conn, *Conn) {
	d.T.Helper()
	ca, err := d.hosts[a].mp.CreateConn()
	if err != nil {
		d.T.Fatal(err)
	}
	cb, err := d.hosts[b].mp.CreateConn()
	if err != nil {
		d.T.Fatal(err)
	}
	if err := ca.Connect(d.Now, ConnectAttr{Remote: []netip.Addr{addr(b)}, RemoteQPN: cb.QPN()}); err != nil {
		d.T.Fatal(err)
	}
	if err := cb.Connect(d.Now, ConnectAttr{Remote: []netip.Addr{addr(a)}, RemoteQPN: ca.QPN()}); err != nil {
		d.T.Fatal(err)
	}
	return ca, cb
}

// connectTCP opens a single-path TCP connection from host a to host b.
func (d *network) connectTCP(a, b int) (*tcp.Conn, *tcp.Conn) {
	d.T.Helper()
	ca, err := d.hosts[a].tc.CreateConn()
	if err != nil {
		d.T.Fatal(err)
	}
	cb, err := d.hosts[b].tc.CreateConn()
	if err != nil {
		d.T.Fatal(err)
	}
	d.hosts[a].tcpSrc[addr(b).As16()] = true
	d.hosts[b].tcpSrc[addr(a).As16()] = true
	if err := ca.Connect(d.Now, tcp.ConnectAttr{Remote: addr(b), RemoteQPN: cb.QPN()}); err != nil {
		d.T.Fatal(err)
	}
	if err := cb.Connect(d.Now, tcp.ConnectAttr{Remote: addr(a), RemoteQPN: ca.QPN()}); err != nil {
		d.T.Fatal(err)
	}
	return ca, cb
}

// conn is what a flow needs of either kind of connection.
type conn interface {
	PostWrite(now mtime.Time, wr verbs.WriteRequest) error
	PostRecv(id uint64) error
	QPN() uint32
}

// flow is one connection carrying messages from a sender to a receiver,
// with the completions its ends reported.
type flow struct {
	snd, rcv         conn
	a, b             int // the hosts
	posted, done     uint64
	received         uint64
	writes, recvImms int
}

// start posts messages of the given sizes on f, with a receive for each.
func (d *network) start(f *flow, sizes ...uint64) *flow {
	for i, n := range sizes {
		if err := f.rcv.PostRecv(uint64(i)); err != nil {
			d.T.Fatal(err)
		}
		if err := f.snd.PostWrite(d.Now, verbs.WriteRequest{ID: uint64(i), Length: n}); err != nil {
			d.T.Fatal(err)
		}
		f.posted += n
	}
	d.Kick(f.a)
	return f
}

// startMPTCP and startTCP connect host a to host b and post messages.
func (d *network) startMPTCP(a, b int, sizes ...uint64) *flow {
	s, r := d.connect(a, b)
	return d.start(&flow{snd: s, rcv: r, a: a, b: b}, sizes...)
}

func (d *network) startTCP(a, b int, sizes ...uint64) *flow {
	s, r := d.connectTCP(a, b)
	return d.start(&flow{snd: s, rcv: r, a: a, b: b}, sizes...)
}

// track counts the flows' completions from the network's events. An
// event belongs to a flow by host, QPN and the stack that emitted it.
func (d *network) track(fs ...*flow) {
	d.OnEvent = func(h int, e verbs.Event) {
		for _, f := range fs {
			_, mp := f.snd.(*Conn)
			if d.hosts[h].lastMP != mp {
				continue
			}
			switch {
			case e.Kind == verbs.EventWriteDone && h == f.a && e.QPN == f.snd.QPN():
				f.done += e.Bytes
				f.writes++
			case e.Kind == verbs.EventRecvImm && h == f.b && e.QPN == f.rcv.QPN():
				f.received += e.Bytes
				f.recvImms++
			}
		}
	}
}

func (f *flow) finished() bool { return f.done == f.posted && f.received == f.posted }

func mtimeOf(d time.Duration) mtime.Time { return mtime.Time(d.Nanoseconds()) }
