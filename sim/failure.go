package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/vswitch"
)

type actionOp uint8

const (
	aLinkDown actionOp = iota
	aLinkUp
	aLinkHeld // a link already down is now held down by another failure
	aLossy
	aLossyOff
	aBlackhole
	aBlackholeOff
)

// action is one scheduled change of the fabric's state.
type action struct {
	at   Time
	op   actionOp
	link int32 // link ops
	sw   int32 // blackhole ops
	loss float64
	fail int32 // the failure record it belongs to
}

// failRecord is one failed element, reported in the results.
type failRecord struct {
	kind      FailureKind
	element   string
	at, until Time
}

type linkEvent struct {
	at Time
	up bool
}

// scheduleFailures resolves the configured failures to elements, expands
// them to actions and schedules those in the partitions they touch.
func (w *World) scheduleFailures() error {
	t := w.t
	rng := rand.New(rand.NewPCG(w.cfg.Seed, 0xfa11))
	for i, f := range w.cfg.Failures {
		name := fmt.Sprintf("failures[%d] (%s %q)", i, f.Kind, f.Element)
		at, until := mtime.PicosOf(f.At), mtime.PicosOf(f.Until)
		switch {
		case f.At < 0 || f.Until < 0:
			return fmt.Errorf("sim: %s: negative time", name)
		case f.Until != 0 && f.Until <= f.At:
			return fmt.Errorf("sim: %s: until %v is not after at %v", name, f.Until, f.At)
		}
		elems, err := w.resolve(f, rng)
		if err != nil {
			return fmt.Errorf("sim: %s: %w", name, err)
		}
		for _, e := range elems {
			fi := int32(len(w.fails))
			w.fails = append(w.fails, failRecord{kind: f.Kind, element: w.elementName(e), at: at, until: until})
			links, err := w.linksOf(f.Kind, e)
			if err != nil {
				return fmt.Errorf("sim: %s: %w", name, err)
			}
			switch f.Kind {
			case SwitchReboot:
				if until == 0 {
					return fmt.Errorf("sim: %s: a reboot needs until", name)
				}
				for _, l := range links {
					w.addLinkActions(l, at, until, fi)
				}
			case LinkDown, NICPortDown, SwitchDown:
				for _, l := range links {
					w.addLinkActions(l, at, until, fi)
				}
			case LinkFlap:
				if until == 0 || f.FlapRate <= 0 {
					return fmt.Errorf("sim: %s: a flap needs until and a positive flap_rate", name)
				}
				down := mtime.PicosOf(f.DownFor)
				if down <= 0 {
					down = 10_000_000 // 10 µs
				}
				for ts := at; ; {
					ts += Time(rng.ExpFloat64() / f.FlapRate * 1e12)
					if ts >= until {
						break
					}
					end := min(ts+down, until)
					for _, l := range links {
						w.addLinkActions(l, ts, end, fi)
					}
					ts = end
				}
			case LossyLink:
				if f.Loss <= 0 || f.Loss > 1 {
					return fmt.Errorf("sim: %s: loss %v, want a probability in (0, 1]", name, f.Loss)
				}
				if w.loss == nil && len(links) > 0 {
					w.loss = make([]linkLoss, len(w.lk))
					for dl := range w.loss {
						w.loss[dl].fail = -1
						w.loss[dl].rng.Seed(w.cfg.Seed, uint64(dl)+0x51ab)
					}
				}
				for _, l := range links {
					w.actions = append(w.actions, action{at: at, op: aLossy, link: int32(l), loss: f.Loss, fail: fi})
					if until > 0 {
						w.actions = append(w.actions, action{at: until, op: aLossyOff, link: int32(l), fail: fi})
					}
				}
			case SwitchBlackhole:
				w.actions = append(w.actions, action{at: at, op: aBlackhole, sw: int32(e.ID), fail: fi})
				if until > 0 {
					w.actions = append(w.actions, action{at: until, op: aBlackholeOff, sw: int32(e.ID), fail: fi})
				}
			}
		}
	}
	w.mergeLinkHolds()
	for _, s := range w.shards {
		s.failLast = make([]Time, len(w.fails))
		s.failLastCtl = make([]Time, len(w.fails))
		s.failHits = make([]uint64, len(w.fails))
		s.failCtl = make([]uint64, len(w.fails))
		s.qpFirst = map[uint64]Time{}
		s.qpLast = map[uint64]Time{}
	}
	// Schedule each action in the partitions it touches, and, after
	// every change routing can see, the local repair of the switches at
	// the link's ends and the reconvergence of every switch of the
	// link's plane (the other planes' routes do not depend on it).
	type reconvAt struct {
		at    Time
		plane int
	}
	reconv := map[reconvAt]bool{}
	type repair struct {
		at Time
		sw int32
	}
	repairs := map[repair]bool{}
	for ai, a := range w.actions {
		for _, sh := range w.actionShards(a) {
			w.shards[sh].push(a.at, evAction, 0, int32(ai))
		}
		if w.cfg.Transport.Fabric == vswitch.ModeSRv6 || a.op != aLinkDown && a.op != aLinkUp {
			continue
		}
		// A link must stay down for the local-repair delay before its
		// ends drop it; they see it back at once.
		at := a.at
		if a.op == aLinkDown {
			at += mtime.PicosOf(w.cfg.LocalRepair)
		}
		k := &t.Links[a.link]
		plane := 0
		for _, n := range []topo.NodeID{k.A, k.B} {
			r := repair{at, int32(int(n) - t.Hosts)}
			if t.IsHost(n) {
				continue
			}
			plane = t.SwitchOf(n).Plane
			if !repairs[r] {
				repairs[r] = true
				w.shards[w.sws[r.sw].shard].push(r.at, evLocalRepair, 0, r.sw)
			}
		}
		rt := reconvAt{a.at + mtime.PicosOf(w.cfg.Reconvergence), plane}
		if w.swShards == 1 {
			rt.plane = -1 // one partition reconverges every plane at once
		}
		if !reconv[rt] {
			reconv[rt] = true
			for sh := range w.swShards {
				if w.swShards == 1 || sh/w.swGroups == plane {
					w.shards[sh].push(rt.at, evReconverge, 0, 0)
				}
			}
		}
	}
	return nil
}

