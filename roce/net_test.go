package roce

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// tnet is a small deterministic network for driving roce endpoints in
// virtual time: hosts with one port each, joined by one switch (a star).
// Every switch egress port is a FIFO served at the link rate, with
// optional RED-style ECN marking (the DCQCN congestion point) and no
// buffer limit (a lossless fabric without PFC's pauses). Injectors drop
// packets at the switch. Everything is a function of the config's seed.
type tnetConfig struct {
	Hosts    int
	Seed     uint64
	Rate     int64         // every link, b/s (default 100 Gb/s)
	Delay    time.Duration // one-way propagation of each link (default 1 µs)
	MTU      int
	CC       CCMode
	DCQCN    DCQCNConfig
	AckEvery int
	Tracer   trace.Tracer // on every endpoint

	Loss float64              // drop probability of any packet at the switch
	Drop func(p *Packet) bool // drop hook, after Loss
	Dead bool                 // the switch drops everything

	// RED marking on egress: probability 0 below ECNMin queued bytes,
	// rising linearly to PMax at ECNMax, 1 beyond (DCQCN paper §3.1).
	ECNMin, ECNMax int
	PMax           float64
	// MarkProb CE-marks any ECN-capable packet with this probability.
	MarkProb float64
}

type tnet struct {
	t      testing.TB
	cfg    tnetConfig
	rng    *rand.Rand
	now    mtime.Time
	seq    uint64
	evq    tevHeap
	eps    []*Endpoint
	busy   []mtime.Time // host transmitters busy until
	egress []tegress    // switch port towards each host
	buf    []byte

	OnEvent func(host int, ev verbs.Event)
	Tap     func(now mtime.Time, from int, tx verbs.Transmit, pkt []byte) // every packet sent
	Deliver func(now mtime.Time, to int, pkt []byte)                      // every packet delivered

	Lost, LostData, Marked uint64
}

type tegress struct {
	q        []tpkt
	bytes    int // queued, including the packet being serialized
	maxBytes int
	busy     bool
	served   map[int]int64 // payload-carrying wire bytes delivered, by sender host
}

type tpkt struct {
	b    []byte
	wlen int
	from int
}

type tevKind uint8

const (
	tevAtSwitch tevKind = iota // a packet fully received by the switch
	tevEgress                  // an egress port finished serializing its head packet
	tevDeliver                 // a packet reaches its host
	tevWake                    // a host transmitter is free again
)

type tev struct {
	at   mtime.Time
	seq  uint64
	kind tevKind
	host int
	pkt  tpkt
}

type tevHeap []tev

func (h tevHeap) Len() int { return len(h) }
func (h tevHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h tevHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *tevHeap) Push(x any)   { *h = append(*h, x.(tev)) }
func (h *tevHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// hostAddr is the address of host h's port.
func hostAddr(h int) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0x52, 0x0c, 0xe0, 15: byte(h + 1)})
}

func newTnet(t testing.TB, cfg tnetConfig) *tnet {
	t.Helper()
	if cfg.Hosts == 0 {
		cfg.Hosts = 2
	}
	if cfg.Rate == 0 {
		cfg.Rate = 100e9
	}
	if cfg.Delay == 0 {
		cfg.Delay = time.Microsecond
	}
	if cfg.MTU == 0 {
		cfg.MTU = 4096
	}
	n := &tnet{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7e57)),
		busy: make([]mtime.Time, cfg.Hosts), egress: make([]tegress, cfg.Hosts),
		buf: make([]byte, MaxHeaderLen+cfg.MTU+8)}
	for h := range cfg.Hosts {
		ep, err := NewEndpoint(Config{Ports: []netip.Addr{hostAddr(h)}, MTU: cfg.MTU, Seed: cfg.Seed*31 + uint64(h),
			LinkBitsPerSec: cfg.Rate, CC: cfg.CC, DCQCN: cfg.DCQCN, AckEvery: cfg.AckEvery, Tracer: cfg.Tracer})
		if err != nil {
			t.Fatal(err)
		}
		n.eps = append(n.eps, ep)
		n.egress[h].served = map[int]int64{}
	}
	return n
}

