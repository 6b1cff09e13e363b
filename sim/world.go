package sim

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// World is one simulation: the fabric, the hosts with their transport
// NICs, the workload and the partitions that run them. Build it with New
// and run it once with Run. A World shares nothing with other Worlds.
type World struct {
	cfg Config
	t   *topo.Topology
	wl  *workload.Workload

	// Directed links: 2l is link l from A to B, 2l+1 from B to A. lk is
	// read-only; tx belongs to the sender's partition, rx to the
	// receiver's.
	lk []linkInfo
	tx []linkTx
	rx []linkRx
	// loss holds each directed link's random loss, owned like rx; nil
	// when no failure makes a link lossy.
	loss []linkLoss

	hosts []hostState
	sws   []swState
	// hostCredit holds each NIC port's credits per lane, indexed
	// (host·Planes + port)·NumVLs + lane, under credit flow control
	// (credit.go); nil otherwise.
	hostCredit []int32
	flows      []flowState
	// qpFlow maps both QPs of each flow (qpKey(host, qpn)) to the flow.
	qpFlow map[uint64]int32

	trig      []trigState
	trigFlows [][]int32 // flows started by each trigger
	trigIndex map[int]int32

	swDL []int32 // directed link out of each switch port, indexed like SwitchPortLink

	shards     []*shard
	pools      []*pool // by partition
	swShards   int     // partitions holding switches (the first ones)
	swGroups   int     // switch partitions per plane
	lookahead  Time
	actions    []action
	fails      []failRecord
	linkEvents [][]linkEvent // per link: state changes in time order (ECMP reconvergence); nil without link failures
	overhead   int

	// nodeOrder: the windows run node by node (window.go), with a
	// scratch per worker; timeOrder keeps them in time order (tests
	// compare the two).
	nodeOrder, timeOrder bool
	scratch              []nodeScratch
	cores                coreChoice // whether windows run on several workers

	// trailer is the bytes after a data packet's payload: the RDMA
	// transports' ICRC, none for TCP.
	trailer int32
	baseRTT time.Duration
	// queuedAt is the wait in a switch queue beyond which a job's
	// packets count as held up there (hotlink.go).
	queuedAt Time

	// Capture points (nil without taps): the tap of each host port
	// (h*Planes+p) and switch port (PortBase+p), or -1.
	hostTaps []int32
	swTaps   []int32
	taps     []portTap
	order    []obsRef // scratch for merging observations

	bytes uint64 // the workload's payload

	ran     bool
	stopped Time   // when Run stopped: the limit, the last event or the last window
	stopBy  string // why (Result.StoppedBy)
}

// linkInfo is a directed link's fixed description: 32 bytes, since a
// large fabric has millions (32 per host on --preset big).
type linkInfo struct {
	from, to         int32 // node IDs
	rate             int64
	delay            Time   // propagation + the receiving switch's latency
	fromPort, toPort uint16 // a switch has at most 65,535 ports
	sendShard        int16
	recvShard        int16
}

// linkTx is a directed link's sending end: 24 bytes.
type linkTx struct {
	busyUntil Time // the serialiser is busy until then
	pending   bool // an evTxDone is scheduled
	up        bool
	fail      int32  // failure that took it down, or -1
	sentBytes uint64 // wire bytes sent (utilisation)
}

// linkRx is a directed link's receiving end: 24 bytes; its loss, which
// few runs have, is in World.loss.
type linkRx struct {
	head, tail uint32 // pipe of packets in flight
	headAt     Time   // when the head reaches the far end
	up         bool
	fail       int32
}

// linkLoss is a lossy link's drop probability (0: none), the failure
// that made it lossy (-1: none) and the link's own random source: its
// draws do not depend on the order in which the partition meets other
// links' packets.
type linkLoss struct {
	p    float64
	fail int32
	rng  rand.PCG
}

type hostState struct {
	nic      NIC
	shard    int32
	timerGen uint32
	timerAt  Time
	paused   uint32 // ports paused by PFC
	down     uint32 // ports whose link is down
	// freeAt is when the first of the host's ports finishes
	// serialising, as pump last left them (only pump sends on them):
	// before then pump has nothing to do.
	freeAt Time
}

