package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/udpio"
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
}

// Server accepts perf clients one at a time.
type Server struct {
	cfg ServerConfig
	ln  *net.TCPListener
}

// Listen binds the control port.
func Listen(cfg ServerConfig) (*Server, error) {
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(cfg.Addr))
	if err != nil {
		return nil, &SetupError{err}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Server{cfg: cfg, ln: ln}, nil
}

// Addr returns the control address (with the port chosen when Addr's was 0).
func (s *Server) Addr() netip.AddrPort {
	a := s.ln.Addr().(*net.TCPAddr).AddrPort()
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// Close stops accepting.
func (s *Server) Close() error { return s.ln.Close() }

// Serve runs sessions until ctx is done, or after one session if once.
// A session's failure is logged, not returned; Serve returns the
// listener's error, or nil when ctx ended it.
func (s *Server) Serve(ctx context.Context, once bool) error {
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		rep, err := s.session(ctx, conn)
		conn.Close()
		peer := conn.RemoteAddr()
		switch {
		case err != nil:
			s.cfg.Logf("session from %v failed: %v", peer, err)
		case rep.Verified:
			s.cfg.Logf("session from %v: %d bytes in %d chunks, verified", peer, rep.Bytes, rep.Chunks)
		default:
			s.cfg.Logf("session from %v: %d bytes in %d chunks, %d checked, %d mismatched", peer, rep.Bytes, rep.Chunks, rep.Checked, rep.Mismatch)
		}
		if once {
			if err == nil && rep.Error != "" {
				err = errors.New(rep.Error)
			}
			return err
		}
	}
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

func (st *serverState) onEvent(_ mtime.Time, ep *mrc.Endpoint, ev mrc.Event) {
	switch ev.Kind {
	case mrc.EventRecvImm:
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
	case mrc.EventQPError:
		st.qpErr = ev.Err
	}
}

func (h *hello) validate() error {
	switch {
	case h.Version != Version:
		return fmt.Errorf("protocol version %d, want %d", h.Version, Version)
	case h.Planes < 1 || h.Planes > mrc.MaxPlanes:
		return fmt.Errorf("%d planes", h.Planes)
	case !h.TCP && (len(h.Ports) != h.Planes || len(h.Sockets) != h.Planes):
		return fmt.Errorf("%d ports and %d sockets for %d planes", len(h.Ports), len(h.Sockets), h.Planes)
	case h.Chunk < 1 || h.Chunk > 1<<30 || h.RingChunks < 2 || h.RingChunks > 1024 || int64(h.Chunk)*int64(h.RingChunks+1) > 4<<30:
		return fmt.Errorf("chunk %d × ring %d", h.Chunk, h.RingChunks)
	case h.Bytes < 0 || h.Drop < 0 || h.Drop > 1:
		return fmt.Errorf("bad transfer shape")
	}
	return nil
}

func (s *Server) session(ctx context.Context, conn net.Conn) (ServerReport, error) {
	lc := newLineConn(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h hello
	if err := lc.recv(&h); err != nil {
		return ServerReport{}, err
	}
	if err := h.validate(); err != nil {
		lc.send(ready{Error: err.Error()})
		return ServerReport{}, fmt.Errorf("bad hello: %w", err)
	}
	if h.TCP {
		return tcpServe(conn, lc, h)
	}
	st := &serverState{h: h}
	d, mr, err := s.open(conn, st)
	if err != nil {
		lc.send(ready{Error: err.Error()})
		return ServerReport{}, err
	}
	defer d.Close()
	gso, gro := d.std.Offloads()
	if err := lc.send(ready{Ports: d.ports, Sockets: d.sockets, QPN: d.qpn, MR: mr, GSO: gso, GRO: gro}); err != nil {
		return ServerReport{}, err
	}
	// Wait for the client's done; a client that goes away closes the
	// connection (or TCP keepalive notices).
	conn.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()
	var dn done
	if err := lc.recv(&dn); err != nil {
		return ServerReport{}, err
	}
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
		rep.Injected = st.dropped
		if st.qpErr != nil {
			rep.Error = st.qpErr.Error()
		}
		return nil
	})
	rep.Overflows = d.std.Stats().RecvOverflows
	switch {
	case dn.Failed != "":
		rep.Error = "client failed: " + dn.Failed
	case rep.Chunks < dn.Chunks:
		rep.Error = fmt.Sprintf("%d of %d chunks arrived", rep.Chunks, dn.Chunks)
	}
	rep.Verified = !h.Phantom && rep.Error == "" && rep.Chunks == dn.Chunks && rep.Checked == rep.Chunks && rep.Mismatch == 0
	return rep, lc.send(rep)
}

