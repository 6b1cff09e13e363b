package perf

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/host/pages"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/udpio"
	"github.com/openmrc/mrc/verbs"
)

// SetupError is a failure to set up: a bad address, a port in use, a
// missing privilege. The tool reports it as a usage problem.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// ServerConfig configures a Server.
type ServerConfig struct {
	// Addr is the TCP control address; the UDP sockets of each session
	// bind free ports on the same IP.
	Addr netip.AddrPort
	// Logf, when set, gets one line per session.
	Logf func(format string, args ...any)
	// Native serves clients that ask for native framing: the sessions
	// send through raw IPv6 sockets (CAP_NET_RAW) and receive on UDP port
	// 4791 of Ports, the server's NIC addresses, plane by plane. Paths
	// holds the SRv6 paths to the clients' ports (usid and srv6
	// encapsulations).
	Native bool
	Ports  []netip.Addr
	Paths  *udpio.PathTable
	// Pcap, when set, receives a pcapng capture of every session's
	// packets (PcapFilter selects them, as pcap.ParseFilter reads it;
	// PcapSnaplen caps the bytes kept of each).
	Pcap        io.Writer
	PcapFilter  string
	PcapSnaplen int
	// MetricsAddr, when set, is where the latest session's metrics are
	// served (Prometheus text, at /metrics).
	MetricsAddr string
	// Limits bound what clients may take of the server.
	Limits Limits
}

// Server serves perf clients, up to Limits.MaxSessions at once.
type Server struct {
	cfg     ServerConfig
	ln      *net.TCPListener
	capture *capture
	metrics *metricsServer

	mu       sync.Mutex
	sessions []*tracked // oldest first
}

// tracked is a session the server is serving.
type tracked struct {
	conn net.Conn
	idle atomic.Bool // waiting for its hello, or its datapath is quiet
	shed atomic.Bool // closed to make room for a newer connection
}

// Listen binds the control port (and the metrics address).
func Listen(cfg ServerConfig) (*Server, error) {
	if cfg.Native && len(cfg.Ports) == 0 {
		return nil, &SetupError{fmt.Errorf("native framing needs the server's NIC port addresses (--ports)")}
	}
	if cfg.Native {
		if err := udpio.CheckNative(cfg.Ports); err != nil {
			return nil, &SetupError{err}
		}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	cfg.Limits.defaults()
	s := &Server{cfg: cfg}
	if cfg.Pcap != nil {
		c, err := newCapture(cfg.Pcap, cfg.PcapFilter, cfg.PcapSnaplen)
		if err != nil {
			return nil, &SetupError{fmt.Errorf("--pcap: %w", err)}
		}
		s.capture = c
	}
	if cfg.MetricsAddr != "" {
		m, err := listenMetrics(cfg.MetricsAddr)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(cfg.Addr))
	if err != nil {
		s.metrics.close()
		return nil, &SetupError{err}
	}
	s.ln = ln
	return s, nil
}

// MetricsAddr returns the address the metrics are served on, or "".
func (s *Server) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr()
}

// CapturedPackets returns how many packets the capture holds (0 without
// one).
func (s *Server) CapturedPackets() uint64 {
	if s.capture == nil {
		return 0
	}
	return s.capture.packets()
}

// Addr returns the control address (with the port chosen when Addr's was 0).
func (s *Server) Addr() netip.AddrPort {
	a := s.ln.Addr().(*net.TCPAddr).AddrPort()
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// Close stops accepting, stops serving metrics and flushes the capture.
func (s *Server) Close() error {
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil // Serve closed it
	}
	s.metrics.close()
	if cerr := s.capture.close(); cerr != nil {
		return fmt.Errorf("--pcap: %w", cerr)
	}
	return err
}

// ErrStopped is what a client is told when the server stops during its
// session.
var ErrStopped = errors.New("the server was stopped")

// errShed is what an idle session is told when a newer connection takes
// its place.
var errShed = errors.New("idle session shed to make room for a newer connection")

// Serve runs sessions until ctx is done, or, if once, until the first
// session that got past its hello ends. A session's failure is logged, not
// returned (but once returns it); Serve returns the listener's error, or
// nil when ctx ended it. It returns after every session has ended.
func (s *Server) Serve(ctx context.Context, once bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	first := make(chan error, 1) // the first session's outcome, with once
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			select {
			case err := <-first:
				return err
			default:
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		t := s.admit(conn)
		if t == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.release(t)
			helloed, err := s.serveOne(ctx, t)
			if once && helloed {
				select {
				case first <- err:
					cancel()
				default:
				}
			}
		}()
	}
}

