package perf

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/metrics"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/wire"
)

// parseEncap returns the encapsulation named s: "plain", "usid" or
// "srv6"; empty means srv6 with native framing, plain without.
func parseEncap(s string, native bool) (mrc.Encap, error) {
	switch s {
	case "":
		if native {
			return mrc.EncapSRv6, nil
		}
		return mrc.EncapPlain, nil
	case "plain":
		return mrc.EncapPlain, nil
	case "usid":
		return mrc.EncapUSID, nil
	case "srv6":
		return mrc.EncapSRv6, nil
	}
	return 0, fmt.Errorf("encapsulation %q, want plain, usid or srv6", s)
}

// Loopback paths: with overlay framing and SRv6 encapsulation but no path
// table, each plane gets four made-up paths, so the packets carry real
// uSID containers (captures show MRC's deployed format) even though the
// UDP sockets carry them straight to the peer.
const loopbackPaths = 4

func loopbackPath(plane int, ev wire.EV) [16]byte {
	p := uint32(plane) << 12
	return wire.F3216.Container([16]byte{0xfc, 0xbb, 0xbb, 0x00}, p|0x100, p|0x200|uint32(ev.Path()%loopbackPaths), p|0x101, p|0xe01)
}

// pathsPerPlane returns the EV profile's PathsPerPlane for the session's
// encapsulation (0: the core's default).
func (s *session) pathsPerPlane() int {
	if s.encap == mrc.EncapPlain {
		return 0
	}
	if s.paths == nil {
		return loopbackPaths
	}
	most := 0
	for _, a := range s.paths.Addrs() {
		most = max(most, len(s.paths.Paths(a)))
	}
	return most
}

// pathFunc returns the SRv6 paths to a peer with port addresses remote.
func (s *session) pathFunc(remote []netip.Addr) (mrc.PathFunc, error) {
	if s.encap == mrc.EncapPlain {
		return nil, nil
	}
	if s.paths == nil {
		if s.native != nil || s.encap == mrc.EncapUSID {
			return nil, fmt.Errorf("%v encapsulation needs a path table (--paths)", s.encap)
		}
		return loopbackPath, nil
	}
	f, _, err := s.paths.PathFunc(remote)
	return f, err
}

// EVEvent is one EV state change of the client's QP.
type EVEvent struct {
	T      float64 `json:"t"`       // seconds since the transfer started (first post)
	Unix   int64   `json:"unix_ns"` // wall clock, nanoseconds since 1970
	EV     string  `json:"ev"`
	Plane  int     `json:"plane"`
	Path   int     `json:"path"` // the EV's path index (wire.EV.Path) modulo the paths per plane
	From   string  `json:"from"`
	To     string  `json:"to"`
	Reason string  `json:"reason"`
}

// maxEVEvents bounds the EV timeline of a run.
const maxEVEvents = 20000

// evTracer records EV state changes (a trace.Tracer, called in the driver
// goroutine).
type evTracer struct {
	next    trace.Tracer // also gets every record (--trace), or nil
	epoch   time.Time    // the driver's clock origin
	paths   int
	events  []EVEvent
	dropped int
	times   []mtime.Time
}

func (t *evTracer) Trace(r *trace.Record) {
	if t.next != nil {
		t.next.Trace(r)
	}
	if r.Kind != trace.EVState {
		return
	}
	if len(t.events) >= maxEVEvents {
		t.dropped++
		return
	}
	path := wire.EV(r.EV).Path()
	if t.paths > 0 {
		path %= t.paths
	}
	t.events = append(t.events, EVEvent{EV: fmt.Sprintf("%08x", uint32(r.EV)), Plane: r.Plane, Path: path, From: r.From, To: r.To, Reason: r.Reason,
		Unix: t.epoch.Add(time.Duration(r.Time)).UnixNano()})
	t.times = append(t.times, r.Time)
}