// connect creates a QP on hosts a and b and connects them to each other.
// The attrs may set anything but the addresses, QPNs and PSNs.
func (n *tnet) connect(a, b int, attrA, attrB ConnectAttr) (*QP, *QP) {
	n.t.Helper()
	qa, err := n.eps[a].CreateQP()
	if err != nil {
		n.t.Fatal(err)
	}
	qb, err := n.eps[b].CreateQP()
	if err != nil {
		n.t.Fatal(err)
	}
	attrA.Remote, attrA.RemoteQPN, attrA.SendPSN, attrA.RecvPSN = hostAddr(b), qb.QPN(), 0xFFFF00, 0x000100
	attrB.Remote, attrB.RemoteQPN, attrB.SendPSN, attrB.RecvPSN = hostAddr(a), qa.QPN(), 0x000100, 0xFFFF00
	if err := qa.Connect(n.now, attrA); err != nil {
		n.t.Fatal(err)
	}
	if err := qb.Connect(n.now, attrB); err != nil {
		n.t.Fatal(err)
	}
	return qa, qb
}

func (n *tnet) schedule(e tev) {
	n.seq++
	e.seq = n.seq
	heap.Push(&n.evq, e)
}

// kick tells the network host h may have new work (after a post).
func (n *tnet) kick(h int) { n.schedule(tev{at: n.now, kind: tevWake, host: h}) }

func (n *tnet) ser(wlen int) time.Duration {
	return time.Duration(int64(wlen) * 8 * int64(time.Second) / n.cfg.Rate)
}

// transmit sends what host h can send now.
func (n *tnet) transmit(h int) {
	ep := n.eps[h]
	for n.busy[h] <= n.now {
		tx, ok := ep.PollTransmit(n.now, 1, n.buf)
		if !ok {
			return
		}
		pkt := append([]byte(nil), n.buf[:tx.Len]...)
		if n.Tap != nil {
			n.Tap(n.now, h, tx, pkt)
		}
		ser := n.ser(tx.WireLen)
		n.busy[h] = n.now.Add(ser)
		n.schedule(tev{at: n.busy[h], kind: tevWake, host: h})
		n.schedule(tev{at: n.now.Add(ser + n.cfg.Delay), kind: tevAtSwitch, pkt: tpkt{pkt, tx.WireLen, h}})
	}
}

// atSwitch drops, routes, marks and queues a packet.
func (n *tnet) atSwitch(p tpkt) {
	var d Packet
	if err := d.Decode(p.b); err != nil {
		n.t.Fatalf("an endpoint sent an undecodable packet: %v", err)
	}
	if n.cfg.Dead || n.rng.Float64() < n.cfg.Loss || n.cfg.Drop != nil && n.cfg.Drop(&d) {
		n.Lost++
		if d.Opcode().IsData() {
			n.LostData++
		}
		return
	}
	dst := int(d.IP.Dst[15]) - 1
	if dst < 0 || dst >= len(n.eps) {
		n.t.Fatalf("packet to unknown host %v", netip.AddrFrom16(d.IP.Dst))
	}
	g := &n.egress[dst]
	if n.cfg.MarkProb > 0 && n.rng.Float64() < n.cfg.MarkProb && wire.MarkCE(p.b) {
		n.Marked++
	}
	if n.cfg.ECNMax > 0 && g.bytes > n.cfg.ECNMin {
		pr := 1.0
		if g.bytes < n.cfg.ECNMax {
			pr = n.cfg.PMax * float64(g.bytes-n.cfg.ECNMin) / float64(n.cfg.ECNMax-n.cfg.ECNMin)
		}
		if n.rng.Float64() < pr && wire.MarkCE(p.b) {
			n.Marked++
		}
	}
	g.q = append(g.q, p)
	g.bytes += p.wlen
	g.maxBytes = max(g.maxBytes, g.bytes)
	if !g.busy {
		n.serve(dst)
	}
}

