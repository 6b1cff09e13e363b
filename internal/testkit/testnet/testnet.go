// Package testnet is a small deterministic network for driving MRC
// endpoints in virtual time: two endpoints joined by one link per plane,
// each plane offering many paths, with injectors for everything the core
// must survive (loss, trimming, ECN marks, duplication, reordering,
// corruption, black-holed paths, flapping paths, dead ports).
//
// It is the quinn-style "pair" driver grown a little: not a fabric model
// (package sim is), but enough to exercise the protocol. Everything is a
// function of the Config, including its Seed.
package testnet

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/cc"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Config describes the network. Zero fields take the defaults noted.
type Config struct {
	Planes         int           // ports per endpoint (default 2)
	Seed           uint64        // drives every random choice
	Delay          time.Duration // one-way propagation (default 2 µs)
	Jitter         time.Duration // extra uniform delay per packet: reordering
	LinkBitsPerSec int64         // port speed (default 100 Gb/s)
	Encap          mrc.Encap
	// NewCC builds the QPs' congestion controllers (nil: the core's NSCC).
	NewCC func(now mtime.Time) cc.Controller
	MTU   int // default 4096
	// StartPSN is the first PSN of both directions (default 100).
	StartPSN uint32
	// MPRDest is each responder's tracking window in units of 128 PSNs
	// (mrc.RTRAttr.MPRDest; default 8).
	MPRDest int

	// Per-packet injectors, as probabilities in [0,1]. They apply to
	// data packets unless noted.
	Loss        float64 // silent drop (any packet)
	Trim        float64 // trimmed mid-fabric
	TrimLastHop float64 // trimmed at the last hop
	ECN         float64 // CE-marked
	Dup         float64 // delivered twice (any packet)
	Corrupt     float64 // one byte flipped (any packet)
	// TrimCut > 0 trims as NVIDIA Spectrum does (vswitch.QueueConfig.TrimTo):
	// the datagram is cut to at most TrimCut bytes, its lengths and
	// checksums left as they were, and only the outermost header's DSCP
	// rewritten. 0: wire.Trim.
	TrimCut int

	// Endpoint tuning passed through to mrc.Config.
	BaseRTT          time.Duration
	LossTimeout      time.Duration
	PrivatePathState bool
	Tracers          [2]trace.Tracer // per side
}

// Side names one of the two endpoints.
type Side int

const (
	A Side = iota
	B
)

// Path is one path of a plane: the EVs whose EVPath is Index.
type Path struct{ Plane, Index int }

// Net is the network and the two endpoints on it.
type Net struct {
	cfg  Config
	rng  *rand.Rand
	now  mtime.Time
	seq  uint64
	evq  eventHeap
	eps  [2]*mrc.Endpoint
	busy [2][]mtime.Time // per side, per port: transmitter busy until
	buf  []byte

	dead      map[Path]bool // black-holed paths (both directions)
	portDown  [2][]bool
	flaps     []flap
	Stats     Stats
	Tap       func(now mtime.Time, from Side, tx verbs.Transmit, pkt []byte)   // sees every packet sent
	Deliver   func(now mtime.Time, to Side, port int, pkt []byte, wireLen int) // sees every packet delivered, as the network left it
	OnEvent   func(side Side, ev verbs.Event)                                  // sees every endpoint event
	pathPaths PathCount
}

// PathCount is how many paths each plane offers (the EV profile's
// PathsPerPlane).
type PathCount int

// Stats counts what the network did to packets.
type Stats struct {
	Sent, Delivered, Lost, Trimmed, Marked, Duplicated, Corrupted, BlackHoled uint64
}

type flap struct {
	path     Path
	period   time.Duration
	downFrac float64
}

// block is the uSID block (locator) of the network, F3216.
var block = [16]byte{0xfc, 0xbb, 0, 0}

// hostCSID is the uSID of port p of side s.
func hostCSID(s Side, p int) uint32 { return 0xe000 | uint32(s)<<4 | uint32(p) }

// Addr returns the address of port p of side s: its uSID under the
// network's block, so that it is also the final destination of every uSID
// path to it.
func Addr(s Side, p int) netip.Addr {
	return netip.AddrFrom16(wire.F3216.Container(block, hostCSID(s, p)))
}