func cmpTime(a, b Time) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// linkChanges returns link l's state changes in time order.
func (w *World) linkChanges(l int) []linkEvent {
	if w.linkEvents == nil {
		return nil
	}
	return w.linkEvents[l]
}

func (w *World) addLinkActions(l int, at, until Time, fi int32) {
	w.actions = append(w.actions, action{at: at, op: aLinkDown, link: int32(l), fail: fi})
	if until > 0 {
		w.actions = append(w.actions, action{at: until, op: aLinkUp, link: int32(l), fail: fi})
	}
}

// mergeLinkHolds makes each link down while any failure holds it: a
// flap on a host link of a T0 that is down, or a reboot's end on a
// switch that also failed for good, must not bring the link back. Of a
// link's down and up actions it keeps those that change its state; a
// failure's end while another still holds the link becomes aLinkHeld
// (the link's drops are charged to the other), and the rest go. It then
// records every link's state changes in time order (w.linkEvents).
func (w *World) mergeLinkHolds() {
	byLink := map[int32][]int{}
	for i, a := range w.actions {
		if a.op == aLinkDown || a.op == aLinkUp {
			byLink[a.link] = append(byLink[a.link], i)
		}
	}
	drop := make([]bool, len(w.actions))
	for l, idx := range byLink {
		// In time order; at one instant a hold starts before another ends,
		// so that the link does not blink up between them.
		slices.SortStableFunc(idx, func(i, j int) int {
			a, b := &w.actions[i], &w.actions[j]
			if c := cmpTime(a.at, b.at); c != 0 {
				return c
			}
			return int(a.op) - int(b.op)
		})
		var holders []int32 // the failures holding the link, the first charged
		for _, i := range idx {
			a := &w.actions[i]
			if a.op == aLinkDown {
				drop[i] = len(holders) > 0
				holders = append(holders, a.fail)
				continue
			}
			k := slices.Index(holders, a.fail)
			if k < 0 {
				drop[i] = true // cannot happen: every end follows its start
				continue
			}
			holders = slices.Delete(holders, k, k+1)
			switch {
			case len(holders) > 0 && k == 0:
				a.op, a.fail = aLinkHeld, holders[0]
			case len(holders) > 0:
				drop[i] = true
			}
		}
		if w.linkEvents == nil {
			w.linkEvents = make([][]linkEvent, len(w.t.Links))
		}
		for _, i := range idx {
			if a := &w.actions[i]; !drop[i] && a.op != aLinkHeld {
				w.linkEvents[l] = append(w.linkEvents[l], linkEvent{a.at, a.op == aLinkUp})
			}
		}
	}
	kept := w.actions[:0]
	for i, a := range w.actions {
		if !drop[i] {
			kept = append(kept, a)
		}
	}
	w.actions = kept
}

// linkUpAt reports whether link l was up at time at.
func (w *World) linkUpAt(l int, at Time) bool {
	up := true
	for _, e := range w.linkChanges(l) {
		if e.at > at {
			break
		}
		up = e.up
	}
	return up
}