// capture writes a session's packets into a pcapng file, one interface
// per host and plane; its writes are serialised (the server's sessions
// follow each other, but a pcap.Writer is not safe for concurrent use).
type capture struct {
	mu      sync.Mutex
	w       *pcap.Writer
	filter  pcap.Filter
	snaplen int
	ifs     map[string]int
	epochs  map[string]time.Time // per host: the wall time of its driver clock's 0
	base    time.Time            // the capture's epoch
	err     error
}

// newCapture starts a pcapng capture on w. filter selects packets (see
// pcap.ParseFilter), snaplen caps the bytes kept of each (0: all).
func newCapture(w io.Writer, filter string, snaplen int) (*capture, error) {
	f, err := pcap.ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	base := time.Now()
	pw, err := pcap.NewWriter(w, pcap.Options{Epoch: base, Application: "mrc perf"})
	if err != nil {
		return nil, err
	}
	return &capture{w: pw, filter: f, snaplen: snaplen, ifs: map[string]int{}, epochs: map[string]time.Time{}, base: base}, nil
}

// start tells the capture where host's clock starts.
func (c *capture) start(host string, epoch time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[host] = epoch
}

func (c *capture) write(host string, plane int, now mtime.Time, dir pcap.Direction, pkt []byte, wireLen int) {
	if !c.filter.Zero() && !c.filter.Match(pkt) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	name := host + ":port" + strconv.Itoa(plane)
	ifc, ok := c.ifs[name]
	if !ok {
		ifc, c.err = c.w.AddInterface(pcap.Interface{Name: name, Description: fmt.Sprintf("mrc perf %s, NIC port %d (plane %d)", host, plane, plane), Snaplen: c.snaplen})
		if c.err != nil {
			return
		}
		c.ifs[name] = ifc
	}
	// The capture's clock is the first session's; later sessions'
	// drivers start later.
	t := now
	if e, ok := c.epochs[host]; ok {
		t = mtime.Time(e.Sub(c.base)) + now
	}
	c.err = c.w.WriteDatagram(ifc, t, dir, pkt, wireLen)
}

// close flushes the capture and returns the first error.
func (c *capture) close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.Flush(); err != nil && c.err == nil {
		c.err = err
	}
	return c.err
}

// packets returns how many packets the capture holds.
func (c *capture) packets() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Packets()
}

// snapshot takes the session's metrics: its QP and endpoint in the driver
// goroutine (Driver.Do), its ports from the driver's counters.
func (s *session) snapshot() *metrics.Snapshot {
	snap := &metrics.Snapshot{}
	ds := s.Stats()
	err := s.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		snap.QPs = []metrics.QP{metrics.QPOf(s.host, s.qp, now)}
		snap.Endpoints = []metrics.Endpoint{metrics.EndpointOf(s.host, ep)}
		return nil
	})
	if err != nil {
		return snap // the driver has stopped: nothing to show
	}
	for p := range ds.TxPackets {
		snap.Ports = append(snap.Ports, metrics.Port{Node: s.host, Port: strconv.Itoa(p), Plane: p,
			TxPackets: ds.TxPackets[p], RxPackets: ds.RxPackets[p], TxBytes: ds.TxBytes[p], RxBytes: ds.RxBytes[p]})
	}
	return snap
}

// metricsServer serves the metrics of whichever session is current.
type metricsServer struct {
	mu  sync.Mutex
	cur *session
	srv *metrics.Server
}

// listenMetrics binds addr and serves the current session's metrics.
func listenMetrics(addr string) (*metricsServer, error) {
	m := &metricsServer{}
	srv, err := metrics.Listen(addr, metrics.Handler(m.collect))
	if err != nil {
		return nil, &SetupError{fmt.Errorf("--metrics %s: %w", addr, err)}
	}
	m.srv = srv
	return m, nil
}

func (m *metricsServer) set(s *session) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cur = s
}

func (m *metricsServer) collect() *metrics.Snapshot {
	m.mu.Lock()
	s := m.cur
	m.mu.Unlock()
	if s == nil {
		return &metrics.Snapshot{}
	}
	return s.snapshot()
}

// Addr returns the metrics server's address.
func (m *metricsServer) Addr() string { return m.srv.Addr().String() }

func (m *metricsServer) close() {
	if m != nil {
		m.srv.Close()
	}
}
