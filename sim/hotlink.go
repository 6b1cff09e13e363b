package sim

// Congestion a connection met, per switch port, for a training job's
// straggler view: which link held its last flow up when no failure did.

import (
	"cmp"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/vswitch"
)

// portConn is the congestion one connection's packets met at one switch
// port: packets that waited longer than World.queuedAt and their total
// wait, and packets trimmed or dropped for want of room.
type portConn struct {
	waited           uint32
	waitedPs         Time
	trimmed, dropped uint32
}

// portConnKey names a switch port (its index in the topology's
// SwitchPortLink) and a connection (World.qpFlow's flow).
func portConnKey(port int, conn int32) uint64 { return uint64(port)<<32 | uint64(uint32(conn)) }

// hotEnqueue counts packet h, trimmed or dropped for want of room at
// switch port port (a global index), against its connection.
func (s *shard) hotEnqueue(port int, h uint32, v vswitch.Verdict) {
	if !v.Trimmed && v.Drop != vswitch.DropQueueFull && v.Drop != vswitch.DropHeaderFull {
		return
	}
	conn, ok := s.w.pktConn(h)
	if !ok {
		return
	}
	k := portConnKey(port, conn)
	c := s.hot[k]
	if v.Trimmed {
		c.trimmed++
	} else {
		c.dropped++
	}
	s.hot[k] = c
}

// hotDequeue counts packet h's wait at switch port port against its
// connection; the caller has checked it waited longer than queuedAt.
func (s *shard) hotDequeue(port int, h uint32, waited Time) {
	conn, ok := s.w.pktConn(h)
	if !ok {
		return
	}
	k := portConnKey(port, conn)
	c := s.hot[k]
	c.waited++
	c.waitedPs += waited
	s.hot[k] = c
}

// hotLink returns the switch port where the connection of flow ID id lost
// the most time, counting each of its packets' wait beyond queuedAt and
// a base RTT for each packet trimmed or dropped there; nil when it met no
// congestion (or no job was tracked).
func (w *World) hotLink(id int) *job.HotLink {
	conn, ok := w.connOf(id)
	if !ok {
		return nil
	}
	rtt := mtime.PicosOf(w.baseRTT)
	best, bestCost := -1, Time(0)
	var bestC portConn
	for _, s := range w.shards {
		for k, c := range s.hot {
			if int32(uint32(k)) != conn {
				continue
			}
			port := int(k >> 32)
			cost := c.waitedPs + Time(c.trimmed+c.dropped)*rtt
			if d := cmp.Compare(cost, bestCost); d > 0 || d == 0 && best >= 0 && port < best {
				best, bestCost, bestC = port, cost, c
			}
		}
	}
	if best < 0 {
		return nil
	}
	t := w.t
	sw := 0
	for sw+1 < len(t.Switches) && t.Switches[sw+1].PortBase <= best {
		sw++
	}
	node := t.Node(sw)
	peer, _ := t.Peer(int(t.SwitchPortLink[best]), node)
	return &job.HotLink{
		Link:           t.Name(node) + "→" + t.Name(peer),
		WaitedPackets:  uint64(bestC.waited),
		WaitedNs:       bestC.waitedPs.Nanoseconds(),
		Trimmed:        uint64(bestC.trimmed),
		Dropped:        uint64(bestC.dropped),
		PeakQueueBytes: w.sws[sw].vs.PortCounters(best - t.Switches[sw].PortBase).MaxBytes,
	}
}