// session is a running endpoint with its QP, on either side.
type session struct {
	*udpio.Driver
	std     *udpio.StdBind
	ports   []netip.Addr
	sockets []netip.AddrPort
	qp      *mrc.QP
	qpn     uint32
}

// sessionConfig is what both sides need to open a session.
type sessionConfig struct {
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
	onEvent            func(mtime.Time, *mrc.Endpoint, mrc.Event)
	tap                func(mrc.Transmit, []byte)
}

// openSession binds the planes' sockets, starts a driver and creates a QP
// in INIT.
func openSession(c sessionConfig) (*session, error) {
	planes := make([]netip.AddrPort, c.planes)
	for p := range planes {
		planes[p] = netip.AddrPortFrom(c.ip, 0)
	}
	std, err := udpio.NewStdBind(udpio.StdConfig{Planes: planes, SourcePorts: c.sourcePorts, FlowLabels: c.flowLabels, NoGSO: c.noGSO, NoGRO: c.noGRO})
	if err != nil {
		return nil, &SetupError{err}
	}
	r := rand.New(rand.NewPCG(c.seed, uint64(time.Now().UnixNano())))
	ports := coreAddrs(r, c.planes)
	opt := udpio.Options{FlowLabels: c.flowLabels, OnEvent: c.onEvent, Tap: c.tap}
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
	d, err := udpio.New(std, mrc.Config{Ports: ports, MTU: c.mtu, Seed: r.Uint64(), BaseRTT: c.baseRTT, LossTimeout: c.lossTimer, SkipICRC: c.skipICRC}, opt)
	if err != nil {
		var se *SetupError
		if !errors.As(err, &se) {
			err = &SetupError{err}
		}
		return nil, err
	}
	s := &session{Driver: d, std: std, ports: ports}
	for p := range c.planes {
		s.sockets = append(s.sockets, std.LocalAddr(p))
	}
	err = d.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		q, err := ep.CreateQP()
		if err != nil {
			return err
		}
		s.qp, s.qpn = q, q.QPN()
		return q.Init(now, mrc.InitAttr{EVs: mrc.EVProfile{ActivePerPlane: c.evs}})
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	return s, nil
}

// open starts the server's side of a session.
func (s *Server) open(conn net.Conn, st *serverState) (*session, mrc.MR, error) {
	h := &st.h
	ip := s.cfg.Addr.Addr()
	if ip.IsUnspecified() {
		la := conn.LocalAddr().(*net.TCPAddr).AddrPort()
		ip = la.Addr().Unmap()
	}
	ses, err := openSession(sessionConfig{
		ip: ip, planes: h.Planes, mtu: h.MTU, evs: h.EVs, sourcePorts: h.SourcePorts, flowLabels: h.FlowLabels,
		seed: h.Seed ^ 0x5e7e, baseRTT: h.BaseRTT, lossTimer: h.LossTimeout, drop: h.Drop, dropped: &st.dropped, skipICRC: h.SkipICRC,
		onEvent: st.onEvent,
	})
	if err != nil {
		return nil, mrc.MR{}, err
	}
	if err := ses.AddPeer(udpio.Peer{Ports: h.Ports, Sockets: h.Sockets}); err != nil {
		ses.Close()
		return nil, mrc.MR{}, err
	}
	var mr mrc.MR
	size := h.Chunk * h.RingChunks
	if !h.Phantom {
		st.region = make([]byte, size)
		st.pat = pattern(h.Seed, h.Chunk*(h.RingChunks+1))
	}
	err = ses.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		var err error
		if h.Phantom {
			mr, err = ep.RegisterPhantom(uint64(size))
		} else {
			mr, err = ep.RegisterMemory(st.region)
		}
		if err != nil {
			return err
		}
		q := ses.qp
		if err := q.ReadyToReceive(now, mrc.RTRAttr{RemoteQPN: h.QPN, Remote: h.Ports}); err != nil {
			return err
		}
		for i := range 128 {
			q.PostRecv(uint64(i))
		}
		return nil
	})
	if err != nil {
		ses.Close()
		return nil, mrc.MR{}, err
	}
	return ses, mr, nil
}
