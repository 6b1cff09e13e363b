package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/trace/jsonl"
	"github.com/openmrc/mrc/udpio"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// ClientConfig configures a client run. Zero fields take the defaults in
// their comments.
type ClientConfig struct {
	Addr     netip.AddrPort // the server's control address
	Bytes    int64          // bytes to move (default 1 GiB unless Duration is set)
	Duration time.Duration  // or move data for this long

	Planes      int  // planes, one socket each per side (default 1)
	EVs         int  // active EVs per plane (default 16)
	MTU         int  // payload per packet (default 4096)
	Chunk       int  // bytes per WRITE_IMM (default 1 MiB)
	RingChunks  int  // chunks in the server's region (default 16)
	SourcePorts int  // sockets per plane: the EV→source-port pool (default 1)
	FlowLabels  bool // carry the EV in the outer IPv6 flow label
	NoGSO       bool
	NoGRO       bool
	Phantom     bool   // move no payload bytes (nothing to verify)
	Seed        uint64 // pattern and endpoint seed (default 1)

	BaseRTT      time.Duration // endpoint base RTT (default 100 µs)
	LossTimeout  time.Duration // per-packet loss timer floor (default 20 ms: a shared host stalls a process for milliseconds)
	RetryTimeout time.Duration // QP timeout per retry (default 64 ms)
	Retries      int           // retries before the QP gives up (default 9; about 1.4 s with the default timeout)
	Drop         float64       // drop this fraction of received packets, on both sides (testing)
	// SkipICRC makes both endpoints skip verifying the inner UDP
	// checksum and the ICRC of what they receive: the kernel has
	// verified the outer UDP checksum, which covers the same bytes.
	SkipICRC bool
	// DialTimeout bounds the control connection's setup (default 5 s).
	DialTimeout time.Duration
	// Native uses native framing: the core's packets go on the wire as
	// they are, through raw IPv6 sockets (CAP_NET_RAW), from and to the
	// NIC addresses in Ports (one per plane; Planes follows), and
	// arrive on UDP port 4791. docs/udpio.md.
	Native bool         `json:"native,omitempty"`
	Ports  []netip.Addr `json:"ports,omitempty"`
	// Encap is the encapsulation: "plain", "usid" or "srv6" (default
	// srv6 with native framing, plain without). usid and srv6 take their
	// paths from Paths; without a table, overlay srv6 makes some up.
	Encap     string           `json:"encap,omitempty"`
	Paths     *udpio.PathTable `json:"-"`
	PathsFile string           `json:"paths_file,omitempty"` // for the report
	// Pcap, when set, receives a pcapng capture of the client's packets
	// (PcapFilter selects them, PcapSnaplen caps the bytes kept of each).
	Pcap        io.Writer `json:"-"`
	PcapFilter  string    `json:"pcap_filter,omitempty"`
	PcapSnaplen int       `json:"pcap_snaplen,omitempty"`
	// MetricsAddr, when set, serves the client's metrics (Prometheus
	// text at /metrics) during the run.
	MetricsAddr string `json:"metrics_addr,omitempty"`
	// NoPoll turns the driver's non-blocking read before timers off
	// (udpio.Options.NoPoll), for measurements.
	NoPoll bool `json:"no_poll,omitempty"`
	// Trace, when set, receives the client endpoint's trace records
	// (package trace; TraceFilter selects them), in the driver goroutine.
	Trace       io.Writer `json:"-"`
	TraceFilter string    `json:"trace_filter,omitempty"`
	// TCP runs the kernel-TCP baseline instead: the same chunks and checks
	// over one TCP connection (the UDP and MRC options do not apply).
	TCP bool
	// Progress, when set, is called about once per second during the
	// transfer (from Run's goroutine).
	Progress func(Progress) `json:"-"`
}

// Progress is a running transfer's state.
type Progress struct {
	Bytes       int64         // bytes completed
	Total       int64         // bytes to move, or 0 for a timed run
	Elapsed     time.Duration // since the first post
	Retransmits uint64
}

