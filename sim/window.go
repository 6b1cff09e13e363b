package sim

import "errors"

// Windows run node by node. When every link is at least a window long,
// nothing a node does in a window can reach another node before the
// window ends: its packets, PFC frames and credits all cross a link. A
// node's events in the window then depend only on the node's own earlier
// events, and a partition may run the window one node at a time, each
// node's events in time order, rather than all its events in time order.
// That keeps a node's state in the caches across its events, where time
// order visits a large fabric's nodes at random. Events of one time are
// ordered by what they are, not by when they were scheduled
// (event.before), so the two orders give the same run to the bit
// (TestNodeOrderMatchesTimeOrder).

// canRunByNode reports whether the world's windows can run node by node: no
// trigger (a flow's completion starts another host's flow at once), no
// shared connection (a flow's start posts its receiver's receive), and
// no link shorter than window.
func (w *World) canRunByNode(window Time) bool {
	if len(w.trig) > 0 {
		return false
	}
	for i := range w.wl.Flows {
		if w.wl.Flows[i].Conn != 0 {
			return false
		}
	}
	for i := range w.lk {
		if w.lk[i].delay < window {
			return false
		}
	}
	return true
}

// nodeOf returns the node whose state event e changes alone, or -1 for an
// event that may change several (failures, reconvergence, triggers).
func (s *shard) nodeOf(e *event) int32 {
	switch e.kind() {
	case evArrive:
		return s.w.lk[e.id()].to
	case evTxDone, evPFC, evCredit:
		return s.w.lk[e.id()].from
	case evTimer:
		return e.id()
	case evFlowStart:
		return int32(s.w.wl.Flows[e.id()].Src)
	}
	return -1
}

var errNodeOrder = errors.New("sim: an event reached another node inside a window run node by node (internal error)")

// nodeEvent is an event of a window, beside the node it belongs to.
type nodeEvent struct {
	node int32
	e    event
}

// nodeScratch holds a window's events while a partition runs it node by
// node, and their sort's scratch. It belongs to a worker, not a
// partition: a large fabric's partitions would each hold their largest
// window (a tenth of the memory of --preset big).
type nodeScratch struct {
	window, tmp []nodeEvent
}

// runByNode runs the window's events before end node by node, and
// returns the time it stopped at: end, or the time of the first event
// that belongs to no single node, from which the caller goes on in time
// order. Events a node schedules for itself before that time wait in
// s.local, merged with its other events in order.
func (s *shard) runByNode(end Time, sc *nodeScratch) Time {
	evs := sc.window[:0]
	stop := end
	for {
		top := s.queue.peek()
		if top == nil {
			top = s.queue.advance(end)
		}
		if top == nil || top.at >= end {
			break
		}
		n := s.nodeOf(top)
		if n < 0 {
			stop = top.at
			break
		}
		evs = append(evs, nodeEvent{node: n, e: s.queue.pop()})
	}
	s.queue.unload()
	// The calendar handed them out in order: a stable sort by node keeps
	// each node's in order.
	sc.window, sc.tmp = evs, sortByNode(evs, sc.tmp)
	s.localEnd = stop
	latest := s.now
	for i := 0; i < len(evs) && s.err == nil; {
		s.cur = evs[i].node
		j := i
		for ; j < len(evs) && evs[j].node == s.cur; j++ {
			// Read ahead what the node's arrivals will read: their
			// links' pipes and head packets, scattered over a large
			// fabric's memory. These loads do not wait on each other,
			// so their cache misses overlap, where the arrivals would
			// meet them one after the other.
			if evs[j].e.kind() == evArrive {
				if h := s.w.rx[evs[j].e.id()].head; h != nilPkt {
					p, _ := s.pkt(h)
					s.ahead += uint64(p.nextAt)
				}
			}
		}
		for k := i; s.err == nil; {
			var e event
			if s.local.len() > 0 && (k == j || s.local.top().before(&evs[k].e)) {
				e = s.local.pop()
			} else if k < j {
				e = evs[k].e
				k++
			} else {
				break
			}
			s.now = e.at
			s.events++
			s.dispatch(&e)
			latest = max(latest, e.at)
		}
		i = j
	}
	// The clock ends the window where time order would leave it.
	s.now, s.localEnd = latest, 0
	return stop
}

// pushLocal keeps an event the current node scheduled for itself before
// the end of the node-ordered part of the window.
func (s *shard) pushLocal(e event) {
	if n := s.nodeOf(&e); n != s.cur {
		s.err = errNodeOrder
		return
	}
	s.local.push(e)
}

// sortByNode sorts evs by node, stably, with tmp as scratch, and returns
// tmp: by insertion when few, else by radix, a byte of the node at a
// time.
func sortByNode(evs, tmp []nodeEvent) []nodeEvent {
	if len(evs) < 64 {
		for i := 1; i < len(evs); i++ {
			e := evs[i]
			j := i
			for j > 0 && e.node < evs[j-1].node {
				evs[j] = evs[j-1]
				j--
			}
			evs[j] = e
		}
		return tmp
	}
	var top int32
	for i := range evs {
		top = max(top, evs[i].node)
	}
	tmp = append(tmp[:0], evs...)
	src, dst := evs, tmp
	for shift := 0; top>>shift > 0; shift += 8 {
		var count [257]int
		for i := range src {
			count[(src[i].node>>shift)&0xFF+1]++
		}
		for d := 1; d < len(count); d++ {
			count[d] += count[d-1]
		}
		for i := range src {
			d := (src[i].node >> shift) & 0xFF
			dst[count[d]] = src[i]
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &evs[0] {
		copy(evs, src)
	}
	return tmp
}