// New builds the network and its endpoints.
func New(cfg Config) (*Net, error) {
	if cfg.Planes == 0 {
		cfg.Planes = 2
	}
	if cfg.Delay == 0 {
		cfg.Delay = 2 * time.Microsecond
	}
	if cfg.LinkBitsPerSec == 0 {
		cfg.LinkBitsPerSec = 100e9
	}
	if cfg.MTU == 0 {
		cfg.MTU = 4096
	}
	if cfg.StartPSN == 0 {
		cfg.StartPSN = 100
	}
	n := &Net{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		dead: map[Path]bool{},
		buf:  make([]byte, mrc.MaxHeaderLen+cfg.MTU+16),
	}
	for s := A; s <= B; s++ {
		ports := make([]netip.Addr, cfg.Planes)
		for p := range ports {
			ports[p] = Addr(s, p)
		}
		ep, err := mrc.NewEndpoint(mrc.Config{
			Ports:            ports,
			MTU:              cfg.MTU,
			Seed:             cfg.Seed*2 + uint64(s),
			Encap:            cfg.Encap,
			BaseRTT:          cfg.BaseRTT,
			LossTimeout:      cfg.LossTimeout,
			LinkBitsPerSec:   cfg.LinkBitsPerSec,
			PrivatePathState: cfg.PrivatePathState,
			Tracer:           cfg.Tracers[s],
		})
		if err != nil {
			return nil, err
		}
		n.eps[s] = ep
		n.busy[s] = make([]mtime.Time, cfg.Planes)
		n.portDown[s] = make([]bool, cfg.Planes)
	}
	return n, nil
}

// Endpoint returns side s's endpoint.
func (n *Net) Endpoint(s Side) *mrc.Endpoint { return n.eps[s] }

// Now returns the virtual time.
func (n *Net) Now() mtime.Time { return n.now }

// Paths is a PathFunc for SRv6 modes: a uSID container naming the path
// (the T1 of the plane), the destination's T0 and the destination port.
func Paths(dst Side) mrc.PathFunc {
	return func(plane int, ev wire.EV) [16]byte {
		return wire.F3216.Container(block, uint32(0x1000*plane+ev.Path()), uint32(0x2000+plane), hostCSID(dst, plane))
	}
}

// oneT0Paths is a PathFunc for a peer under the source's own T0: the T0
// turns packets straight down, so every EV of a plane gets one uSID
// container whatever its path index.
func oneT0Paths(dst Side) mrc.PathFunc {
	return func(plane int, _ wire.EV) [16]byte {
		return wire.F3216.Container(block, uint32(0x2000+plane), hostCSID(dst, plane))
	}
}

// Connect creates a QP on each side and brings both to RTS, paired with
// each other. ev configures both QPs' EV profiles.
func (n *Net) Connect(ev mrc.EVProfile, rts mrc.RTSAttr) (qa, qb *mrc.QP, err error) {
	return n.connect(ev, rts, true, Paths)
}

// ConnectOneWay is Connect with B's QP left in RTR: it only receives.
func (n *Net) ConnectOneWay(ev mrc.EVProfile, rts mrc.RTSAttr) (qa, qb *mrc.QP, err error) {
	return n.connect(ev, rts, false, Paths)
}

// ConnectUnderOneT0 is Connect with the QPs' SRv6 paths those of two
// hosts under one T0: one uSID container for all the EVs of a plane. The
// network still carries each EV on the path its index names.
func (n *Net) ConnectUnderOneT0(ev mrc.EVProfile, rts mrc.RTSAttr) (qa, qb *mrc.QP, err error) {
	return n.connect(ev, rts, true, oneT0Paths)
}