// serve starts serializing the head of egress port dst.
func (n *tnet) serve(dst int) {
	g := &n.egress[dst]
	if len(g.q) == 0 {
		g.busy = false
		return
	}
	g.busy = true
	n.schedule(tev{at: n.now.Add(n.ser(g.q[0].wlen)), kind: tevEgress, host: dst})
}

// Step runs the next event. It returns false when nothing is left.
func (n *tnet) Step() bool {
	next, side := mtime.Never, -1
	if n.evq.Len() > 0 {
		next = n.evq[0].at
	}
	for h, ep := range n.eps {
		if t := ep.NextTimeout(); t < next {
			next, side = t, h
		}
	}
	if side >= 0 {
		n.now = max(n.now, next)
		n.eps[side].HandleTimeout(n.now)
		n.after(side)
		return true
	}
	if n.evq.Len() == 0 {
		return false
	}
	e := heap.Pop(&n.evq).(tev)
	n.now = max(n.now, e.at)
	switch e.kind {
	case tevAtSwitch:
		n.atSwitch(e.pkt)
	case tevEgress:
		g := &n.egress[e.host]
		p := g.q[0]
		g.q = g.q[1:]
		g.bytes -= p.wlen
		g.served[p.from] += int64(p.wlen)
		n.schedule(tev{at: n.now.Add(n.cfg.Delay), kind: tevDeliver, host: e.host, pkt: p})
		n.serve(e.host)
	case tevDeliver:
		if n.Deliver != nil {
			n.Deliver(n.now, e.host, e.pkt.b)
		}
		n.eps[e.host].HandleDatagram(n.now, 0, e.pkt.b, e.pkt.wlen)
		n.after(e.host)
	case tevWake:
		n.after(e.host)
	}
	return true
}

func (n *tnet) after(h int) {
	n.transmit(h)
	for {
		ev, ok := n.eps[h].PollEvent()
		if !ok {
			return
		}
		if n.OnEvent != nil {
			n.OnEvent(h, ev)
		}
	}
}

// run steps until done, idleness, or the clock passing limit, and
// reports whether done returned true.
func (n *tnet) run(limit time.Duration, done func() bool) bool {
	for !done() {
		if n.now > mtime.Time(limit) || !n.Step() {
			return done()
		}
	}
	return true
}

// transfer is a WRITE workload from host 0 to host 1 over one QP pair,
// with real memory: random message sizes, some with immediates, checked
// byte for byte and for completion order.
type transfer struct {
	t        testing.TB
	net      *tnet
	qa, qb   *QP
	src, dst []byte
	srcMR    verbs.MR
	dstMR    verbs.MR
	done     []uint64 // WR IDs in completion order at A
	imms     []uint32 // immediates in delivery order at B
	recvIDs  []uint64
	errs     []verbs.Event
	posted   int
	wantImm  int
}

const guard = 64

func newTransfer(t testing.TB, cfg tnetConfig, attr ConnectAttr, size int) *transfer {
	t.Helper()
	n := newTnet(t, cfg)
	qa, qb := n.connect(0, 1, attr, attr)
	x := &transfer{t: t, net: n, qa: qa, qb: qb}
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	x.src = make([]byte, size)
	for i := range x.src {
		x.src[i] = byte(r.Uint32())
	}
	// The destination region sits inside a larger buffer whose guard
	// bytes must never change.
	x.dst = make([]byte, size+2*guard)
	for i := range x.dst {
		x.dst[i] = 0xA5
	}
	var err error
	if x.srcMR, err = n.eps[0].RegisterMemory(x.src); err != nil {
		t.Fatal(err)
	}
	if x.dstMR, err = n.eps[1].RegisterMemory(x.dst[guard : guard+size]); err != nil {
		t.Fatal(err)
	}
	n.OnEvent = func(h int, ev verbs.Event) {
		switch {
		case ev.Kind == verbs.EventWriteDone && ev.Err == nil && h == 0:
			x.done = append(x.done, ev.WRID)
		case ev.Kind == verbs.EventRecvImm && h == 1:
			x.imms = append(x.imms, ev.Imm)
			x.recvIDs = append(x.recvIDs, ev.WRID)
		default:
			x.errs = append(x.errs, ev)
		}
	}
	return x
}