type swState struct {
	vs       *vswitch.Switch
	shard    int32
	fail     int32 // blackhole failure, or -1
	portBase int32 // the topology's Switch.PortBase, kept beside vs for the hot path
}

type flowState struct {
	srcQP, dstQP uint32
	start        Time
	sendDone     Time
	recvDone     Time
	sendLeft     int32
	recvLeft     int32
	failed       bool
	started      bool
}

type trigState struct {
	kind    workload.TriggerKind
	count   int
	fired   bool
	delay   Time
	then    []int32 // triggers it activates (indexes)
	firedAt Time    // when it first fired, or -1
	shard   int32   // the partition that holds it (jobsplit.go)
	lastAct Time    // when it was last activated
}

// maxMessage is the largest WRITE the simulator posts; longer flows are
// several messages.
const maxMessage = 1 << 30

// New builds a world: switches with their routes, hosts with their NICs,
// a connection per flow (both ends set up and receives posted), and the
// failure schedule. It fails with an error naming the problem for an
// impossible configuration.
func New(cfg Config) (*World, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if r := c.Transport.Reroute; r > 0 {
		c.Reconvergence = min(c.Reconvergence, r)
		c.LocalRepair = min(c.LocalRepair, c.Reconvergence)
	}
	t := c.Topology
	w := &World{cfg: c, t: t, wl: c.Workload, overhead: c.EthernetOverhead, bytes: c.Workload.Bytes(), trailer: wire.ICRCLen}
	if c.Transport.overTCP() {
		w.trailer = 0
	}
	mtuWire := c.MTU + 128 + c.EthernetOverhead
	w.baseRTT = t.BaseRTT(mtuWire, 144+c.EthernetOverhead)

	// Partitions: SwitchGroups per plane for the switches (planes share
	// none), then host groups. The lookahead is the shortest link that
	// crosses between partitions: nothing crosses faster.
	w.lookahead = never
	for h := range t.Hosts {
		for p := range t.Planes {
			w.lookahead = min(w.lookahead, t.Links[t.HostLink[h*t.Planes+p]].Delay)
		}
	}
	sg := c.SwitchGroups
	if sg > 1 {
		fabric := never
		for _, k := range t.Links {
			if !t.IsHost(k.A) {
				fabric = min(fabric, k.Delay)
			}
		}
		if fabric <= 0 {
			sg = 1
		} else {
			w.lookahead = min(w.lookahead, fabric)
		}
	}
	groups := min(c.HostGroups, t.Hosts)
	if groups > 1 && !w.splits(groups, min(w.lookahead, maxWindow)) {
		groups = 1
	}
	w.swGroups = sg
	w.swShards = t.Planes * sg
	if w.lookahead <= 0 {
		// No lookahead: one partition runs everything.
		w.swGroups, w.swShards, groups = 1, 1, 0
		w.lookahead = never
	}
	nShards := w.swShards + groups
	if nShards > maxShards {
		return nil, fmt.Errorf("sim: %d partitions (planes × switch_groups + host_groups), at most %d", nShards, maxShards)
	}
	// Packets are tagged with their sender only for the counts kept per
	// connection: failures met, a job's hot links, the first flows' series.
	tagged := len(c.Failures) > 0 || c.Job != nil || c.SeriesFlows > 0
	for i := range nShards {
		s := &shard{w: w, id: i, scratch: make([]byte, mrc.MaxHeaderLen+c.MTU+64), pool: newPool(i, tagged), queue: newCalendar()}
		w.pools = append(w.pools, s.pool)
		s.out = make([][]xmsg, nShards)
		s.remoteFree = make([][]uint32, nShards)
		s.planeRx = make([]uint64, t.Planes)
		s.planeTx = make([]uint64, t.Planes)
		w.shards = append(w.shards, s)
	}
	hostShard := func(h int) int32 {
		if groups == 0 {
			return 0
		}
		return int32(w.swShards + h*groups/t.Hosts)
	}
	swShard := func(i int) int32 {
		if w.swShards == 1 {
			return 0
		}
		sw := &t.Switches[i]
		return int32(sw.Plane*w.swGroups + sw.Index%w.swGroups)
	}
	nodeShard := func(n topo.NodeID) int16 {
		if t.IsHost(n) {
			return int16(hostShard(int(n)))
		}
		return int16(swShard(int(n) - t.Hosts))
	}

	// Links.
	w.lk = make([]linkInfo, 2*len(t.Links))
	w.tx = make([]linkTx, len(w.lk))
	w.rx = make([]linkRx, len(w.lk))
	for l, k := range t.Links {
		for d := range 2 {
			from, to, fp, tp := k.A, k.B, k.APort, k.BPort
			if d == 1 {
				from, to, fp, tp = k.B, k.A, k.BPort, k.APort
			}
			delay := k.Delay
			if !t.IsHost(to) {
				delay += t.SwitchOf(to).Latency
			}
			dl := 2*l + d
			w.lk[dl] = linkInfo{from: int32(from), to: int32(to), fromPort: uint16(fp), toPort: uint16(tp), rate: k.Rate,
				delay: delay, sendShard: nodeShard(from), recvShard: nodeShard(to)}
			w.tx[dl] = linkTx{up: true, fail: -1}
			w.rx[dl] = linkRx{head: nilPkt, tail: nilPkt, up: true, fail: -1}
		}
	}

	w.swDL = make([]int32, len(t.SwitchPortLink))
	for i := range t.Switches {
		sw := &t.Switches[i]
		for p := range sw.Ports {
			l := t.SwitchPortLink[sw.PortBase+p]
			w.swDL[sw.PortBase+p] = 2*l + 1
			if t.Links[l].A == t.Node(i) {
				w.swDL[sw.PortBase+p] = 2 * l
			}
		}
	}

	// Switches.
	q := w.queueConfigs()
	if c.Transport.Credits && q[0].Credits < w.maxCredit() {
		return nil, fmt.Errorf("sim: transport %q: a credit buffer of %d bytes holds no packet of MTU %d", c.Transport.Name, q[0].Credits, c.MTU)
	}
	w.sws = make([]swState, len(t.Switches))
	for i := range t.Switches {
		sw := &t.Switches[i]
		vs, err := vswitch.New(vswitch.Config{
			Name: t.Name(t.Node(i)), Ports: sw.Ports, Mode: c.Transport.Fabric,
			Addr: t.USIDAddr(sw.USID), Seed: c.Seed ^ uint64(i)*0x9e3779b97f4a7c15, Queue: q[0], DestDiv: w.destDiv(i),
			NoPortCounters: true, // the links count what they send (linkTx); results read only MaxBytes
		})
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		for p := range sw.Ports {
			l := t.SwitchPortLink[sw.PortBase+p]
			if peer, _ := t.Peer(int(l), t.Node(i)); t.IsHost(peer) {
				if err := vs.SetPortQueue(p, q[1]); err != nil {
					return nil, fmt.Errorf("sim: %w", err)
				}
			}
		}
		w.sws[i] = swState{vs: vs, shard: swShard(i), fail: -1, portBase: int32(sw.PortBase)}
	}
	if err := w.installRoutes(-1); err != nil {
		return nil, err
	}
	if c.Transport.Credits {
		w.initHostCredits(q[0].Credits)
	}

	// Hosts.
	qps := make([]int, t.Hosts)
	seen := map[int]bool{}
	for _, f := range c.Workload.Flows {
		if f.Conn != 0 {
			if seen[f.Conn] {
				continue
			}
			seen[f.Conn] = true
		}
		qps[f.Src]++
		qps[f.Dst]++
	}
	w.hosts = make([]hostState, t.Hosts)
	scratch := make([]*mrc.Scratch, len(w.shards))
	queueing := w.queueingBound(q) // a scan of every link: once, not per host
	for h := range t.Hosts {
		ports := make([]netip.Addr, t.Planes)
		for p := range ports {
			ports[p] = w.hostAddr(h, p)
		}
		spec := NICSpec{
			Host: h, Ports: ports, Seed: c.Seed*0x100000001b3 + uint64(h), MTU: c.MTU, BaseRTT: w.baseRTT,
			QueueingBound: queueing, PortRate: t.HostRate(), MaxQPs: max(qps[h], 1), SRv6: c.Transport.Fabric == vswitch.ModeSRv6,
		}
		if c.Trace != nil {
			spec.Tracer = &hostTracer{s: w.shards[hostShard(h)], host: int32(h), f: c.TraceFilter}
		}
		if scratch[hostShard(h)] == nil {
			scratch[hostShard(h)] = new(mrc.Scratch)
		}
		spec.Scratch = scratch[hostShard(h)]
		nic, err := c.Transport.New(spec)
		if err != nil {
			return nil, fmt.Errorf("sim: host %d: %w", h, err)
		}
		w.hosts[h] = hostState{nic: nic, shard: hostShard(h), timerAt: never}
	}

	if c.Job != nil {
		w.queuedAt = mtime.PicosOf(w.baseRTT / 5)
		for _, s := range w.shards {
			s.hot = map[uint64]portConn{}
		}
	}
	if err := w.setupFlows(); err != nil {
		return nil, err
	}
	if err := w.setupTaps(); err != nil {
		return nil, err
	}
	if err := w.scheduleFailures(); err != nil {
		return nil, err
	}
	return w, nil
}