func (c *ClientConfig) defaults() {
	if c.Bytes == 0 && c.Duration == 0 {
		c.Bytes = 1 << 30
	}
	if c.Planes == 0 {
		c.Planes = 1
		if c.Native && len(c.Ports) > 0 {
			c.Planes = len(c.Ports)
		}
	}
	if c.EVs == 0 {
		c.EVs = 16
	}
	if c.MTU == 0 {
		c.MTU = 4096
	}
	if c.Chunk == 0 {
		c.Chunk = 1 << 20
	}
	if c.RingChunks == 0 {
		c.RingChunks = 16
	}
	if c.SourcePorts == 0 {
		c.SourcePorts = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.BaseRTT == 0 {
		c.BaseRTT = 100 * time.Microsecond
	}
	if c.LossTimeout == 0 {
		c.LossTimeout = 20 * time.Millisecond
	}
	if c.RetryTimeout == 0 {
		c.RetryTimeout = 64 * time.Millisecond
	}
	if c.Retries == 0 {
		c.Retries = 9
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
}

// Result is a client run's report. The JSON names are the tool's output
// format.
type Result struct {
	Gbps           float64        `json:"gbps"`
	Interrupted    bool           `json:"interrupted"` // the run was cancelled: the statistics are partial
	Bytes          int64          `json:"bytes"`
	Seconds        float64        `json:"seconds"`
	Chunks         int64          `json:"chunks"`
	Verified       bool           `json:"verified"`
	Retransmits    uint64         `json:"retransmits"`
	Trims          uint64         `json:"trims"` // NACKs for trimmed packets, mid-fabric and last hop
	NACKs          uint64         `json:"nacks"` // all NACKs received
	LossTimeouts   uint64         `json:"loss_timeouts"`
	RetryTimeouts  uint64         `json:"retry_timeouts"`
	EVsRetired     uint64         `json:"evs_retired"`
	EVsResurrected uint64         `json:"evs_resurrected"`
	EVStates       map[string]int `json:"ev_states"` // EVs per state at the end
	MaxCwnd        int            `json:"max_cwnd"`  // largest congestion window seen, bytes
	MaxInflight    int            `json:"max_inflight"`
	ECNEchoes      uint64         `json:"ecn_echoes"`
	DataPackets    uint64         `json:"data_packets"`
	PerPlane       []PlaneUsage   `json:"per_plane"`
	PerEV          []EVUsage      `json:"per_ev"`
	// EVEvents is the EV timeline: every state change of the client's
	// EVs (at most 20000; EVEventsDropped counts the rest). StartUnix is
	// the wall-clock time of the first post, in nanoseconds.
	EVEvents        []EVEvent `json:"ev_events"`
	EVEventsDropped int       `json:"ev_events_dropped,omitempty"`
	StartUnix       int64     `json:"start_unix_ns"`
	// MaxStall is the longest wait between two WRITE completions (or from
	// the first post to the first), in seconds, and StallAt when it ended
	// (seconds since the start): what a failure cost the application.
	MaxStall    float64 `json:"max_stall_s"`
	StallAt     float64 `json:"stall_at_s"`
	Encap       string  `json:"encap"`
	Native      bool    `json:"native"`
	SendErrors  string  `json:"send_errors,omitempty"`
	PcapPackets uint64  `json:"pcap_packets,omitempty"`
	GSO         bool    `json:"gso"`
	GRO         bool    `json:"gro"`
	RxOverflows uint64  `json:"rx_overflows"`
	RxPolled    uint64  `json:"rx_polled"` // datagrams read without blocking before a due timer (udpio.DriverStats.RxPolled)
	// What the client discarded of what it received: in its endpoint
	// (by mrc.DropReason) and in its datapath (udpio.DriverStats), as
	// the server's report has them.
	Dropped       uint64            `json:"dropped"`
	DropReasons   map[string]uint64 `json:"drop_reasons,omitempty"`
	RxMalformed   uint64            `json:"rx_malformed"`
	RxJunk        uint64            `json:"rx_junk"`
	RxUnknownPeer uint64            `json:"rx_unknown_peer"`
	RxSpoofed     uint64            `json:"rx_spoofed"`
	InjectedDrops uint64            `json:"injected_drops"`
	Server        ServerReport      `json:"server"`
	Config        ClientConfig      `json:"config"`
}

// PlaneUsage is one plane's share of the data packets.
type PlaneUsage struct {
	Plane       int     `json:"plane"`
	Packets     uint64  `json:"packets"`
	Bytes       uint64  `json:"bytes"`
	Retransmits uint64  `json:"retransmits"`
	EVs         int     `json:"evs"` // distinct EVs that carried data
	Share       float64 `json:"share"`
}

// EVUsage is the data packets one EV carried.
type EVUsage struct {
	EV      string `json:"ev"`
	Plane   int    `json:"plane"`
	Packets uint64 `json:"packets"`
}

// clientState is the transfer's state in the driver goroutine.
type clientState struct {
	cfg       *ClientConfig
	qp        *mrc.QP
	local     verbs.MR
	remote    verbs.MR
	total     int64 // chunks, or -1 until stopped
	next      int64
	completed int64
	bytes     int64
	stop      bool
	start     mtime.Time
	end       mtime.Time
	err       error
	finished  chan struct{}
	closed    bool
	dropped   uint64

	maxCwnd, maxInflight int

	planes []PlaneUsage
	evs    map[uint32]uint64

	lastDone          mtime.Time
	maxStall, stallAt time.Duration
}

func (st *clientState) finish(now mtime.Time, err error) {
	if st.closed {
		return
	}
	if st.err == nil {
		st.err = err
	}
	st.end = now
	st.closed = true
	close(st.finished)
}

// post keeps RingChunks-1 chunks outstanding.
func (st *clientState) post(now mtime.Time) {
	c := st.cfg
	for st.next-st.completed < int64(c.RingChunks-1) && !st.stop && (st.total < 0 || st.next < st.total) {
		k := st.next
		src, dst := slots(k, c.RingChunks, c.Chunk)
		n := chunkLen(k, c.Bytes, c.Chunk)
		err := st.qp.PostWrite(now, verbs.WriteRequest{ID: uint64(k), Local: st.local, LocalOffset: uint64(src),
			Remote: st.remote, RemoteOffset: uint64(dst), Length: uint64(n), WithImm: true, Imm: uint32(k)})
		if err != nil {
			st.finish(now, err)
			return
		}
		st.next++
	}
}

func (st *clientState) onEvent(now mtime.Time, _ *mrc.Endpoint, ev verbs.Event) {
	switch ev.Kind {
	case verbs.EventWriteDone:
		cw, in := st.qp.Window()
		st.maxCwnd, st.maxInflight = max(st.maxCwnd, cw), max(st.maxInflight, in)
		if ev.Err != nil {
			st.finish(now, ev.Err)
			return
		}
		st.completed++
		st.bytes += int64(ev.Bytes)
		if gap := now.Sub(st.lastDone); gap > st.maxStall {
			st.maxStall, st.stallAt = gap, now.Sub(st.start)
		}
		st.lastDone = now
		st.post(now)
		if st.completed == st.next && (st.stop || st.next == st.total) {
			st.finish(now, nil)
		}
	case verbs.EventQPError:
		st.finish(now, ev.Err)
	}
}

func (st *clientState) tap(tx verbs.Transmit, pkt []byte) {
	if tx.Kind != verbs.KindData && tx.Kind != verbs.KindRetransmit {
		return
	}
	u := &st.planes[tx.Port]
	u.Packets++
	u.Bytes += uint64(tx.WireLen)
	if tx.Kind == verbs.KindRetransmit {
		u.Retransmits++
	}
	off := wire.IPv6Len // the UDP header: after the outer header when encapsulated
	if len(pkt) > 6 && pkt[6] == wire.ProtoIPv6 {
		off += wire.IPv6Len
	}
	if len(pkt) >= off+wire.UDPLen {
		ev := uint32(wire.JoinEV(binary.BigEndian.Uint16(pkt[off:]), wire.OuterFlowLabel(pkt)))
		st.evs[ev]++
	}
}

// ErrPeerGone means the server stopped answering: the QP ran out of
// retries.
var ErrPeerGone = errors.New("the server stopped responding")

// handshake sends h on the control connection and returns the server's
// answer, allowing 10 s for the exchange.
func handshake(conn net.Conn, lc *lineConn, h hello) (ready, error) {
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := lc.send(h); err != nil {
		return ready{}, fmt.Errorf("control connection: %w", err)
	}
	var r ready
	if err := lc.recv(&r); err != nil {
		return ready{}, err
	}
	if r.Error != "" {
		return ready{}, fmt.Errorf("server refused the session: %s", r.Error)
	}
	conn.SetDeadline(time.Time{})
	return r, nil
}

// Run runs one client transfer. Setup failures are *SetupError.
func Run(ctx context.Context, cfg ClientConfig) (*Result, error) {
	cfg.defaults()
	if err := cfg.check(); err != nil {
		return nil, &SetupError{err}
	}
	encap, err := parseEncap(cfg.Encap, cfg.Native)
	if err != nil {
		return nil, &SetupError{err}
	}
	cfg.Encap = encap.String()
	if cfg.TCP && (cfg.Native || encap != mrc.EncapPlain) {
		return nil, &SetupError{fmt.Errorf("the TCP baseline has no framing or encapsulation to choose")}
	}
	if cfg.Native {
		if err := udpio.CheckNative(cfg.Ports); err != nil {
			return nil, &SetupError{err}
		}
	}
	var ms *metricsServer
	if cfg.MetricsAddr != "" {
		if ms, err = listenMetrics(cfg.MetricsAddr); err != nil {
			return nil, err
		}
		defer ms.close()
	}
	var capt *capture
	if cfg.Pcap != nil {
		if capt, err = newCapture(cfg.Pcap, cfg.PcapFilter, cfg.PcapSnaplen); err != nil {
			return nil, &SetupError{fmt.Errorf("--pcap: %w", err)}
		}
	}
	dialer := net.Dialer{Timeout: cfg.DialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", cfg.Addr.String())
	if err != nil {
		return nil, fmt.Errorf("no perf server at %v: %w", cfg.Addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	lc := newLineConn(conn)
	if cfg.TCP {
		return runTCP(ctx, cfg, conn.(*net.TCPConn), lc)
	}

	st := &clientState{cfg: &cfg, total: -1, finished: make(chan struct{}), planes: make([]PlaneUsage, cfg.Planes), evs: map[uint32]uint64{}}
	if cfg.Bytes > 0 {
		st.total = (cfg.Bytes + int64(cfg.Chunk) - 1) / int64(cfg.Chunk)
	}
	ip := conn.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	tracer := &evTracer{}
	var jw *jsonl.Writer
	if cfg.Trace != nil {
		f, err := trace.ParseFilter(cfg.TraceFilter)
		if err != nil {
			return nil, &SetupError{fmt.Errorf("--trace-filter: %w", err)}
		}
		jw = jsonl.NewWriter(cfg.Trace)
		tracer.next = f.Tracer(jw.Host("client"))
	}
	ses, err := openSession(sessionConfig{
		host: "client", ip: ip, planes: cfg.Planes, mtu: cfg.MTU, evs: cfg.EVs, sourcePorts: cfg.SourcePorts, flowLabels: cfg.FlowLabels,
		noGSO: cfg.NoGSO, noGRO: cfg.NoGRO, seed: cfg.Seed, baseRTT: cfg.BaseRTT, lossTimer: cfg.LossTimeout,
		drop: cfg.Drop, dropped: &st.dropped, onEvent: st.onEvent, tap: st.tap, skipICRC: cfg.SkipICRC,
		native: cfg.Native, nativePorts: cfg.Ports, encap: encap, paths: cfg.Paths, capture: capt, trace: tracer, noPoll: cfg.NoPoll,
		phantom: cfg.Phantom,
	})
	if err != nil {
		return nil, err
	}
	defer ses.Close()
	tracer.paths = ses.pathsPerPlane()
	ms.set(ses)
	defer ms.set(nil)
	st.qp = ses.qp

	pat := []byte(nil)
	if !cfg.Phantom {
		pat = pattern(cfg.Seed, cfg.Chunk*(cfg.RingChunks+1))
	}
	h := hello{Version: Version, Planes: cfg.Planes, MTU: cfg.MTU, Chunk: cfg.Chunk, RingChunks: cfg.RingChunks,
		Bytes: cfg.Bytes, Phantom: cfg.Phantom, Seed: cfg.Seed, Ports: ses.ports, Sockets: ses.sockets, QPN: ses.qpn, PSN: ses.psn,
		EVs: cfg.EVs, SourcePorts: cfg.SourcePorts, FlowLabels: cfg.FlowLabels, BaseRTT: cfg.BaseRTT,
		LossTimeout: cfg.LossTimeout, Drop: cfg.Drop, SkipICRC: cfg.SkipICRC, Native: cfg.Native, Encap: cfg.Encap}
	r, err := handshake(conn, lc, h)
	if err != nil {
		return nil, err
	}
	if len(r.Ports) != cfg.Planes || len(r.Sockets) != cfg.Planes {
		return nil, fmt.Errorf("server answered with %d planes, want %d", len(r.Ports), cfg.Planes)
	}
	if err := ses.AddPeer(udpio.Peer{Ports: r.Ports, Sockets: r.Sockets}); err != nil {
		return nil, err
	}
	timeout := 1
	for timeout < 24 && time.Duration(1024<<timeout) < cfg.RetryTimeout {
		timeout++
	}
	lin, exp := min(cfg.Retries, 7), cfg.Retries-7
	if exp <= 0 {
		exp = -1
	}
	err = ses.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		var err error
		if cfg.Phantom {
			st.local, err = ep.RegisterPhantom(uint64(cfg.Chunk*(cfg.RingChunks+1)), verbs.AccessLocal)
		} else {
			st.local, err = ep.RegisterMemory(pat, verbs.AccessLocal)
		}
		if err != nil {
			return err
		}
		st.remote = r.MR
		q := ses.qp
		rtr := mrc.RTRAttr{RemoteQPN: r.QPN, Remote: r.Ports, RecvPSN: r.PSN}
		if rtr.Paths, err = ses.pathFunc(r.Ports); err != nil {
			return err
		}
		if err := q.ReadyToReceive(now, rtr); err != nil {
			return err
		}
		if err := q.ReadyToSend(now, mrc.RTSAttr{TimeoutExp: timeout, RetryLinear: lin, RetryExp: exp, SQDepth: cfg.RingChunks, SendPSN: ses.psn}); err != nil {
			return err
		}
		st.start, st.lastDone = now, now
		st.post(now)
		return nil
	})
	if err != nil {
		return nil, err
	}

	// The control connection must stay quiet until done; a server that
	// goes away closes it.
	type ctlMsg struct {
		rep ServerReport
		err error
	}
	ctl := make(chan ctlMsg, 1)
	go func() {
		var m ctlMsg
		m.err = lc.recv(&m.rep)
		ctl <- m
	}()
	var timer <-chan time.Time
	if cfg.Duration > 0 {
		timer = time.After(cfg.Duration)
	}
	var tick <-chan time.Time
	if cfg.Progress != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	var runErr error
wait:
	for {
		select {
		case <-st.finished:
			break wait
		case <-timer:
			timer = nil
			ses.Do(func(now mtime.Time, _ *mrc.Endpoint) error {
				st.stop = true
				if st.completed == st.next {
					st.finish(now, nil)
				}
				return nil
			})
		case <-tick:
			ses.Do(func(now mtime.Time, _ *mrc.Endpoint) error {
				cfg.Progress(Progress{Bytes: st.bytes, Total: cfg.Bytes, Elapsed: now.Sub(st.start), Retransmits: ses.qp.Stats().Retransmits})
				return nil
			})
		case m := <-ctl:
			switch {
			case m.err != nil:
				runErr = fmt.Errorf("the server ended the session early: %v", m.err)
			case m.rep.Error == ErrStopped.Error():
				runErr = ErrStopped
			default:
				runErr = fmt.Errorf("the server ended the session early: %s", m.rep.Error)
			}
			break wait
		case <-ses.Done():
			runErr = fmt.Errorf("datapath failed: %v", ses.Err())
			break wait
		case <-ctx.Done():
			runErr = ctx.Err()
			break wait
		}
	}

	res := &Result{Config: cfg}
	var stErr error
	ses.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		s := ses.qp.Stats()
		res.Retransmits, res.NACKs, res.Trims = s.Retransmits, s.NACKsReceived, s.TrimNACKs+s.LastHopNACKs
		res.LossTimeouts, res.RetryTimeouts = s.LossTimeouts, s.RetryTimeouts
		res.EVsRetired, res.EVsResurrected, res.ECNEchoes = s.EVRetired, s.EVResurrected, s.ECNEchoes
		res.DataPackets = s.DataSent + s.Retransmits
		es := ep.Stats()
		res.Dropped, res.DropReasons = es.Dropped(), dropReasons(es)
		res.EVStates = map[string]int{}
		for state, n := range ses.qp.EVCounts(now) {
			res.EVStates[verbs.EVState(state).String()] = n
		}
		res.Bytes, res.Chunks = st.bytes, st.completed
		end := st.end
		if !st.closed {
			end = now // interrupted, or the server went away
		}
		res.Seconds = end.Sub(st.start).Seconds()
		res.InjectedDrops = st.dropped
		res.MaxCwnd, res.MaxInflight = st.maxCwnd, st.maxInflight
		res.MaxStall, res.StallAt = st.maxStall.Seconds(), st.stallAt.Seconds()
		res.StartUnix = ses.Epoch().Add(time.Duration(st.start)).UnixNano()
		res.EVEvents = tracer.events
		for i := range res.EVEvents {
			res.EVEvents[i].T = tracer.times[i].Sub(st.start).Seconds()
		}
		res.EVEventsDropped = tracer.dropped
		stErr = st.err
		res.PerPlane = append([]PlaneUsage(nil), st.planes...)
		perPlaneEVs := make([]int, cfg.Planes)
		for ev, n := range st.evs {
			pl := wire.EV(ev).Plane()
			if pl < cfg.Planes {
				perPlaneEVs[pl]++
			}
			res.PerEV = append(res.PerEV, EVUsage{EV: fmt.Sprintf("%08x", ev), Plane: pl, Packets: n})
		}
		for p := range res.PerPlane {
			res.PerPlane[p].Plane = p
			res.PerPlane[p].EVs = perPlaneEVs[p]
			if res.DataPackets > 0 {
				res.PerPlane[p].Share = float64(res.PerPlane[p].Packets) / float64(res.DataPackets)
			}
		}
		return nil
	})
	sort.Slice(res.PerEV, func(i, j int) bool { return res.PerEV[i].EV < res.PerEV[j].EV })
	res.GSO, res.GRO = ses.offloads()
	res.RxOverflows = ses.bindStats().RecvOverflows
	ds := ses.Stats()
	res.RxPolled, res.RxMalformed, res.RxJunk, res.RxUnknownPeer, res.RxSpoofed = ds.RxPolled, ds.RxMalformed, ds.RxJunk, ds.RxUnknownPeer, ds.RxSpoofed
	res.Native, res.Encap, res.SendErrors = cfg.Native, cfg.Encap, ses.sendError()
	if jw != nil {
		ses.Close() // no record is written after this
		if err := jw.Flush(); err != nil && runErr == nil {
			runErr = fmt.Errorf("--trace: %w", err)
		}
	}
	if capt != nil {
		ses.Close() // no packet is written after this
		if err := capt.close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("--pcap: %w", err)
		}
		res.PcapPackets = capt.packets()
	}
	if res.Seconds > 0 {
		res.Gbps = float64(res.Bytes) * 8 / res.Seconds / 1e9
	}
	if runErr == nil && stErr != nil {
		if errors.Is(stErr, verbs.ErrNoPath) {
			runErr = fmt.Errorf("%w: the QP gave up after %d retries (%v)", ErrPeerGone, cfg.Retries, stErr)
		} else {
			runErr = fmt.Errorf("transfer failed: %w", stErr)
		}
	}
	if runErr != nil {
		res.Interrupted = ctx.Err() != nil
		stop()
		conn.SetDeadline(time.Now().Add(time.Second))
		failed := runErr.Error()
		if res.Interrupted {
			failed = "interrupted"
		}
		lc.send(done{Chunks: st.completed, Bytes: st.bytes, Failed: failed})
		return res, runErr
	}
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	if err := lc.send(done{Chunks: res.Chunks, Bytes: res.Bytes}); err != nil {
		return res, fmt.Errorf("control connection: %w", err)
	}
	// The reader goroutine owns the connection's reads: the report
	// comes through it.
	m := <-ctl
	if m.err != nil {
		return res, m.err
	}
	res.Server = m.rep
	res.Verified = m.rep.Verified
	if m.rep.Error != "" {
		return res, fmt.Errorf("server: %s", m.rep.Error)
	}
	if !cfg.Phantom && !res.Verified {
		return res, fmt.Errorf("verification failed: %d of %d chunks differ", m.rep.Mismatch, m.rep.Chunks)
	}
	return res, nil
}