func (w *World) actionShards(a action) []int {
	var out []int
	addS := func(s int16) {
		if !slices.Contains(out, int(s)) {
			out = append(out, int(s))
		}
	}
	if a.op == aBlackhole || a.op == aBlackholeOff {
		addS(int16(w.sws[a.sw].shard))
		return out
	}
	for d := range 2 {
		info := &w.lk[2*int(a.link)+d]
		addS(info.sendShard)
		addS(info.recvShard)
	}
	return out
}

func (w *World) elementName(e topo.Element) string {
	t := w.t
	switch e.Kind {
	case topo.ElemHost:
		return t.Name(topo.NodeID(e.ID))
	case topo.ElemSwitch:
		return t.Name(t.Node(e.ID))
	case topo.ElemHostPort:
		k := &t.Links[e.ID]
		return fmt.Sprintf("%s/p%d", t.Name(k.A), k.APort)
	}
	return t.LinkName(e.ID)
}

// resolve names the elements a failure applies to.
func (w *World) resolve(f Failure, rng *rand.Rand) ([]topo.Element, error) {
	t := w.t
	sel, random := strings.CutPrefix(f.Element, "random:")
	if !random {
		if f.Count > 1 {
			return nil, fmt.Errorf("count %d needs a random: element", f.Count)
		}
		e, err := t.Find(f.Element)
		if err != nil {
			return nil, err
		}
		return []topo.Element{e}, nil
	}
	n := max(f.Count, 1)
	var cands []topo.Element
	tierOf := func(id topo.NodeID) int {
		if t.IsHost(id) {
			return -1
		}
		return t.SwitchOf(id).Tier
	}
	switch sel {
	case "t0-t1", "t1-t2":
		lo := int(sel[1] - '0')
		for l, k := range t.Links {
			a, b := tierOf(k.A), tierOf(k.B)
			if min(a, b) == lo && max(a, b) == lo+1 {
				cands = append(cands, topo.Element{Kind: topo.ElemLink, ID: l})
			}
		}
	case "host-link":
		for _, l := range t.HostLink {
			cands = append(cands, topo.Element{Kind: topo.ElemHostPort, ID: int(l)})
		}
	case "t0", "t1", "t2":
		tier := int(sel[1] - '0')
		for i, s := range t.Switches {
			if s.Tier == tier {
				cands = append(cands, topo.Element{Kind: topo.ElemSwitch, ID: i})
			}
		}
	default:
		return nil, fmt.Errorf("unknown selector %q (want random:t0-t1, random:t1-t2, random:host-link, random:t0, random:t1 or random:t2)", f.Element)
	}
	if len(cands) < n {
		return nil, fmt.Errorf("count %d, but the fabric has %d such elements", n, len(cands))
	}
	for i := range n {
		j := i + rng.IntN(len(cands)-i)
		cands[i], cands[j] = cands[j], cands[i]
	}
	return cands[:n], nil
}