// queueingBound is the longest a data packet can wait in the queues of
// the fabric's longest path when its switches trim: each fabric port's
// trim threshold drained at the slowest fabric link's rate, then the last
// hop's at the host link's (mrc.Config.QueueingBound). It is 0, the
// core's default, for fabrics that do not trim.
func (w *World) queueingBound(q [2]vswitch.QueueConfig) time.Duration {
	if !q[0].Trim {
		return 0
	}
	t := w.t
	fabRate := int64(0)
	for _, l := range t.Links {
		if int(l.A) >= t.Hosts && int(l.B) >= t.Hosts && (fabRate == 0 || l.Rate < fabRate) {
			fabRate = l.Rate
		}
	}
	drain := func(bytes int, rate int64) time.Duration {
		return time.Duration(float64(bytes) * 8 / float64(rate) * float64(time.Second))
	}
	return time.Duration(t.Hops()-2)*drain(q[0].TrimAt, fabRate) + drain(q[1].TrimAt, t.HostRate())
}

// queueConfigs returns the fabric-port and host-port queue configurations.
func (w *World) queueConfigs() [2]vswitch.QueueConfig {
	c := &w.cfg
	bdp := int(float64(w.t.HostRate()) / 8 * w.baseRTT.Seconds())
	q := c.Queue
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&q.Buffer, 4*bdp)
	def(&q.HeaderBuffer, bdp)
	def(&q.TrimAt, bdp)
	def(&q.LastHopTrimAt, bdp*3/2)
	def(&q.ECNMin, bdp/5)
	def(&q.ECNMax, bdp*4/5)
	def(&q.PFCXoff, q.Buffer/4)
	def(&q.PFCXon, q.PFCXoff/2)
	fab := vswitch.QueueConfig{
		Buffer: q.Buffer, HeaderBuffer: q.HeaderBuffer, Trim: c.Transport.Trim, TrimAt: q.TrimAt, TrimTo: q.TrimTo,
		ECNMin: q.ECNMin, ECNMax: q.ECNMax, Lossless: c.Transport.Lossless, PFCXoff: q.PFCXoff, PFCXon: q.PFCXon,
	}
	if c.Transport.ECNK {
		def(&q.ECNK, max(bdp/7, 2*(c.MTU+w.overhead)))
		fab.ECNK = q.ECNK
	}
	if c.Transport.Credits {
		// InfiniBand: no drops, no RED; FECN at one threshold with CCA,
		// by default below half a link's buffer, since a port fed by
		// one link never holds more than that link's buffer.
		fab.Credits, fab.ECNMin, fab.ECNMax = w.creditBuffer(), 0, 0
		if c.Queue.ECNK == 0 {
			fab.ECNK = min(fab.ECNK, fab.Credits/2)
		}
		if ib := c.Transport.IB; ib != nil && ib.CCA.Threshold > 0 && c.Transport.ECNK {
			fab.ECNK = ib.CCA.Threshold
		}
	}
	last := fab
	last.TrimAt = q.LastHopTrimAt
	last.LastHop = true
	last.ECNLastHop = c.Transport.ECNLastHop
	return [2]vswitch.QueueConfig{fab, last}
}