// admit registers a new connection, shedding the oldest idle session when
// the server is full; it refuses the connection (nil) when none is idle.
func (s *Server) admit(conn net.Conn) *tracked {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= s.cfg.Limits.MaxSessions {
		i := slices.IndexFunc(s.sessions, func(t *tracked) bool { return t.idle.Load() })
		if i < 0 {
			s.cfg.Logf("refused %v: %d sessions running", conn.RemoteAddr(), len(s.sessions))
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			newLineConn(conn).send(ready{Error: fmt.Sprintf("server busy: %d sessions running", len(s.sessions))})
			conn.Close()
			return nil
		}
		old := s.sessions[i]
		old.shed.Store(true)
		old.conn.SetDeadline(time.Now()) // its session ends at its next read
		s.sessions = slices.Delete(s.sessions, i, i+1)
	}
	t := &tracked{conn: conn}
	t.idle.Store(true)
	s.sessions = append(s.sessions, t)
	return t
}

// release forgets a session that ended.
func (s *Server) release(t *tracked) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.sessions, t); i >= 0 {
		s.sessions = slices.Delete(s.sessions, i, i+1)
	}
	t.conn.Close()
}

// serveOne runs one session and logs its outcome. helloed reports whether
// its hello was accepted.
func (s *Server) serveOne(ctx context.Context, t *tracked) (helloed bool, err error) {
	peer := t.conn.RemoteAddr()
	rep, helloed, err := s.session(ctx, t)
	switch {
	case t.shed.Load():
		err = errShed
		s.cfg.Logf("session from %v: %v", peer, err)
	case err != nil:
		s.cfg.Logf("session from %v failed: %v", peer, err)
	case rep.Verified:
		s.cfg.Logf("session from %v: %d bytes in %s, verified", peer, rep.Bytes, plural(rep.Chunks, "chunk"))
	default:
		s.cfg.Logf("session from %v: %d bytes in %s, %d checked, %d mismatched", peer, rep.Bytes, plural(rep.Chunks, "chunk"), rep.Checked, rep.Mismatch)
	}
	if err == nil && rep.Error != "" {
		err = errors.New(rep.Error)
	}
	return helloed, err
}

// plural returns "1 chunk" or "n chunks".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// serverState is a session's state in the driver goroutine.
type serverState struct {
	h       hello
	region  []byte
	pat     []byte
	rep     ServerReport
	qpErr   error
	dropped uint64
}

func (st *serverState) onEvent(_ mtime.Time, ep *mrc.Endpoint, ev verbs.Event) {
	switch ev.Kind {
	case verbs.EventRecvImm:
		k := st.rep.Chunks
		st.rep.Chunks++
		st.rep.Bytes += int64(ev.Bytes)
		if !st.h.Phantom {
			st.rep.Checked++
			src, dst := slots(k, st.h.RingChunks, st.h.Chunk)
			n := int(ev.Bytes)
			if ev.Imm != uint32(k) || dst+n > len(st.region) || src+n > len(st.pat) ||
				!bytes.Equal(st.region[dst:dst+n], st.pat[src:src+n]) {
				st.rep.Mismatch++
			}
		}
		if q := ep.QP(ev.QPN); q != nil {
			q.PostRecv(ev.WRID)
		}
	case verbs.EventQPError:
		st.qpErr = ev.Err
	}
}

// session serves one connection: hello, ready, the transfer, the report.
// helloed reports whether the hello was accepted.
func (s *Server) session(ctx context.Context, t *tracked) (rep ServerReport, helloed bool, err error) {
	conn := t.conn
	lc := newLineConn(conn)
	h, err := s.readHello(conn, lc)
	if err != nil {
		return rep, false, err
	}
	t.idle.Store(false)
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()
	if h.TCP {
		rep, err = tcpServe(ctx, conn, lc, h, s.cfg.Limits.IdleTimeout)
		return rep, true, stopped(ctx, lc, err)
	}
	st := &serverState{h: h}
	d, mr, err := s.open(conn, st)
	if err != nil {
		lc.send(ready{Error: err.Error()})
		return rep, true, err
	}
	defer d.Close()
	s.metrics.set(d)
	defer s.metrics.set(nil)
	gso, gro := d.offloads()
	if err := lc.send(ready{Ports: d.ports, Sockets: d.sockets, QPN: d.qpn, PSN: d.psn, MR: mr, GSO: gso, GRO: gro}); err != nil {
		return rep, true, err
	}
	dn, err := s.waitDone(conn, lc, d, t)
	if err != nil && t.shed.Load() {
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		lc.send(ServerReport{Error: errShed.Error()})
	}
	if err != nil {
		return rep, true, stopped(ctx, lc, err)
	}
	rep = s.report(d, st, dn)
	return rep, true, lc.send(rep)
}