func (c *ClientConfig) check() error {
	switch {
	case !c.Addr.IsValid() || c.Addr.Port() == 0:
		return fmt.Errorf("bad server address %v", c.Addr)
	case c.Bytes < 0 || c.Duration < 0:
		return fmt.Errorf("negative size or duration")
	case c.Planes < 1 || c.Planes > verbs.MaxPlanes:
		return fmt.Errorf("%d planes, want 1..%d", c.Planes, verbs.MaxPlanes)
	case c.EVs < 1 || c.EVs > 256:
		return fmt.Errorf("%d EVs per plane, want 1..256", c.EVs)
	case c.MTU < 256 || c.MTU > 9000:
		return fmt.Errorf("MTU %d, want 256..9000", c.MTU)
	case c.Chunk < 1 || c.Chunk > 256<<20:
		return fmt.Errorf("chunk %d bytes, want 1..256 MiB", c.Chunk)
	case c.RingChunks < 2 || c.RingChunks > 1024 || int64(c.Chunk)*int64(c.RingChunks+1) > 4<<30:
		return fmt.Errorf("ring of %d chunks of %d bytes", c.RingChunks, c.Chunk)
	case c.SourcePorts < 1 || c.SourcePorts > 1024:
		return fmt.Errorf("%d source ports, want 1..1024", c.SourcePorts)
	case c.Retries < 1 || c.Retries > 7+24:
		return fmt.Errorf("%d retries, want 1..31", c.Retries)
	case c.Drop < 0 || c.Drop >= 1:
		return fmt.Errorf("drop probability %v, want [0,1)", c.Drop)
	case c.Native && len(c.Ports) == 0:
		return fmt.Errorf("native framing needs the client's NIC port addresses (--ports)")
	case c.Native && len(c.Ports) != c.Planes:
		return fmt.Errorf("%d planes but %d port addresses", c.Planes, len(c.Ports))
	case c.Native && c.Phantom:
		return fmt.Errorf("native framing carries real packets: no phantom payloads")
	case c.Native && c.SkipICRC:
		return fmt.Errorf("native framing: the receiving kernel drops IPv6 UDP datagrams with a zero checksum, so --skip-icrc does not apply")
	}
	return nil
}