// installRoutes fills the switches' tables: the static uN tables of an
// SRv6 fabric, or shortest-path ECMP routes over the links up at the
// reference time (plane -1: every plane).
func (w *World) installRoutes(plane int) error {
	t := w.t
	var err error
	if w.cfg.Transport.Fabric == vswitch.ModeSRv6 {
		for i := range w.sws {
			vs := w.sws[i].vs
			t.SRv6Routes(i, func(r topo.Route) {
				if e := vs.AddRoute(r.Prefix, r.Bits, r.Ports...); e != nil && err == nil {
					err = e
				}
			})
		}
		return err
	}
	return w.ecmpRoutes(plane, func(int) bool { return true }, func(int) bool { return true }, -1)
}

// ecmpRoutes rebuilds the ECMP tables of plane's switches (-1: all) that
// pick selects, over the links up says are up; with now >= 0, each switch
// leaves out its own ports that it knows are down then (localRepair).
func (w *World) ecmpRoutes(plane int, pick func(sw int) bool, up func(link int) bool, now Time) error {
	var err error
	mine := func(i int) bool {
		return (plane < 0 || w.t.Switches[i].Plane == plane) && pick(i)
	}
	for i := range w.sws {
		if mine(i) {
			w.sws[i].vs.ClearRoutes()
		}
	}
	w.t.ECMPRoutes(plane, up, func(sw int, r topo.Route) {
		if len(r.Ports) == 0 || !mine(sw) {
			return
		}
		ports := r.Ports
		if now >= 0 {
			ports = w.repairedPorts(sw, ports, now)
		}
		if e := w.sws[sw].vs.AddRoute(r.Prefix, r.Bits, ports...); e != nil && err == nil {
			err = e
		}
	})
	return err
}

