package sim

// A shard's event loop: dispatch, the exchange between partitions at
// window ends, and packet ownership.

import (
	"fmt"

	"github.com/openmrc/mrc/internal/slab"
	"github.com/openmrc/mrc/vswitch"
)

// shard is one partition of the world: its own clock, event queue and
// packet pool. During a window it touches only its own nodes (and the
// sender or receiver half of their links); packets for other partitions
// go out as messages merged between windows.
type shard struct {
	w     *World
	id    int
	now   Time
	queue *calendar
	pool  *pool
	out   [][]xmsg // by destination partition

	remoteFree [][]uint32 // packets of other partitions' pools to hand back, by owner
	scratch    []byte
	events     uint64
	err        error

	planeRx   []uint64 // payload bytes delivered to hosts, by plane
	planeTx   []uint64 // wire bytes sent by hosts, by plane
	linkDrops [vswitch.NumDropCauses]uint64
	// Per failure record: the data and control packets it took, and
	// when it took the last of each; per (failure record, flow): when it
	// took the flow's first and last data packets.
	failHits    []uint64
	failCtl     []uint64
	failLast    []Time
	failLastCtl []Time
	qpFirst     map[uint64]Time
	qpLast      map[uint64]Time
	evTo        [4]uint64
	qpErrors    uint64
	sendDone    int
	recvDone    int
	failed      int
	lastDone    Time
	delayed     int // triggers waiting out their delay
	resume      []int

	// hot is the congestion each connection met per switch port, for a
	// job's straggler view (hotlink.go); nil without a job.
	hot map[uint64]portConn

	// Observations waiting for the end of the window (observe.go).
	caps   []capRec
	capBuf []byte
	traces []traceRec

	// A window run node by node (window.go): the current node and the
	// events it scheduled for itself before localEnd, which is 0
	// outside such a run.
	cur      int32
	local    evHeap
	localEnd Time
	ahead    uint64 // what runByNode read ahead, summed so that it is read
}

func (s *shard) push(at Time, k evKind, aux uint32, id int32) {
	e := event{at: at, arg: mkArg(k, aux, id)}
	if at < s.localEnd {
		s.pushLocal(e)
		return
	}
	s.queue.push(e)
}

// next returns the time of the earliest pending event, or never.
func (s *shard) next() Time { return s.queue.min() }

// run processes every event before end: node by node where the world
// allows it (window.go, with the running worker's scratch), else in time
// order.
func (s *shard) run(end Time, sc *nodeScratch) {
	if s.w.nodeOrder && s.runByNode(end, sc) == end {
		return
	}
	for s.err == nil {
		top := s.queue.peek()
		if top == nil {
			top = s.queue.advance(end)
		}
		if top == nil || top.at >= end {
			break
		}
		e := s.queue.pop()
		s.now = e.at
		s.events++
		s.dispatch(&e)
	}
}

// dispatch hands event e to its handler.
func (s *shard) dispatch(e *event) {
	switch e.kind() {
	case evArrive:
		s.arrive(e.id())
	case evTxDone:
		s.txDone(e.id())
	case evTimer:
		s.timer(e.id(), e.aux())
	case evFlowStart:
		s.startFlow(e.id())
	case evAction:
		s.applyAction(e.id())
	case evReconverge:
		s.reconverge()
	case evLocalRepair:
		s.localRepair(e.id())
	case evPFC:
		s.pfcArrive(e.id(), e.aux())
	case evTrigger:
		s.delayed--
		s.fire(e.id())
	case evCredit:
		s.creditArrive(e.id(), int(e.aux()>>23), int(e.aux()&(1<<23-1)))
	}
}

// ingest merges the messages other partitions sent this one during the
// last window, in partition order then sending order: deterministic
// whatever the number of workers. It also takes back the packets of this
// partition's pool that others have finished with.
func (s *shard) ingest() {
	for _, src := range s.w.shards {
		msgs := src.out[s.id]
		for i := range msgs {
			m := &msgs[i]
			if m.dl < 0 {
				s.push(m.at, evCredit, m.h>>31<<23|m.h&(1<<31-1), ^m.dl)
				continue
			}
			switch m.h {
			case xPause, xResume:
				s.push(m.at, evPFC, m.h&0xFFFFFF, m.dl)
			case xTrigger:
				s.activateAt(m.dl, m.at)
			case xRecv:
				s.postRecv(m.dl)
			default:
				s.enpipe(m.dl, m.h, m.at)
			}
		}
		src.out[s.id] = msgs[:0]
		if f := src.remoteFree[s.id]; len(f) > 0 {
			for _, h := range f {
				s.pool.put(h)
			}
			src.remoteFree[s.id] = f[:0]
		}
	}
}

// inbound counts the messages other partitions sent this one, and the
// packets they hand back to its pool, during the last window: ingest's
// work.
func (s *shard) inbound() int {
	n := 0
	for _, src := range s.w.shards {
		n += len(src.out[s.id]) + len(src.remoteFree[s.id])
	}
	return n
}

// pkt returns packet h, wherever its pool is, and its header room: its
// headers are hdr[:p.n].
func (s *shard) pkt(h uint32) (p *packet, hdr []byte) {
	return s.w.pools[h>>idxBits].at(h & idxMask)
}

// tag returns packet h's tag, wherever its pool is; the run must tag its
// packets (New gives the pools tags when it does).
func (w *World) tag(h uint32) *pktTag {
	return w.pools[h>>idxBits].tag(h & idxMask)
}

// alloc takes a packet with room for n header bytes from this
// partition's pool.
func (s *shard) alloc(n int) (uint32, bool) {
	h, ok := s.pool.alloc(n)
	if !ok {
		s.err = fmt.Errorf("sim: partition %d holds more than %d packets of a size", s.id, maxChunks*chunkSize)
	}
	return h, ok
}

// release frees packet h: into this partition's pool, or onto the list
// its owner takes back at the end of the window.
func (s *shard) release(h uint32) {
	if o := h >> idxBits; o == s.pool.id {
		s.pool.put(h)
	} else {
		s.remoteFree[o] = slab.Push(s.remoteFree[o], h)
	}
}
