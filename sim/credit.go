package sim

// InfiniBand's fabric: credit-based link-level flow control on every
// link (Transport.Credits), the LIDs its switches route by, and the
// D-mod-k divisors of its forwarding tables.
//
// A link's sender holds credits for the receiver's buffer, per virtual
// lane: the switches' egress ports in their vswitch, the NICs' ports
// here (hostCredit). The receiver gives them back as its buffer drains —
// a switch when it sends the packet on, a NIC when it takes it in — and
// whenever it drops a packet (a dead egress, a black hole; a packet lost
// on a dead link frees its credits where it dies, as the link's
// re-initialisation would). A credit return reaches the sender one link
// delay later, by event, or by message across partitions.

import (
	"math"
	"net/netip"

	"github.com/openmrc/mrc/vswitch"
)

// creditBuffer returns the buffer per virtual lane of every link's
// receiver: Transport.CreditBuffer, or the least that keeps the slowest
// credit loop full: a round trip of the longest link delay at the
// fastest rate, plus three of the largest packets (the one being sent,
// whose credits come back only after it has arrived, one to start next,
// and one for rounding the loop to whole packets).
func (w *World) creditBuffer() int {
	if b := w.cfg.Transport.CreditBuffer; b > 0 {
		return vswitch.CreditBytes(b)
	}
	var delay Time
	var rate int64
	for i := range w.lk {
		delay, rate = max(delay, w.lk[i].delay), max(rate, w.lk[i].rate)
	}
	loop := int(math.Ceil(float64(2*delay) * float64(rate) / 8e12)) // bytes; ps × b/s would overflow int64
	return vswitch.CreditBytes(loop) + 3*w.maxCredit()
}

// maxCredit is the credit the largest packet takes.
func (w *World) maxCredit() int { return vswitch.CreditBytes(w.cfg.MTU + 128) }

// ibRouting reports whether the switches route by LID (ModeDest or
// ModeAdaptive), so hosts' addresses carry their LIDs.
func (w *World) ibRouting() bool {
	m := w.cfg.Transport.Fabric
	return m == vswitch.ModeDest || m == vswitch.ModeAdaptive
}

// hostAddr returns the address of host h's port p; under LID routing its
// last 32 bits are the host's LID, h+1, as a subnet manager assigns LIDs
// in order.
func (w *World) hostAddr(h, p int) netip.Addr {
	a := w.t.HostAddr(h, p)
	if !w.ibRouting() {
		return a
	}
	b := a.As16()
	vswitch.SetLID(&b, uint32(h+1))
	return netip.AddrFrom16(b)
}

// destDiv returns D-mod-k's divisor for switch sw: the product of the
// up-port counts of one switch of each tier below its own.
func (w *World) destDiv(sw int) uint32 {
	t := w.t
	div := uint32(1)
	if !w.ibRouting() {
		return div
	}
	for tier := range t.Switches[sw].Tier {
		for i := range t.Switches {
			s := &t.Switches[i]
			if s.Tier != tier || s.Plane != t.Switches[sw].Plane {
				continue
			}
			up := 0
			for p := range s.Ports {
				peer, _ := t.Peer(int(t.SwitchPortLink[s.PortBase+p]), t.Node(i))
				if !t.IsHost(peer) && t.SwitchOf(peer).Tier > tier {
					up++
				}
			}
			div *= uint32(max(up, 1))
			break
		}
	}
	return div
}

// initHostCredits gives every NIC port the whole buffer of the switch
// port it feeds, per lane.
func (w *World) initHostCredits(buf int) {
	w.hostCredit = make([]int32, w.t.Hosts*w.t.Planes*vswitch.NumVLs)
	for i := range w.hostCredit {
		w.hostCredit[i] = int32(buf)
	}
}

// hostCredited reports whether host h's port p has credits for the
// largest packet on every lane (the NIC decides what it sends only once
// asked), or is not credit-limited.
func (w *World) hostCredited(h int32, p int) bool {
	if w.hostCredit == nil {
		return true
	}
	i := (int(h)*w.t.Planes + p) * vswitch.NumVLs
	m := int32(w.maxCredit())
	return w.hostCredit[i] >= m && w.hostCredit[i+1] >= m
}

// spendHostCredit takes the credits of packet pkt, wl bytes, sent on
// host h's port p.
func (w *World) spendHostCredit(h int32, p int, pkt []byte, wl int) {
	if w.hostCredit != nil {
		w.hostCredit[(int(h)*w.t.Planes+p)*vswitch.NumVLs+vswitch.DefaultDSCP.VL(pkt)] -= int32(vswitch.CreditBytes(wl))
	}
}

// creditBack returns the credits a packet of wl bytes on lane vl held in
// the buffer at the far end of directed link dl to dl's sender, one link
// delay from now.
func (s *shard) creditBack(dl int32, vl, wl int) {
	w := s.w
	at := s.now + w.lk[dl^1].delay
	n := uint32(vswitch.CreditBytes(wl))
	if target := w.lk[dl].sendShard; int(target) != s.id {
		s.out[target] = append(s.out[target], xmsg{at: at, dl: ^dl, h: uint32(vl)<<31 | n})
		return
	}
	s.push(at, evCredit, uint32(vl)<<23|n, dl)
}

// creditBackPkt is creditBack for packet p, with headers hdr[:p.n], that
// arrived over dl and went no further, whose lane its DSCP gives.
func (s *shard) creditBackPkt(dl int32, p *packet, hdr []byte) {
	if s.w.cfg.Transport.Credits {
		s.creditBack(dl, vswitch.DefaultDSCP.VL(hdr[:p.n]), int(p.wl))
	}
}

// creditArrive gives the sender of directed link dl back n bytes of
// credit on lane vl, and lets it send.
func (s *shard) creditArrive(dl int32, vl, n int) {
	w := s.w
	info := &w.lk[dl]
	hosts := int32(w.t.Hosts)
	if info.from < hosts {
		w.hostCredit[(int(info.from)*w.t.Planes+int(info.fromPort))*vswitch.NumVLs+vl] += int32(n)
		s.afterHost(info.from)
		return
	}
	si := info.from - hosts
	w.sws[si].vs.AddCredits(int(info.fromPort), vl, n)
	s.swKick(si, int(info.fromPort), dl)
}