// postAll posts WRITEs covering the whole buffer in chunks of random
// sizes (including 0, 1, MTU±1 and multi-MTU), every immEvery-th with an
// immediate (0: none).
func (x *transfer) postAll(seed uint64, immEvery int) {
	x.t.Helper()
	mtu := x.net.cfg.MTU
	r := rand.New(rand.NewPCG(seed, 5))
	sizes := []int{0, 1, mtu - 1, mtu, mtu + 1, 3*mtu + 7}
	for off, i := 0, 0; off < len(x.src); i++ {
		var n int
		if i < len(sizes) {
			n = sizes[i]
		} else {
			n = 1 + r.IntN(20*mtu)
		}
		n = min(n, len(x.src)-off)
		wr := verbs.WriteRequest{ID: uint64(i), Local: x.srcMR, LocalOffset: uint64(off), Remote: x.dstMR,
			RemoteOffset: uint64(off), Length: uint64(n)}
		if immEvery > 0 && i%immEvery == 0 {
			wr.WithImm, wr.Imm = true, uint32(0xABC00000+i)
			if err := x.qb.PostRecv(uint64(1000 + i)); err != nil {
				x.t.Fatal(err)
			}
			x.wantImm++
		}
		if err := x.qa.PostWrite(x.net.now, wr); err != nil {
			x.t.Fatal(err)
		}
		x.posted++
		off += n
	}
	x.net.kick(0)
}

func (x *transfer) finished() bool {
	return len(x.done) == x.posted && len(x.imms) == x.wantImm || len(x.errs) > 0
}

// check asserts the transfer completed byte-exact, in order.
func (x *transfer) check() {
	x.t.Helper()
	if len(x.errs) > 0 {
		x.t.Fatalf("unexpected events: %v", x.errs)
	}
	if len(x.done) != x.posted || len(x.imms) != x.wantImm {
		x.t.Fatalf("%d of %d WRITEs completed, %d of %d immediates delivered (at %v)",
			len(x.done), x.posted, len(x.imms), x.wantImm, time.Duration(x.net.now))
	}
	for i, id := range x.done {
		if id != uint64(i) {
			x.t.Fatalf("completion %d is WR %d: out of post order", i, id)
		}
	}
	for i := 1; i < len(x.imms); i++ {
		if x.imms[i] <= x.imms[i-1] {
			x.t.Fatalf("immediates out of order: %#x after %#x", x.imms[i], x.imms[i-1])
		}
	}
	for i, id := range x.recvIDs {
		if want := uint64(1000) + uint64(x.imms[i]-0xABC00000); id != want {
			x.t.Fatalf("immediate %#x completed receive %d, want %d", x.imms[i], id, want)
		}
	}
	size := len(x.src)
	for i := range guard {
		if x.dst[i] != 0xA5 || x.dst[guard+size+i] != 0xA5 {
			x.t.Fatalf("guard byte %d overwritten", i)
		}
	}
	for i := range x.src {
		if x.src[i] != x.dst[guard+i] {
			x.t.Fatalf("byte %d differs: got %#x want %#x", i, x.dst[guard+i], x.src[i])
		}
	}
}

func (x *transfer) String() string {
	sa, sb := x.qa.Stats(), x.qb.Stats()
	return fmt.Sprintf("A: sent %d retx %d goBacks %d rto %d NAKs %d; B: recv %d dup %d oos %d seqNAK %d ACKs %d; net lost %d (data %d)",
		sa.DataSent, sa.Retransmits, sa.GoBacks, sa.RetryTimeouts, sa.NACKsReceived,
		sb.DataReceived, sb.Duplicates, sb.OutOfSequence, sb.SeqNAKsSent, sb.SACKsSent, x.net.Lost, x.net.LostData)
}
