package sim

// Observation hooks: packet capture at chosen points (Config.Taps and
// Capture) and the transports' trace records (Config.Trace). Partitions
// run concurrently, so both are buffered per partition during a window
// and handed to the caller between windows, merged in time order: the
// output does not depend on the number of workers. Nothing here runs
// when no tap and no tracer is configured.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/wire"
)

// Captured is one packet seen at a capture point.
type Captured struct {
	// Time is when the packet passed: the start of its transmission
	// when leaving a node, its arrival otherwise. Picoseconds.
	Time Time
	// Iface names the capture point: "h3/p1" (port 1, plane 1, of host
	// 3's NIC) or "t1-p0-2:5" (port 5 of switch t1-p0-2). Desc says
	// more ("NIC port 1 (plane 1) of host 3", "port 5 of t1-p0-2, to
	// t0-p0-4"). Both are the same string values for every packet of a
	// point.
	Iface, Desc string
	// Out is set for a packet leaving the node through the port, clear
	// for one arriving. A switch port's outgoing packets are captured
	// after queueing, as the wire carries them (trimmed, CE-marked);
	// arriving ones before forwarding rewrites them.
	Out bool
	// Data holds the packet's bytes from its outermost IPv6 header; the
	// payload is phantom, so Data is only the headers when WireLen is
	// larger. Valid during the call.
	Data []byte
	// WireLen is the datagram's length on the wire (IP header onwards).
	WireLen int
}

// Tap syntax, for Config.Taps:
//
//	h3/p1            port 1 (plane 1) of host 3's NIC: what it sends and receives
//	h3               every port of host 3
//	t1-p0-2:5        port 5 of switch t1-p0-2, both ways
//	t0-p0-1/t1-p0-3  the port of t0-p0-1 on its link to t1-p0-3
//	t1-p0-2          every port of switch t1-p0-2
//	flow:7           the packets of the flow with ID 7 (its QP pair) at
//	                 every NIC port of its two hosts
//
// Switch names are topo.Topology.Name's ("t1-5" in a single-plane fabric).
const tapSyntax = "h3/p1, h3, t1-p0-2:5, t0-p0-1/t1-p0-3, t1-p0-2 or flow:7"

// portTap is one capture point: a host NIC port or a switch port.
type portTap struct {
	name, desc string
	all        bool     // every packet
	qpns       []uint32 // flow taps: the local QPs whose packets to keep
}

// capRec is a captured packet waiting in its partition for the end of
// the window; its bytes are in the partition's capBuf.
type capRec struct {
	at      Time
	node    int32
	tap     int32
	out     bool
	off, n  int32
	wireLen int32
}

// traceRec is a trace record waiting in its partition.
type traceRec struct {
	host int32
	r    trace.Record
}

// hostTracer is the Tracer a host's transport gets: it keeps the records
// the filter passes in the host's partition.
type hostTracer struct {
	s    *shard
	host int32
	f    *trace.Filter
}

func (t *hostTracer) Trace(r *trace.Record) {
	if t.f != nil && !t.f.Match(r) {
		return
	}
	t.s.traces = append(t.s.traces, traceRec{host: t.host, r: *r})
}

// setupTaps resolves Config.Taps (after the flows' QPs exist).
func (w *World) setupTaps() error {
	if len(w.cfg.Taps) == 0 || w.cfg.Capture == nil {
		return nil
	}
	t := w.t
	w.hostTaps = make([]int32, t.Hosts*t.Planes)
	w.swTaps = make([]int32, len(t.SwitchPortLink))
	for i := range w.hostTaps {
		w.hostTaps[i] = -1
	}
	for i := range w.swTaps {
		w.swTaps[i] = -1
	}
	hostPort := func(h, p int) *portTap {
		i := h*t.Planes + p
		if w.hostTaps[i] < 0 {
			w.hostTaps[i] = int32(len(w.taps))
			w.taps = append(w.taps, portTap{name: fmt.Sprintf("h%d/p%d", h, p),
				desc: fmt.Sprintf("NIC port %d (plane %d) of host %d", p, p, h)})
		}
		return &w.taps[w.hostTaps[i]]
	}
	swPort := func(si, p int) {
		sw := &t.Switches[si]
		i := sw.PortBase + p
		if w.swTaps[i] >= 0 {
			return
		}
		peer, _ := t.Peer(int(t.SwitchPortLink[i]), t.Node(si))
		name := t.Name(t.Node(si))
		w.swTaps[i] = int32(len(w.taps))
		w.taps = append(w.taps, portTap{name: fmt.Sprintf("%s:%d", name, p), all: true,
			desc: fmt.Sprintf("port %d of %s, to %s", p, name, t.Name(peer))})
	}
	for _, spec := range w.cfg.Taps {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("sim: tap %q: %s", spec, fmt.Sprintf(format, args...))
		}
		if id, ok := strings.CutPrefix(spec, "flow:"); ok {
			n, err := strconv.Atoi(id)
			if err != nil {
				return bad("want flow:ID with a numeric flow ID")
			}
			fi := slices.IndexFunc(w.wl.Flows, func(f workload.Flow) bool { return f.ID == n })
			if fi < 0 {
				return bad("no flow has ID %d", n)
			}
			f := &w.wl.Flows[fi]
			for p := range t.Planes {
				src := hostPort(f.Src, p)
				src.qpns = append(src.qpns, w.flows[fi].srcQP)
				dst := hostPort(f.Dst, p)
				dst.qpns = append(dst.qpns, w.flows[fi].dstQP)
			}
			continue
		}
		name, port, hasPort := strings.Cut(spec, ":")
		if a, b, ok := strings.Cut(name, "/"); ok && !hasPort && !strings.HasPrefix(a, "h") {
			// A switch's port on a link: "t0-p0-1/t1-p0-3".
			ea, err := t.Find(a)
			if err != nil || ea.Kind != topo.ElemSwitch {
				return bad("%q is not a switch (%s)", a, tapSyntax)
			}
			sw := &t.Switches[ea.ID]
			found := false
			for p := range sw.Ports {
				peer, _ := t.Peer(int(t.SwitchPortLink[sw.PortBase+p]), t.Node(ea.ID))
				if t.Name(peer) == b {
					swPort(ea.ID, p)
					found = true
				}
			}
			if !found {
				return bad("%s has no link to %q", a, b)
			}
			continue
		}
		e, err := t.Find(name)
		if err != nil {
			return bad("%v (want %s)", err, tapSyntax)
		}
		switch e.Kind {
		case topo.ElemHost:
			if hasPort {
				return bad("a host's port is hN/pP")
			}
			for p := range t.Planes {
				hostPort(e.ID, p).all = true
			}
		case topo.ElemHostPort:
			if hasPort {
				return bad("a host's port is hN/pP")
			}
			k := &t.Links[e.ID]
			hostPort(int(k.A), int(k.APort)).all = true
		case topo.ElemSwitch:
			sw := &t.Switches[e.ID]
			if !hasPort {
				for p := range sw.Ports {
					swPort(e.ID, p)
				}
				continue
			}
			p, err := strconv.Atoi(port)
			if err != nil || p < 0 || p >= sw.Ports {
				return bad("%s has ports 0..%d", name, sw.Ports-1)
			}
			swPort(e.ID, p)
		default:
			return bad("not a port, a switch or a host (want %s)", tapSyntax)
		}
	}
	return nil
}