func (n *Net) connect(ev mrc.EVProfile, rts mrc.RTSAttr, bSends bool, pathsTo func(Side) mrc.PathFunc) (qa, qb *mrc.QP, err error) {
	qs := [2]*mrc.QP{}
	for s := A; s <= B; s++ {
		if qs[s], err = n.eps[s].CreateQP(); err != nil {
			return nil, nil, err
		}
		if err = qs[s].Init(n.now, mrc.InitAttr{EVs: ev, NewCC: n.cfg.NewCC}); err != nil {
			return nil, nil, err
		}
	}
	for s := A; s <= B; s++ {
		o := 1 - s
		remote := make([]netip.Addr, n.cfg.Planes)
		for p := range remote {
			remote[p] = Addr(o, p)
		}
		var paths mrc.PathFunc
		if n.cfg.Encap != mrc.EncapPlain {
			paths = pathsTo(o)
		}
		if err = qs[s].ReadyToReceive(n.now, mrc.RTRAttr{RemoteQPN: qs[o].QPN(), Remote: remote, Paths: paths, RecvPSN: n.cfg.StartPSN, MPRDest: n.cfg.MPRDest}); err != nil {
			return nil, nil, err
		}
		if s == B && !bSends {
			continue
		}
		r := rts
		r.SendPSN = n.cfg.StartPSN
		if err = qs[s].ReadyToSend(n.now, r); err != nil {
			return nil, nil, err
		}
	}
	n.pathPaths = PathCount(ev.PathsPerPlane)
	return qs[A], qs[B], nil
}

// KillPath black-holes path p in both directions (a failed link or a
// silently dead switch).
func (n *Net) KillPath(p Path) { n.dead[p] = true }

// HealPath restores path p.
func (n *Net) HealPath(p Path) { delete(n.dead, p) }

// Flap makes path p fail for downFrac of every period, starting down.
func (n *Net) Flap(p Path, period time.Duration, downFrac float64) {
	n.flaps = append(n.flaps, flap{p, period, downFrac})
}

// SetPortUp takes port p of side s down or up: the endpoint is told (its
// link went down) and the port neither sends nor receives meanwhile.
func (n *Net) SetPortUp(s Side, p int, up bool) {
	n.portDown[s][p] = !up
	n.eps[s].SetPortUp(n.now, p, up)
	n.kick(s)
}

func (n *Net) pathDead(p Path) bool {
	if n.dead[p] {
		return true
	}
	for _, f := range n.flaps {
		if f.path == p {
			phase := time.Duration(n.now) % f.period
			if float64(phase) < f.downFrac*float64(f.period) {
				return true
			}
		}
	}
	return false
}

type eventKind uint8

const (
	evDeliver eventKind = iota // a packet reaches its endpoint
	evWake                     // an endpoint's timer or a freed port
)