// linksOf returns the links a failure of kind k takes down on element e.
func (w *World) linksOf(k FailureKind, e topo.Element) ([]int, error) {
	t := w.t
	switch k {
	case LinkDown, LinkFlap, LossyLink:
		switch e.Kind {
		case topo.ElemLink, topo.ElemHostPort:
			return []int{e.ID}, nil
		}
		return nil, fmt.Errorf("%s needs a link (a/b, or a host port hN/pP)", k)
	case NICPortDown:
		switch e.Kind {
		case topo.ElemHostPort:
			return []int{e.ID}, nil
		case topo.ElemHost:
			var ls []int
			for p := range t.Planes {
				ls = append(ls, int(t.HostLink[e.ID*t.Planes+p]))
			}
			return ls, nil
		}
		return nil, fmt.Errorf("%s needs a host port (hN/pP) or a host", k)
	case SwitchDown, SwitchReboot:
		if e.Kind != topo.ElemSwitch {
			return nil, fmt.Errorf("%s needs a switch", k)
		}
		s := &t.Switches[e.ID]
		ls := make([]int, s.Ports)
		for p := range s.Ports {
			ls[p] = int(t.SwitchPortLink[s.PortBase+p])
		}
		return ls, nil
	case SwitchBlackhole:
		if e.Kind != topo.ElemSwitch {
			return nil, fmt.Errorf("%s needs a switch", k)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown failure kind %q (want link_down, link_flap, lossy_link, switch_down, switch_reboot, switch_blackhole or nic_port_down)", k)
}

// applyAction carries out the parts of action ai that this partition owns.
func (s *shard) applyAction(ai int32) {
	w := s.w
	a := &w.actions[ai]
	switch a.op {
	case aBlackhole, aBlackholeOff:
		sw := &w.sws[a.sw]
		on := a.op == aBlackhole
		sw.vs.SetBlackhole(on)
		sw.fail = -1
		if on {
			sw.fail = a.fail
		}
		return
	case aLossy, aLossyOff:
		for d := range 2 {
			dl := 2*a.link + int32(d)
			if int(w.lk[dl].recvShard) != s.id {
				continue
			}
			l := &w.loss[dl]
			if a.op == aLossy {
				l.p, l.fail = a.loss, a.fail
			} else {
				l.p, l.fail = 0, -1
			}
		}
		return
	}
	if a.op == aLinkHeld {
		for d := range 2 {
			dl := 2*a.link + int32(d)
			if int(w.lk[dl].recvShard) == s.id {
				w.rx[dl].fail = a.fail
			}
			if int(w.lk[dl].sendShard) == s.id {
				w.tx[dl].fail = a.fail
			}
		}
		return
	}
	up := a.op == aLinkUp
	fail := a.fail
	if up {
		fail = -1
	}
	hosts := int32(w.t.Hosts)
	for d := range 2 {
		dl := 2*a.link + int32(d)
		info := &w.lk[dl]
		if int(info.recvShard) == s.id {
			w.rx[dl].up, w.rx[dl].fail = up, fail
		}
		if int(info.sendShard) != s.id {
			continue
		}
		tx := &w.tx[dl]
		tx.up, tx.fail = up, fail
		if info.from < hosts {
			hs := &w.hosts[info.from]
			bit := uint32(1) << info.fromPort
			if up {
				hs.down &^= bit
			} else {
				hs.down |= bit
			}
			if err := hs.nic.SetPortUp(ns(s.now), int(info.fromPort), up); err != nil {
				s.err = fmt.Errorf("sim: host %d port %d: %w", info.from, info.fromPort, err)
				return
			}
			s.afterHost(info.from)
			continue
		}
		si := info.from - hosts
		vs := w.sws[si].vs
		vs.SetPortUp(int(info.fromPort), up)
		switch {
		case !up && w.cfg.Transport.Credits:
			vs.FlushCredits(int(info.fromPort), func(h vswitch.Handle, in, vl, wl int) {
				s.creditBack(w.swOut(si, in)^1, vl, wl)
				s.release(uint32(h))
			})
		case !up:
			s.resume = vs.Flush(int(info.fromPort), func(h vswitch.Handle) { s.release(uint32(h)) }, s.resume[:0])
			for _, in := range s.resume {
				s.pfc(si, in, xResume)
			}
		default:
			s.swKick(si, int(info.fromPort), dl)
		}
	}
}

// reconverge recomputes the ECMP routes of this partition's switches over
// the links that were up one reconvergence delay ago, less each switch's
// own links that it knows to be down (localRepair).
func (s *shard) reconverge() {
	w := s.w
	plane := s.id / w.swGroups
	if w.swShards == 1 {
		plane = -1
	}
	mine := func(sw int) bool { return int(w.sws[sw].shard) == s.id }
	if err := w.ecmpRoutes(plane, mine, w.routedLinks(s.now), s.now); err != nil {
		s.err = err
	}
}

// localRepair rebuilds switch sw's ECMP groups from the routes of the last
// reconvergence less its own ports whose link it knows to be down, as a
// switch does on its own: a link down for the whole local-repair delay
// (a debounce) is taken out, and put back as soon as it is up again if
// those routes have it. A group left with no port keeps its ports: the
// switch has no other way, and traffic goes on into the dead link until
// the fabric reconverges.
func (s *shard) localRepair(sw int32) {
	w := s.w
	only := func(i int) bool { return i == int(sw) }
	if err := w.ecmpRoutes(w.t.Switches[sw].Plane, only, w.routedLinks(s.now), s.now); err != nil {
		s.err = err
	}
}

// routedLinks returns which links the fabric's routing believes up at now:
// those up one reconvergence delay ago.
func (w *World) routedLinks(now Time) func(link int) bool {
	ref := now - mtime.PicosOf(w.cfg.Reconvergence)
	return func(l int) bool { return w.linkUpAt(l, ref) }
}

// repairedPorts returns ports of switch sw less those whose link has been
// down for the whole local-repair delay at now; all of ports if that
// leaves none.
func (w *World) repairedPorts(sw int, ports []int, now Time) []int {
	s := &w.t.Switches[sw]
	var kept []int
	for _, p := range ports {
		if !w.downThrough(int(w.t.SwitchPortLink[s.PortBase+p]), now-mtime.PicosOf(w.cfg.LocalRepair), now) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 || len(kept) == len(ports) {
		return ports
	}
	return kept
}

// downThrough reports whether link l was down all the time from from to
// to.
func (w *World) downThrough(l int, from, to Time) bool {
	if w.linkUpAt(l, from) {
		return false
	}
	for _, e := range w.linkChanges(l) {
		if e.at > to {
			break
		}
		if e.at > from && e.up {
			return false
		}
	}
	return true
}