// tapHost records a packet at host hi's port if that port is tapped and
// keeps it: every packet, or those of a tapped flow's local QP qpn.
func (s *shard) tapHost(hi int32, port int, out bool, qpn uint32, pkt []byte, wireLen int) {
	ti := s.w.hostTaps[int(hi)*s.w.t.Planes+port]
	if ti < 0 {
		return
	}
	tp := &s.w.taps[ti]
	if !tp.all {
		if !out {
			qpn = destQP(pkt)
		}
		if !slices.Contains(tp.qpns, qpn) {
			return
		}
	}
	s.capture(hi, ti, out, pkt, wireLen)
}

// tapSwitch records a packet at switch si's port i (PortBase+port) if it
// is tapped.
func (s *shard) tapSwitch(si int32, i int, out bool, pkt []byte, wireLen int) {
	if ti := s.w.swTaps[i]; ti >= 0 {
		s.capture(int32(s.w.t.Hosts)+si, ti, out, pkt, wireLen)
	}
}

// capture keeps a packet seen at node's tap ti.
func (s *shard) capture(node, ti int32, out bool, pkt []byte, wireLen int) {
	s.caps = append(s.caps, capRec{at: s.now, node: node, tap: ti, out: out, off: int32(len(s.capBuf)), n: int32(len(pkt)), wireLen: int32(wireLen)})
	s.capBuf = append(s.capBuf, pkt...)
}

// destQP returns the BTH destination QP of pkt, or 0.
func destQP(pkt []byte) uint32 {
	h, ok := wire.Locate(pkt)
	if !ok {
		return 0
	}
	qpn, _ := h.DestQP(pkt)
	return qpn
}

// flushObservations hands the packets captured and the records traced
// during the last window to Config.Capture and Config.Trace, merged in
// time order (sortRefs).
func (w *World) flushObservations() {
	if w.cfg.Capture != nil && len(w.taps) > 0 {
		w.order = w.order[:0]
		for si, s := range w.shards {
			for i := range s.caps {
				w.order = append(w.order, obsRef{at: s.caps[i].at, node: s.caps[i].node, shard: int32(si), i: int32(i)})
			}
		}
		sortRefs(w.order)
		var c Captured
		for _, o := range w.order {
			s := w.shards[o.shard]
			r := &s.caps[o.i]
			tp := &w.taps[r.tap]
			c = Captured{Time: r.at, Iface: tp.name, Desc: tp.desc, Out: r.out,
				Data: s.capBuf[r.off : r.off+r.n], WireLen: int(r.wireLen)}
			w.cfg.Capture(&c)
		}
		for _, s := range w.shards {
			s.caps, s.capBuf = s.caps[:0], s.capBuf[:0]
		}
	}
	if w.cfg.Trace != nil {
		w.order = w.order[:0]
		for si, s := range w.shards {
			for i := range s.traces {
				w.order = append(w.order, obsRef{at: s.traces[i].r.Time.Picos(), node: s.traces[i].host, shard: int32(si), i: int32(i)})
			}
		}
		sortRefs(w.order)
		for _, o := range w.order {
			tr := &w.shards[o.shard].traces[o.i]
			w.cfg.Trace(int(tr.host), &tr.r)
		}
		for _, s := range w.shards {
			clear(s.traces) // drop the strings
			s.traces = s.traces[:0]
		}
	}
}

// obsRef points at a buffered observation, for merging.
type obsRef struct {
	at             Time
	node, shard, i int32
}

// sortRefs orders observations by time, then by node, then as their
// node made them (a node's all sit in its partition's buffer): the same
// whether the window ran in time order or node by node.
func sortRefs(r []obsRef) {
	slices.SortFunc(r, func(a, b obsRef) int {
		switch {
		case a.at != b.at:
			return cmpTime(a.at, b.at)
		case a.node != b.node:
			return int(a.node - b.node)
		}
		return int(a.i - b.i)
	})
}