type event struct {
	at   mtime.Time
	seq  uint64
	kind eventKind
	side Side
	port int
	pkt  []byte
	wlen int
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (n *Net) schedule(e event) {
	n.seq++
	e.seq = n.seq
	heap.Push(&n.evq, e)
}

func (n *Net) kick(s Side) { n.schedule(event{at: n.now, kind: evWake, side: s}) }

// Kick tells the network that side s has new work (after a PostWrite).
func (n *Net) Kick(s Side) { n.kick(s) }

// transmit sends everything side s can send on its free ports now.
func (n *Net) transmit(s Side) {
	ep := n.eps[s]
	for {
		var free verbs.PortMask
		for p, until := range n.busy[s] {
			if until <= n.now && !n.portDown[s][p] {
				free |= 1 << p
			}
		}
		if free == 0 {
			return
		}
		tx, ok := ep.PollTransmit(n.now, free, n.buf)
		if !ok {
			return
		}
		pkt := append([]byte(nil), n.buf[:tx.Len]...)
		ser := time.Duration(int64(tx.WireLen) * 8 * int64(time.Second) / n.cfg.LinkBitsPerSec)
		n.busy[s][tx.Port] = n.now.Add(ser)
		n.schedule(event{at: n.busy[s][tx.Port], kind: evWake, side: s})
		n.Stats.Sent++
		if n.Tap != nil {
			n.Tap(n.now, s, tx, pkt)
		}
		n.carry(s, tx, pkt, ser)
	}
}

// carry applies the injectors and schedules the delivery of pkt.
func (n *Net) carry(from Side, tx verbs.Transmit, pkt []byte, ser time.Duration) {
	to := 1 - from
	var p wire.Packet
	if err := p.Decode(pkt); err != nil {
		panic(fmt.Sprintf("testnet: endpoint sent an undecodable packet: %v", err))
	}
	ev := uint32(p.EV())
	if p.Encap {
		ev = uint32(wire.JoinEV(p.UDP.SrcPort, p.Outer.FlowLabel))
	}
	path := Path{Plane: tx.Port, Index: wire.EV(ev).Path()}
	if n.portDown[to][tx.Port] {
		n.Stats.Lost++
		return
	}
	if n.pathDead(path) {
		n.Stats.BlackHoled++
		return
	}
	r := n.rng
	if r.Float64() < n.cfg.Loss {
		n.Stats.Lost++
		return
	}
	wlen := tx.WireLen
	if p.BTH.Opcode.IsData() {
		switch x := r.Float64(); {
		case x < n.cfg.Trim:
			pkt, wlen = n.trim(pkt, wire.DefaultDSCP.Trimmed)
		case x < n.cfg.Trim+n.cfg.TrimLastHop:
			pkt, wlen = n.trim(pkt, wire.DefaultDSCP.TrimmedLastHop)
		}
		if r.Float64() < n.cfg.ECN {
			wire.MarkCE(pkt)
			n.Stats.Marked++
		}
	}
	if r.Float64() < n.cfg.Corrupt && len(pkt) > 0 {
		pkt[r.IntN(len(pkt))] ^= byte(1 + r.IntN(255))
		n.Stats.Corrupted++
	}
	delay := n.cfg.Delay + ser
	if n.cfg.Jitter > 0 {
		delay += time.Duration(r.Int64N(int64(n.cfg.Jitter)))
	}
	n.schedule(event{at: n.now.Add(delay), kind: evDeliver, side: to, port: tx.Port, pkt: pkt, wlen: wlen})
	if r.Float64() < n.cfg.Dup {
		n.Stats.Duplicated++
		n.schedule(event{at: n.now.Add(delay + ser), kind: evDeliver, side: to, port: tx.Port, pkt: append([]byte(nil), pkt...), wlen: wlen})
	}
}

func (n *Net) trim(pkt []byte, dscp uint8) ([]byte, int) {
	if c := n.cfg.TrimCut; c > 0 {
		t := append([]byte(nil), pkt[:min(c, len(pkt))]...)
		wire.SetOuterDSCP(t, dscp)
		n.Stats.Trimmed++
		return t, len(t)
	}
	t, err := wire.Trim(pkt, dscp)
	if err != nil {
		return pkt, len(pkt)
	}
	n.Stats.Trimmed++
	return t, len(t)
}

// Step runs the next event. It returns false when nothing is left to do.
func (n *Net) Step() bool {
	// Endpoint timers are events too: schedule the earliest one lazily.
	next := mtime.Never
	if n.evq.Len() > 0 {
		next = n.evq[0].at
	}
	side := -1
	for s := A; s <= B; s++ {
		if t := n.eps[s].NextTimeout(); t < next {
			next, side = t, int(s)
		}
	}
	if side >= 0 {
		n.now = max(n.now, next)
		n.eps[side].HandleTimeout(n.now)
		n.after(Side(side))
		return true
	}
	if n.evq.Len() == 0 {
		return false
	}
	e := heap.Pop(&n.evq).(event)
	n.now = max(n.now, e.at)
	switch e.kind {
	case evDeliver:
		if !n.portDown[e.side][e.port] {
			n.Stats.Delivered++
			if n.Deliver != nil {
				n.Deliver(n.now, e.side, e.port, e.pkt, e.wlen)
			}
			n.eps[e.side].HandleDatagram(n.now, e.port, e.pkt, e.wlen)
		}
	case evWake:
	}
	n.after(e.side)
	return true
}

// after transmits what side s now has and hands out its events.
func (n *Net) after(s Side) {
	n.transmit(s)
	for {
		ev, ok := n.eps[s].PollEvent()
		if !ok {
			break
		}
		if n.OnEvent != nil {
			n.OnEvent(s, ev)
		}
	}
}

// RunUntil steps until done returns true, the network is idle, or the
// virtual clock passes limit. It reports whether done returned true.
func (n *Net) RunUntil(limit mtime.Time, done func() bool) bool {
	for !done() {
		if n.now > limit || !n.Step() {
			return done()
		}
	}
	return true
}
