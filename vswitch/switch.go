package vswitch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/openmrc/mrc/wire"
)

// Mode selects how a switch chooses the egress port of a packet.
type Mode uint8

const (
	// ModeSRv6 forwards SRv6 uN (micro-SID) packets: shift when the
	// active uSID is the switch's own, then a static table lookup.
	ModeSRv6 Mode = iota
	// ModeECMP hashes the flow (addresses, flow label, UDP ports) over
	// the next hops of the longest-prefix route.
	ModeECMP
	// ModeSTEV takes the next hop from a bit field of the packet's EV
	// (structured EV).
	ModeSTEV
	// ModeDest picks the next hop by destination alone, as an
	// InfiniBand subnet manager's linear forwarding table does:
	// destination-based D-mod-k over the route's group (dest.go).
	ModeDest
	// ModeAdaptive is InfiniBand adaptive routing: per packet, the
	// least-loaded port of the route's group that is up (dest.go).
	ModeAdaptive
)

func (m Mode) String() string {
	switch m {
	case ModeSRv6:
		return "srv6"
	case ModeECMP:
		return "ecmp"
	case ModeSTEV:
		return "stev"
	case ModeDest:
		return "dest"
	case ModeAdaptive:
		return "adaptive"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// DSCP holds the codepoints the switch classifies and rewrites.
type DSCP struct {
	Control        uint8 // header queue, never trimmed
	Trimmed        uint8 // written on packets trimmed mid-fabric; header queue
	TrimmedLastHop uint8 // written on packets trimmed on a LastHop port; header queue
	NoTrim         uint8 // DSCP_NO_TRIM: data queue, never trimmed (tail-dropped instead)
}

// DefaultDSCP is the switch's view of mrc.DefaultDSCP.
var DefaultDSCP = DSCP{
	Control:        wire.DefaultDSCP.Control,
	Trimmed:        wire.DefaultDSCP.Trimmed,
	TrimmedLastHop: wire.DefaultDSCP.TrimmedLastHop,
	NoTrim:         wire.DefaultDSCP.NoTrim,
}

// Config configures a Switch. Zero fields take the defaults in their
// comments.
type Config struct {
	// Name labels the switch in errors and results.
	Name string
	// Ports is the number of ports, 1..65535.
	Ports int
	// Mode selects the forwarding mode (default ModeSRv6).
	Mode Mode
	// Format is the uSID format (default wire.F3216). BlockBits+CSIDBits
	// must be at most 64.
	Format wire.USIDFormat
	// Addr is the switch's own uN address, block | uSID (ModeSRv6).
	Addr [16]byte
	// Seed seeds the ECMP hash and the ECN marking draws.
	Seed uint64
	// EVShift and EVBits select the EV field that picks the next hop in
	// ModeSTEV: (EV >> EVShift) & (1<<EVBits - 1), modulo the group size.
	EVShift, EVBits uint
	// DestDiv is D-mod-k's divisor in ModeDest and ModeAdaptive: the
	// group index of a destination with LID d is (d-1)/DestDiv modulo
	// the group's size (default 1; in a fat tree, the product of the
	// up-port counts of the tiers below this switch's).
	DestDiv uint32
	// DSCP sets the codepoints (default DefaultDSCP).
	DSCP DSCP
	// Queue configures every port's queues (SetPortQueue overrides one).
	Queue QueueConfig
	// NoPortCounters keeps of each port's counters only MaxBytes
	// (PortCounters reports the others as 0), 40 bytes a port less: for
	// a simulator of a large fabric that counts its links itself.
	NoPortCounters bool
}

// QueueConfig configures the egress queues of a port. Sizes are bytes on
// the wire.
type QueueConfig struct {
	// Buffer is the data queue's capacity (default 1 MiB).
	Buffer int
	// HeaderBuffer is the header queue's capacity (default 256 KiB).
	HeaderBuffer int
	// Trim turns on trimming: a data packet that finds more than TrimAt
	// bytes queued is cut to its headers and queued on the header queue.
	Trim bool
	// TrimAt is the trim threshold (default Buffer).
	TrimAt int
	// TrimTo, if above 0, trims by cutting the datagram to TrimTo bytes
	// and rewriting only the outermost DSCP, the lengths and checksums
	// left as they were: a fixed-size trim, as NVIDIA Spectrum's (a
	// 256-byte frame is a 238-byte IPv6 datagram). As SAI's trim action
	// says ("try sending a shortened packet over a different queue"), it
	// takes any packet that fails admission: one no longer than TrimTo,
	// a probe say, is only redirected, with the trimmed DSCP. 0:
	// wire.Trim, which cuts after the MRC headers and fixes lengths and
	// checksum, and drops what it cannot cut.
	TrimTo int
	// ECNMin and ECNMax are the RED-style marking thresholds: packets
	// arriving to more than ECNMin queued bytes are CE-marked with a
	// probability rising linearly to 1 at ECNMax. ECNMax 0 turns marking
	// off.
	ECNMin, ECNMax int
	// ECNK turns on single-threshold marking, as DCTCP deploys it
	// (Alizadeh et al., SIGCOMM 2010, §3.1; RFC 8257): every
	// ECN-capable packet arriving to more than ECNK bytes queued is
	// CE-marked, none below. ECNK > 0 replaces the RED thresholds; 0
	// turns it off.
	ECNK int
	// LastHop says the port faces a host: trims take DSCP
	// TrimmedLastHop, and ECN marking is off unless ECNLastHop.
	LastHop    bool
	ECNLastHop bool
	// Lossless turns on PFC: no packet is dropped for lack of buffer, and
	// Enqueue asks the caller to pause an ingress port that has more than
	// PFCXoff bytes queued in the switch, Dequeue to resume it below
	// PFCXon (defaults Buffer/2 and PFCXoff/2).
	Lossless bool
	PFCXoff  int
	PFCXon   int
	// Credits turns on credit-based flow control (InfiniBand's, in place
	// of drops and PFC): the port sends only while the far end of its
	// link has room, and starts with Credits bytes of credit per virtual
	// lane, the far end's buffer per lane (credit.go). It must hold the
	// largest packet. 0 turns it off.
	Credits int
	// MarkVictims lets single-threshold marking (ECNK) mark at a port
	// that has waited for credits since its queue was last empty, a
	// victim of congestion further on; by default only the root of
	// congestion marks (IB's FECN, IBTA Vol. 1 Annex A10, Victim_Mask
	// clear).
	MarkVictims bool
}

func (q QueueConfig) withDefaults() QueueConfig {
	if q.Buffer == 0 {
		q.Buffer = 1 << 20
	}
	if q.HeaderBuffer == 0 {
		q.HeaderBuffer = 256 << 10
	}
	if q.TrimAt == 0 {
		q.TrimAt = q.Buffer
	}
	if q.PFCXoff == 0 {
		q.PFCXoff = q.Buffer / 2
	}
	if q.PFCXon == 0 {
		q.PFCXon = q.PFCXoff / 2
	}
	return q
}

func (q QueueConfig) validate() error {
	switch {
	case q.Buffer < 0 || q.HeaderBuffer < 0 || q.TrimAt < 0 || q.TrimTo < 0:
		return fmt.Errorf("negative buffer size")
	case q.ECNMin < 0 || q.ECNMax < 0 || q.ECNK < 0 || q.ECNMax > 0 && q.ECNMin > q.ECNMax:
		return fmt.Errorf("ECN thresholds min %d max %d", q.ECNMin, q.ECNMax)
	case q.Lossless && (q.PFCXon < 0 || q.PFCXon > q.PFCXoff):
		return fmt.Errorf("PFC thresholds xoff %d xon %d", q.PFCXoff, q.PFCXon)
	case q.Credits < 0 || q.Credits > 1<<30:
		return fmt.Errorf("credits %d", q.Credits)
	case q.Credits > 0 && (q.Lossless || q.Trim):
		return fmt.Errorf("credit flow control with PFC or trimming")
	}
	return nil
}

// Handle names a packet the caller owns.
type Handle uint32

// Switch is one switch's data plane. See the package comment.
type Switch struct {
	cfg      Config
	node     key // own block|uSID, masked to nodeBits
	nodeMask key
	rng      rand.PCG

	routes  []routeLen // by prefix length, longest first
	groups  []int32    // next-hop ports of all groups, concatenated
	groupAt []span     // group i is groups[groupAt[i].off:][:n]
	defGrp  int32      // default route's group, or -1

	ports     []port
	pcount    []portCount // each port's counters; nil with NoPortCounters
	uncounted portCount   // where counts goes with NoPortCounters, never read
	blocks    blockPool   // the ports' queues' blocks
	qcfgs     []QueueConfig
	ingress   []int     // lossless: bytes queued per ingress port
	ingPaused []bool    // lossless: ingress asked to pause
	credit    []credits // credit flow control: each port's credits (credit.go)

	blackhole bool
	// Counters are the switch's totals; the caller may read them at any
	// time and reset them.
	Counters Counters
}

type key struct{ hi, lo uint64 }

func (k key) and(m key) key { return key{k.hi & m.hi, k.lo & m.lo} }

func loadKey(a *[16]byte) key {
	return key{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
}

func prefixMask(n int) key {
	switch {
	case n <= 0:
		return key{}
	case n < 64:
		return key{^uint64(0) << (64 - n), 0}
	case n == 64:
		return key{^uint64(0), 0}
	case n < 128:
		return key{^uint64(0), ^uint64(0) << (128 - n)}
	}
	return key{^uint64(0), ^uint64(0)}
}

type routeLen struct {
	bits int
	mask key
	m    table
}

type span struct{ off, n int32 }

// ErrConfig is returned (wrapped) for an invalid configuration.
var ErrConfig = errors.New("vswitch: invalid configuration")

// New returns a switch with cfg. Every port starts up, with no routes.
func New(cfg Config) (*Switch, error) {
	if cfg.Format == (wire.USIDFormat{}) {
		cfg.Format = wire.F3216
	}
	if cfg.DSCP == (DSCP{}) {
		cfg.DSCP = DefaultDSCP
	}
	if cfg.DestDiv == 0 {
		cfg.DestDiv = 1
	}
	cfg.Queue = cfg.Queue.withDefaults()
	switch {
	case cfg.Ports < 1 || cfg.Ports > 65535:
		return nil, fmt.Errorf("%w: %s: ports %d, want 1..65535", ErrConfig, cfg.Name, cfg.Ports)
	case cfg.Mode > ModeAdaptive:
		return nil, fmt.Errorf("%w: %s: mode %v", ErrConfig, cfg.Name, cfg.Mode)
	case !cfg.Format.Valid() || cfg.Format.BlockBits+cfg.Format.CSIDBits > 64:
		return nil, fmt.Errorf("%w: %s: uSID format %+v (block+uSID must fit 64 bits)", ErrConfig, cfg.Name, cfg.Format)
	case cfg.Mode == ModeSTEV && (cfg.EVBits < 1 || cfg.EVShift+cfg.EVBits > 32):
		return nil, fmt.Errorf("%w: %s: EV field shift %d bits %d", ErrConfig, cfg.Name, cfg.EVShift, cfg.EVBits)
	}
	if err := cfg.Queue.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, cfg.Name, err)
	}
	s := &Switch{cfg: cfg, defGrp: -1}
	s.nodeMask = prefixMask(cfg.Format.BlockBits + cfg.Format.CSIDBits)
	s.node = loadKey(&cfg.Addr).and(s.nodeMask)
	s.rng.Seed(cfg.Seed, cfg.Seed^0xa076_1d64_78bd_642f)
	s.ports = make([]port, cfg.Ports)
	if !cfg.NoPortCounters {
		s.pcount = make([]portCount, cfg.Ports)
	}
	s.qcfgs = []QueueConfig{cfg.Queue}
	for i := range s.ports {
		s.ports[i].up = true
		s.initCredits(i)
	}
	if cfg.Queue.Lossless {
		s.ingress = make([]int, cfg.Ports)
		s.ingPaused = make([]bool, cfg.Ports)
	}
	return s, nil
}

// Config returns the switch's configuration with defaults filled in.
func (s *Switch) Config() Config { return s.cfg }

// Ports returns the number of ports.
func (s *Switch) Ports() int { return len(s.ports) }

// SetPortQueue configures port p's queues; it takes effect for packets
// enqueued afterwards.
func (s *Switch) SetPortQueue(p int, q QueueConfig) error {
	if p < 0 || p >= len(s.ports) {
		return fmt.Errorf("%w: %s: port %d", ErrConfig, s.cfg.Name, p)
	}
	q = q.withDefaults()
	if err := q.validate(); err != nil {
		return fmt.Errorf("%w: %s port %d: %v", ErrConfig, s.cfg.Name, p, err)
	}
	if q.Lossless && s.ingress == nil {
		s.ingress = make([]int, len(s.ports))
		s.ingPaused = make([]bool, len(s.ports))
	}
	idx := slices.Index(s.qcfgs, q)
	if idx < 0 {
		idx = len(s.qcfgs)
		s.qcfgs = append(s.qcfgs, q)
	}
	s.ports[p].cfg = uint16(idx)
	s.initCredits(p)
	return nil
}

// PortQueue returns port p's queue configuration.
func (s *Switch) PortQueue(p int) QueueConfig { return s.qcfgs[s.ports[p].cfg] }

// AddRoute adds a static route: destinations whose first bits bits equal
// those of prefix leave through one of ports (a next-hop group of one or
// more ports). A later route for the same prefix replaces the earlier.
func (s *Switch) AddRoute(prefix [16]byte, bits int, ports ...int) error {
	if bits < 0 || bits > 128 {
		return fmt.Errorf("%w: %s: prefix length %d", ErrConfig, s.cfg.Name, bits)
	}
	g, err := s.addGroup(ports)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(s.routes, func(r routeLen) bool { return r.bits == bits })
	if i < 0 {
		s.routes = append(s.routes, routeLen{bits: bits, mask: prefixMask(bits), m: table{wide: bits > 64}})
		slices.SortFunc(s.routes, func(a, b routeLen) int { return b.bits - a.bits })
		i = slices.IndexFunc(s.routes, func(r routeLen) bool { return r.bits == bits })
	}
	r := &s.routes[i]
	r.m.put(loadKey(&prefix).and(r.mask), g)
	return nil
}

// SetDefault sets the default route's next hops (none: no default).
func (s *Switch) SetDefault(ports ...int) error {
	if len(ports) == 0 {
		s.defGrp = -1
		return nil
	}
	g, err := s.addGroup(ports)
	if err != nil {
		return err
	}
	s.defGrp = g
	return nil
}

// ClearRoutes removes every route, the default included (a routing
// protocol's reconvergence rebuilds the table).
func (s *Switch) ClearRoutes() {
	s.routes, s.groups, s.groupAt, s.defGrp = s.routes[:0], s.groups[:0], s.groupAt[:0], -1
}

// Routes returns the number of routes in the table.
func (s *Switch) Routes() int {
	n := 0
	for _, r := range s.routes {
		n += r.m.n
	}
	return n
}

func (s *Switch) addGroup(ports []int) (int32, error) {
	if len(ports) == 0 {
		return 0, fmt.Errorf("%w: %s: route with no next hop", ErrConfig, s.cfg.Name)
	}
	for _, p := range ports {
		if p < 0 || p >= len(s.ports) {
			return 0, fmt.Errorf("%w: %s: next hop port %d of %d", ErrConfig, s.cfg.Name, p, len(s.ports))
		}
	}
	// Reuse an identical group: fabrics have few distinct ones.
	for i, sp := range s.groupAt {
		g := s.groups[sp.off : sp.off+sp.n]
		if len(g) == len(ports) && equalPorts(g, ports) {
			return int32(i), nil
		}
	}
	off := int32(len(s.groups))
	for _, p := range ports {
		s.groups = append(s.groups, int32(p))
	}
	s.groupAt = append(s.groupAt, span{off, int32(len(ports))})
	return int32(len(s.groupAt) - 1), nil
}

func equalPorts(g []int32, p []int) bool {
	for i := range g {
		if int(g[i]) != p[i] {
			return false
		}
	}
	return true
}

// SetBlackhole makes the switch silently drop every packet it receives
// while on, its ports and routes untouched: a dataplane failure that the
// control plane does not see (digest §3.11).
func (s *Switch) SetBlackhole(on bool) { s.blackhole = on }

// Blackhole reports whether the switch black-holes packets.
func (s *Switch) Blackhole() bool { return s.blackhole }

// lookup returns the group for the destination d, or -1.
func (s *Switch) lookup(d key) int32 {
	for i := range s.routes {
		r := &s.routes[i]
		if g, ok := r.m.get(d.and(r.mask)); ok {
			return g
		}
	}
	return s.defGrp
}

// Forward chooses the egress port of pkt, which arrived on port in and
// holds the datagram from its outermost IPv6 header on (the payload may
// be absent: only the headers are read). It decrements the hop limit and,
// in ModeSRv6, shifts the uSID container when the active uSID is the
// switch's own, rewriting pkt in place. drop is DropNone on success;
// otherwise the packet must be discarded (it is counted).
func (s *Switch) Forward(pkt []byte, in int) (out int, drop DropCause) {
	s.Counters.Received++
	switch {
	case s.blackhole:
		return s.dropped(DropBlackhole)
	case len(pkt) < wire.IPv6Len || pkt[0]>>4 != 6:
		return s.dropped(DropMalformed)
	case !wire.DecHopLimit(pkt):
		return s.dropped(DropHopLimit)
	}
	dst := wire.OuterDst(pkt)
	d := loadKey(dst)
	if s.cfg.Mode == ModeSRv6 && d.and(s.nodeMask) == s.node {
		if !s.cfg.Format.Shift(dst) {
			// The container ends here: addressed to the switch itself,
			// which runs no endpoint.
			return s.dropped(DropNoRoute)
		}
		d = loadKey(dst)
	}
	g := s.lookup(d)
	if g < 0 {
		return s.dropped(DropNoRoute)
	}
	sp := s.groupAt[g]
	if sp.n == 1 {
		return int(s.groups[sp.off]), DropNone
	}
	var idx uint64
	switch s.cfg.Mode {
	case ModeSTEV:
		h, ok := wire.Locate(pkt)
		if !ok {
			return s.dropped(DropMalformed)
		}
		idx = uint64(h.EV(pkt)>>s.cfg.EVShift) & (1<<s.cfg.EVBits - 1)
	case ModeDest:
		idx = s.destIndex(dst)
	case ModeAdaptive:
		return s.adaptive(sp, s.destIndex(dst)), DropNone
	default:
		idx = s.hash(pkt)
	}
	return int(s.groups[sp.off+int32(idx%uint64(sp.n))]), DropNone
}

func (s *Switch) dropped(c DropCause) (int, DropCause) {
	s.Counters.Drops[c]++
	return -1, c
}

// protoTCP is TCP's next-header value (IANA): its ports, like UDP's,
// are the first 4 bytes of its header.
const protoTCP = 6

// hash mixes the outer source and destination, flow label and next
// header, and the UDP or TCP ports when one follows the outer header
// (the 5-tuple), with the switch's seed.
func (s *Switch) hash(pkt []byte) uint64 {
	h := s.cfg.Seed ^ 0x9e37_79b9_7f4a_7c15
	h = mix(h, binary.BigEndian.Uint64(pkt[8:]))
	h = mix(h, binary.BigEndian.Uint64(pkt[16:]))
	h = mix(h, binary.BigEndian.Uint64(pkt[24:]))
	h = mix(h, binary.BigEndian.Uint64(pkt[32:]))
	first := binary.BigEndian.Uint32(pkt) & wire.FlowLabelMask
	nh := pkt[6]
	var ports uint32
	if (nh == wire.ProtoUDP || nh == protoTCP) && len(pkt) >= wire.IPv6Len+4 {
		ports = binary.BigEndian.Uint32(pkt[wire.IPv6Len:])
	}
	h = mix(h, uint64(first)<<40|uint64(nh)<<32|uint64(ports))
	return h
}

func mix(h, v uint64) uint64 {
	hi, lo := bits.Mul64(h^v, 0x9e37_79b9_7f4a_7c15)
	return hi ^ lo
}