// setupFlows opens and connects a QP pair per connection (one per flow,
// or one per Conn shared by its flows), posts the receives of flows with
// connections of their own, and schedules the flows' and the triggers'
// starts.
func (w *World) setupFlows() error {
	flows := w.wl.Flows
	w.flows = make([]flowState, len(flows))
	w.qpFlow = make(map[uint64]int32, 2*len(flows))
	w.trigIndex = map[int]int32{}
	for i, tr := range w.wl.Triggers {
		w.trigIndex[tr.ID] = int32(i)
		w.trig = append(w.trig, trigState{kind: tr.Kind, count: tr.Count, delay: tr.Delay, firedAt: -1, shard: w.trigShard(i)})
	}
	for i, tr := range w.wl.Triggers {
		for _, a := range tr.Activates {
			w.trig[i].then = append(w.trig[i].then, w.trigIndex[a])
		}
	}
	w.trigFlows = make([][]int32, len(w.trig))
	conns := map[int][2]uint32{}
	for i, f := range flows {
		fs := &w.flows[i]
		fs.start, fs.sendDone, fs.recvDone = -1, -1, -1
		if qp, ok := conns[f.Conn]; ok && f.Conn != 0 {
			fs.srcQP, fs.dstQP = qp[0], qp[1]
		} else {
			index := i
			if f.Conn != 0 {
				index = f.Conn
			}
			if err := w.openConn(i, index); err != nil {
				return err
			}
			conns[f.Conn] = [2]uint32{fs.srcQP, fs.dstQP}
		}
		msgs := int32((f.Size + maxMessage - 1) / maxMessage)
		fs.sendLeft, fs.recvLeft = msgs, msgs
		if f.Conn == 0 {
			for range msgs {
				if err := w.hosts[f.Dst].nic.Receive(fs.dstQP, uint64(i)); err != nil {
					return fmt.Errorf("sim: flow %d: post receive: %w", f.ID, err)
				}
			}
		}
		if f.Trigger != 0 {
			ti := w.trigIndex[f.Trigger]
			w.trigFlows[ti] = append(w.trigFlows[ti], int32(i))
			continue
		}
		s := w.shards[w.hosts[f.Src].shard]
		s.push(f.Start, evFlowStart, 0, int32(i))
	}
	for i, tr := range w.wl.Triggers {
		if tr.Kind == workload.AtStart {
			w.trig[i].fired = true
			s := w.shards[w.trig[i].shard]
			s.delayed++
			s.push(tr.Delay, evTrigger, 0, int32(i))
		}
	}
	// Setting up QPs leaves work queued (nothing to send yet, timers):
	// arm every host's timer.
	for h := range w.hosts {
		w.shards[w.hosts[h].shard].armTimer(int32(h))
	}
	return nil
}

