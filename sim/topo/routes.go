package topo

import "github.com/openmrc/mrc/wire"

// Route is one static route of a switch: destinations whose first Bits
// bits equal Prefix's leave through one of Ports.
type Route struct {
	Prefix [16]byte
	Bits   int
	Ports  []int
}

// SRv6Routes calls add with switch i's static uN table (digest §3.12):
// the /48 of each neighbour switch's uSID to the ports that reach it, and
// the /48 of each downlink uSID to its host port. The table never
// changes: it does not depend on which links are up.
func (t *Topology) SRv6Routes(i int, add func(Route)) {
	s := &t.Switches[i]
	self := t.Node(i)
	byPeer := map[NodeID][]int{}
	var order []NodeID
	for p := range s.Ports {
		l := int(t.SwitchPortLink[s.PortBase+p])
		peer, _ := t.Peer(l, self)
		if t.IsHost(peer) {
			add(Route{Prefix: t.USIDAddr(t.DownlinkUSID(s.Plane, p)), Bits: 48, Ports: []int{p}})
			continue
		}
		if _, ok := byPeer[peer]; !ok {
			order = append(order, peer)
		}
		byPeer[peer] = append(byPeer[peer], p)
	}
	for _, peer := range order {
		add(Route{Prefix: t.USIDAddr(t.SwitchOf(peer).USID), Bits: 48, Ports: byPeer[peer]})
	}
}

// ECMPRoutes computes the shortest-path ECMP tables of the switches of
// plane (-1: every plane) over the links for which up returns true, as a
// converged routing protocol would, and calls add(switch, route) for each
// route: the /48 of every other T0 to the ports on shortest paths towards
// it (no ports: unreachable), and at each T0 the /64 of every attached
// host port (block | T0 uSID | downlink uSID, HostAddr).
func (t *Topology) ECMPRoutes(plane int, up func(link int) bool, add func(sw int, r Route)) {
	n := len(t.Switches)
	dist := make([]int32, n)
	queue := make([]int32, 0, n)
	for d := range n {
		sd := &t.Switches[d]
		if sd.Tier != 0 || plane >= 0 && sd.Plane != plane {
			continue
		}
		// Host routes at the T0 itself.
		self := t.Node(d)
		for p := range sd.Ports {
			l := int(t.SwitchPortLink[sd.PortBase+p])
			if peer, _ := t.Peer(l, self); t.IsHost(peer) {
				pre := wire.F3216.Container(t.Block, sd.USID, t.DownlinkUSID(sd.Plane, p))
				add(d, Route{Prefix: pre, Bits: 64, Ports: []int{p}})
			}
		}
		// Breadth-first distances to d over up links (within d's plane).
		for i := range dist {
			dist[i] = -1
		}
		dist[d] = 0
		queue = append(queue[:0], int32(d))
		for len(queue) > 0 {
			u := int(queue[0])
			queue = queue[1:]
			su := &t.Switches[u]
			for p := range su.Ports {
				l := int(t.SwitchPortLink[su.PortBase+p])
				peer, _ := t.Peer(l, t.Node(u))
				if t.IsHost(peer) || !up(l) {
					continue
				}
				v := int(peer) - t.Hosts
				if dist[v] < 0 {
					dist[v] = dist[u] + 1
					queue = append(queue, int32(v))
				}
			}
		}
		pre := t.USIDAddr(sd.USID)
		for s := range n {
			if s == d || dist[s] <= 0 {
				continue
			}
			ss := &t.Switches[s]
			var ports []int
			for p := range ss.Ports {
				l := int(t.SwitchPortLink[ss.PortBase+p])
				peer, _ := t.Peer(l, t.Node(s))
				if t.IsHost(peer) || !up(l) {
					continue
				}
				if dist[int(peer)-t.Hosts] == dist[s]-1 {
					ports = append(ports, p)
				}
			}
			add(s, Route{Prefix: pre, Bits: 48, Ports: ports})
		}
	}
}