// readHello reads and checks the client's hello, answering a bad one with
// an error.
func (s *Server) readHello(conn net.Conn, lc *lineConn) (hello, error) {
	conn.SetReadDeadline(time.Now().Add(s.cfg.Limits.HelloTimeout))
	var h hello
	if err := lc.recv(&h); err != nil {
		lc.send(ready{Error: err.Error()})
		return h, fmt.Errorf("no hello: %w", err)
	}
	peer := conn.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	if err := h.validate(peer, s.cfg.Limits); err != nil {
		lc.send(ready{Error: err.Error()})
		return h, fmt.Errorf("bad hello: %w", err)
	}
	return h, nil
}

// stopped tells the client the server is stopping when ctx ended the
// session, and returns the error to log.
func stopped(ctx context.Context, lc *lineConn, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	lc.send(ServerReport{Error: ErrStopped.Error()})
	return ErrStopped
}

// waitDone waits for the client's done while the datapath moves data. The
// session is idle (sheddable) while the datapath has received nothing for
// a second, and ends after Limits.IdleTimeout of that.
func (s *Server) waitDone(conn net.Conn, lc *lineConn, d *session, t *tracked) (done, error) {
	conn.SetReadDeadline(time.Time{})
	var dn done
	msg := make(chan error, 1)
	go func() { msg <- lc.recv(&dn) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, quiet := rxPackets(d), time.Duration(0)
	for {
		select {
		case err := <-msg:
			return dn, err
		case <-tick.C:
			n := rxPackets(d)
			if n != last {
				last, quiet = n, 0
				t.idle.Store(false)
				continue
			}
			quiet += time.Second
			t.idle.Store(true)
			if quiet >= s.cfg.Limits.IdleTimeout {
				conn.SetReadDeadline(time.Now())
				<-msg
				return dn, fmt.Errorf("the client was idle for %v", quiet)
			}
		}
	}
}

// rxPackets returns the datagrams the session's driver has received.
func rxPackets(d *session) uint64 {
	var n uint64
	for _, p := range d.Stats().RxPackets {
		n += p
	}
	return n
}

// report gathers the server's report once the client is done.
func (s *Server) report(d *session, st *serverState, dn done) ServerReport {
	// Every chunk completed at the client has been placed here, but its
	// event may still be on its way through the driver.
	var rep ServerReport
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.Do(func(mtime.Time, *mrc.Endpoint) error {
			rep = st.rep
			return nil
		})
		if rep.Chunks >= dn.Chunks || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	d.Do(func(_ mtime.Time, e *mrc.Endpoint) error {
		s := e.Stats()
		rep.SACKs, rep.NACKs, rep.Dups, rep.Dropped = s.SACKsSent, s.NACKsSent, s.Duplicates, s.Dropped()
		rep.CEReceived, rep.TrimmedReceived, rep.ControlDropped = s.CEReceived, s.TrimmedReceived, s.ControlDropped
		rep.DropReasons, rep.AnswersWithheld = dropReasons(s), s.AnswersWithheld
		rep.Injected = st.dropped
		if st.qpErr != nil {
			rep.Error = st.qpErr.Error()
		}
		return nil
	})
	rep.Overflows = d.bindStats().RecvOverflows
	ds := d.Stats()
	rep.Malformed, rep.Junk, rep.UnknownPeer, rep.Spoofed = ds.RxMalformed, ds.RxJunk, ds.RxUnknownPeer, ds.RxSpoofed
	switch {
	case dn.Failed != "":
		rep.Error = "client failed: " + dn.Failed
	case rep.Chunks < dn.Chunks:
		rep.Error = fmt.Sprintf("%d of %d chunks arrived", rep.Chunks, dn.Chunks)
	}
	rep.Verified = !st.h.Phantom && rep.Error == "" && rep.Chunks == dn.Chunks && rep.Checked == rep.Chunks && rep.Mismatch == 0
	return rep
}

// session is a running endpoint with its QP, on either side.
type session struct {
	*udpio.Driver
	bind    udpio.Bind
	std     *udpio.StdBind    // overlay framing
	native  *udpio.NativeBind // native framing
	ports   []netip.Addr
	sockets []netip.AddrPort
	qp      *mrc.QP
	qpn     uint32
	psn     uint32 // the QP's first PSN, drawn at random
	encap   mrc.Encap
	paths   *udpio.PathTable
	host    string    // "client" or "server", for metrics and captures
	capture *capture  // or nil
	trace   *evTracer // or nil
}

// sessionConfig is what both sides need to open a session.
type sessionConfig struct {
	host               string
	ip                 netip.Addr
	planes             int
	mtu, evs           int
	sourcePorts        int
	flowLabels         bool
	noGSO, noGRO       bool
	seed               uint64
	baseRTT, lossTimer time.Duration
	drop               float64
	skipICRC           bool
	dropped            *uint64 // counts injected drops, in the driver goroutine
	onEvent            func(mtime.Time, *mrc.Endpoint, verbs.Event)
	tap                func(verbs.Transmit, []byte)
	// Native framing: the NIC port addresses, plane by plane.
	native      bool
	nativePorts []netip.Addr
	encap       mrc.Encap
	paths       *udpio.PathTable // SRv6 paths, or nil
	capture     *capture         // packet capture, or nil
	trace       *evTracer        // EV state changes, or nil
	noPoll      bool
	phantom     bool // the peer sends phantom payloads
}

// offloads reports whether the session's bind uses UDP GSO and GRO.
func (s *session) offloads() (gso, gro bool) {
	if s.std != nil {
		return s.std.Offloads()
	}
	return false, false
}

// bindStats returns the session's bind counters.
func (s *session) bindStats() udpio.BindStats {
	if s.std != nil {
		return s.std.Stats()
	}
	return s.native.Stats()
}

// sendError describes datagrams the kernel refused, if any: the raw
// socket of native framing fails a packet for a route or an MTU that
// does not fit.
func (s *session) sendError() string {
	if s.native == nil {
		return ""
	}
	st := s.native.Stats()
	if st.SendDrops == 0 {
		return ""
	}
	return fmt.Sprintf("the kernel refused %d of %d packets (last: %v)", st.SendDrops, st.SendDrops+st.Sent, s.native.LastSendError())
}

// openSession binds the planes' sockets, starts a driver and creates a QP
// in INIT.
func openSession(c sessionConfig) (*session, error) {
	var bind udpio.Bind
	var std *udpio.StdBind
	var native *udpio.NativeBind
	var ports []netip.Addr
	r := rand.New(rand.NewPCG(c.seed, uint64(time.Now().UnixNano())))
	if c.native {
		if len(c.nativePorts) < c.planes {
			return nil, &SetupError{fmt.Errorf("native framing: %d planes but %d port addresses", c.planes, len(c.nativePorts))}
		}
		ports = c.nativePorts[:c.planes]
		var err error
		native, err = udpio.NewNativeBind(udpio.NativeConfig{Planes: ports})
		if err != nil {
			return nil, &SetupError{err}
		}
		bind = native
	} else {
		planes := make([]netip.AddrPort, c.planes)
		for p := range planes {
			planes[p] = netip.AddrPortFrom(c.ip, 0)
		}
		var err error
		std, err = udpio.NewStdBind(udpio.StdConfig{Planes: planes, SourcePorts: c.sourcePorts, FlowLabels: c.flowLabels, NoGSO: c.noGSO, NoGRO: c.noGRO})
		if err != nil {
			return nil, &SetupError{err}
		}
		bind = std
		ports = coreAddrs(r, c.planes)
	}
	s := &session{bind: bind, std: std, native: native, ports: ports, encap: c.encap, paths: c.paths, host: c.host, capture: c.capture, trace: c.trace, psn: randomPSN()}
	opt := udpio.Options{FlowLabels: c.flowLabels && !c.native, OnEvent: c.onEvent, Tap: c.tap, NoPoll: c.noPoll, Phantom: c.phantom}
	if c.capture != nil {
		opt.Tap = func(tx verbs.Transmit, pkt []byte) {
			if c.tap != nil {
				c.tap(tx, pkt)
			}
			c.capture.write(s.host, tx.Port, s.Driver.Now(), pcap.DirOutbound, pkt, tx.WireLen)
		}
		opt.RxTap = func(plane int, pkt []byte, wireLen int) {
			c.capture.write(s.host, plane, s.Driver.Now(), pcap.DirInbound, pkt, wireLen)
		}
	}
	if c.drop > 0 {
		dr := rand.New(rand.NewPCG(c.seed, 0xd709))
		opt.RxFilter = func(int, []byte) bool {
			if dr.Float64() < c.drop {
				*c.dropped++
				return false
			}
			return true
		}
	}
	mcfg := mrc.Config{Ports: ports, MTU: c.mtu, Seed: r.Uint64(), BaseRTT: c.baseRTT, LossTimeout: c.lossTimer, SkipICRC: c.skipICRC, Encap: c.encap}
	if c.trace != nil {
		mcfg.Tracer = c.trace
	}
	d, err := udpio.New(bind, mcfg, opt)
	if err != nil {
		var se *SetupError
		if !errors.As(err, &se) {
			err = &SetupError{err}
		}
		return nil, err
	}
	s.Driver = d
	if c.capture != nil {
		c.capture.start(c.host, d.Epoch())
	}
	for p := range c.planes {
		s.sockets = append(s.sockets, bind.LocalAddr(p))
	}
	prof := mrc.EVProfile{ActivePerPlane: c.evs}
	if n := s.pathsPerPlane(); n > 0 {
		prof.PathsPerPlane = n
	}
	err = d.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		q, err := ep.CreateQP()
		if err != nil {
			return err
		}
		s.qp, s.qpn = q, q.QPN()
		if s.trace != nil {
			s.trace.epoch = d.Epoch()
		}
		return q.Init(now, mrc.InitAttr{EVs: prof})
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	return s, nil
}

// randomPSN draws a QP's first PSN, so that a blind attacker cannot guess
// the window (as RoCE does; issue 10).
func randomPSN() uint32 {
	var b [4]byte
	crand.Read(b[:])
	return binary.BigEndian.Uint32(b[:]) & maxQPN
}

// open starts the server's side of a session.
func (s *Server) open(conn net.Conn, st *serverState) (*session, verbs.MR, error) {
	h := &st.h
	ip := s.cfg.Addr.Addr()
	if ip.IsUnspecified() {
		la := conn.LocalAddr().(*net.TCPAddr).AddrPort()
		ip = la.Addr().Unmap()
	}
	encap, err := parseEncap(h.Encap, h.Native)
	if err != nil {
		return nil, verbs.MR{}, err
	}
	if h.Native != s.cfg.Native {
		if h.Native {
			return nil, verbs.MR{}, fmt.Errorf("the client asks for native framing, but this server runs overlay framing (start it with --native --ports ...)")
		}
		return nil, verbs.MR{}, fmt.Errorf("the client asks for overlay framing, but this server runs native framing")
	}
	ses, err := openSession(sessionConfig{
		host: "server", ip: ip, planes: h.Planes, mtu: h.MTU, evs: h.EVs, sourcePorts: h.SourcePorts, flowLabels: h.FlowLabels,
		seed: h.Seed ^ 0x5e7e, baseRTT: h.BaseRTT, lossTimer: h.LossTimeout, drop: h.Drop, dropped: &st.dropped, skipICRC: h.SkipICRC,
		onEvent: st.onEvent, native: h.Native, nativePorts: s.cfg.Ports, encap: encap, paths: s.cfg.Paths, capture: s.capture, phantom: h.Phantom,
	})
	if err != nil {
		return nil, verbs.MR{}, err
	}
	if err := ses.AddPeer(udpio.Peer{Ports: h.Ports, Sockets: h.Sockets}); err != nil {
		ses.Close()
		return nil, verbs.MR{}, err
	}
	var mr verbs.MR
	size := h.Chunk * h.RingChunks
	if !h.Phantom {
		st.region = pages.Mapped(size) // its first window must not wait on page faults
		st.pat = pattern(h.Seed, h.Chunk*(h.RingChunks+1))
	}
	err = ses.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		var err error
		if h.Phantom {
			mr, err = ep.RegisterPhantom(uint64(size), verbs.AccessRemoteWrite)
		} else {
			mr, err = ep.RegisterMemory(st.region, verbs.AccessRemoteWrite)
		}
		if err != nil {
			return err
		}
		q := ses.qp
		rtr := mrc.RTRAttr{RemoteQPN: h.QPN, Remote: h.Ports, RecvPSN: h.PSN}
		if rtr.Paths, err = ses.pathFunc(h.Ports); err != nil {
			return err
		}
		if err := q.ReadyToReceive(now, rtr); err != nil {
			return err
		}
		for i := range 128 {
			q.PostRecv(uint64(i))
		}
		// RTS although the server sends no data, as an RC QP is on both
		// ends: a QP in RTR retires the EVs of SACKs the client seems
		// not to have had and probes them, but drops the answers (the
		// core takes SACKs only in RTS), so those EVs would stay
		// retired.
		return q.ReadyToSend(now, mrc.RTSAttr{SendPSN: ses.psn})
	})
	if err != nil {
		ses.Close()
		return nil, verbs.MR{}, err
	}
	return ses, mr, nil
}