// openConn opens and connects the QP pair of flow i's connection, which
// the transports know by index.
func (w *World) openConn(i, index int) error {
	t, f, fs := w.t, &w.wl.Flows[i], &w.flows[i]
	pps := t.PathsPerPlane()
	src, dst := w.hosts[f.Src].nic, w.hosts[f.Dst].nic
	var err error
	if fs.srcQP, err = src.Open(0, ConnSpec{Peer: f.Dst, Index: index, PathsPerPlane: pps}); err != nil {
		return fmt.Errorf("sim: flow %d: open at host %d: %w", f.ID, f.Src, err)
	}
	if fs.dstQP, err = dst.Open(0, ConnSpec{Peer: f.Src, Index: index, PathsPerPlane: pps}); err != nil {
		return fmt.Errorf("sim: flow %d: open at host %d: %w", f.ID, f.Dst, err)
	}
	w.qpFlow[qpKey(int32(f.Src), fs.srcQP)] = int32(i)
	w.qpFlow[qpKey(int32(f.Dst), fs.dstQP)] = int32(i)
	srv6 := w.cfg.Transport.Fabric == vswitch.ModeSRv6
	peerOf := func(h int, qpn uint32, from int) Peer {
		p := Peer{QPN: qpn, Addrs: make([]netip.Addr, t.Planes)}
		for pl := range t.Planes {
			p.Addrs[pl] = w.hostAddr(h, pl)
		}
		if srv6 {
			p.Paths = t.Paths(from, h)
		}
		return p
	}
	if err := src.Connect(0, fs.srcQP, peerOf(f.Dst, fs.dstQP, f.Src)); err != nil {
		return fmt.Errorf("sim: flow %d: connect at host %d: %w", f.ID, f.Src, err)
	}
	if err := dst.Connect(0, fs.dstQP, peerOf(f.Src, fs.srcQP, f.Dst)); err != nil {
		return fmt.Errorf("sim: flow %d: connect at host %d: %w", f.ID, f.Dst, err)
	}
	return nil
}

// jobTimes returns when the triggers fired and the flows started, had
// every byte acknowledged and received, -1 for never: what a job's
// report reads.
func (w *World) jobTimes() job.Times {
	n := len(w.flows)
	t := job.Times{Fired: w.TriggerTimes(), Start: make([]time.Duration, n), Send: make([]time.Duration, n), Recv: make([]time.Duration, n)}
	dur := func(at Time) time.Duration {
		if at < 0 {
			return -1
		}
		return at.Duration()
	}
	for i, fs := range w.flows {
		t.Start[i], t.Send[i], t.Recv[i] = dur(fs.start), dur(fs.sendDone), dur(fs.recvDone)
	}
	return t
}

// TriggerTimes returns when each of the workload's triggers (in the
// order of Workload.Triggers) first fired, -1 for those that did not:
// for reading a job's steps out of a run (package sim/job).
func (w *World) TriggerTimes() []time.Duration {
	out := make([]time.Duration, len(w.trig))
	for i, ts := range w.trig {
		out[i] = -1
		if ts.firedAt >= 0 {
			out[i] = ts.firedAt.Duration()
		}
	}
	return out
}

// ns converts simulated picoseconds to the core's nanoseconds.
func ns(t Time) mtime.Time { return t.Nanos() }

// hostOut returns the directed link out of host h's port p.
func (w *World) hostOut(h int32, p int) int32 {
	return 2 * w.t.HostLink[int(h)*w.t.Planes+p]
}

// swOut returns the directed link out of switch i's port p.
func (w *World) swOut(i int32, p int) int32 {
	return w.swDL[int(w.sws[i].portBase)+p]
}
