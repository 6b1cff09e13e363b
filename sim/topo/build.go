package topo

import (
	"fmt"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// Clos2Config describes a two-tier Clos with one independent plane per
// NIC port (digest §2): every host has Planes ports, port p attached to a
// T0 of plane p; every T0 of a plane connects once to every T1 of that
// plane. One plane is a leaf-spine.
type Clos2Config struct {
	Hosts  int // GPUs, one NIC each
	Planes int // NIC ports = planes (default 1)
	// T0Down is the number of host ports of a T0, T0Up its uplinks, which
	// is also the number of T1 switches per plane. With both zero they
	// are Radix/2 each.
	T0Down, T0Up int
	// Radix bounds every switch's port count (0: no bound). A T1 needs one
	// port per T0 of its plane.
	Radix int
	// HostRate is the speed of a NIC port and its link (default 100 Gb/s);
	// FabricRate of the T0–T1 links (default HostRate). Bits per second.
	HostRate, FabricRate int64
	// HostDelay and FabricDelay are the propagation delays of host and
	// T0–T1 links (defaults 1 µs); SwitchLatency is each switch's
	// forwarding latency (default 0).
	HostDelay, FabricDelay, SwitchLatency time.Duration
}

// Clos3Config describes a single-plane three-tier Clos (fat tree): pods of
// T0s and T1s, and T2 switches joining the pods.
type Clos3Config struct {
	Hosts int
	// T0Down host ports and T0Up uplinks per T0; T0Up is also the number
	// of T1s per pod. PodSize is the hosts per pod (T0s per pod =
	// PodSize/T0Down, which is each T1's down ports). T1Up is the uplinks
	// of each T1: T1 j of every pod connects to T2s j·T1Up … j·T1Up+T1Up−1.
	// With all zero and Radix set, a k-ary fat tree: Radix/2 everywhere.
	T0Down, T0Up, PodSize, T1Up int
	Radix                       int
	HostRate, FabricRate        int64
	// HostDelay: host–T0 links; FabricDelay: T0–T1 and T1–T2 links.
	HostDelay, FabricDelay, SwitchLatency time.Duration
}

// Clos2 builds a multi-plane two-tier Clos. Impossible parameters give an
// error naming the field.
func Clos2(c Clos2Config) (*Topology, error) {
	if c.Planes == 0 {
		c.Planes = 1
	}
	if c.T0Down == 0 && c.T0Up == 0 && c.Radix > 0 {
		c.T0Down, c.T0Up = c.Radix/2, c.Radix/2
	}
	if c.HostRate == 0 {
		c.HostRate = 100e9
	}
	if c.FabricRate == 0 {
		c.FabricRate = c.HostRate
	}
	if c.HostDelay == 0 {
		c.HostDelay = time.Microsecond
	}
	if c.FabricDelay == 0 {
		c.FabricDelay = time.Microsecond
	}
	switch {
	case c.Hosts < 2:
		return nil, fmt.Errorf("topology: hosts %d, want at least 2", c.Hosts)
	case c.Planes < 1 || c.Planes > 16:
		return nil, fmt.Errorf("topology: planes %d, want 1..16", c.Planes)
	case c.T0Down < 1:
		return nil, fmt.Errorf("topology: t0_down %d (or radix %d): want at least 1 host port per T0", c.T0Down, c.Radix)
	case c.T0Up < 1:
		return nil, fmt.Errorf("topology: t0_up %d: want at least 1 uplink per T0", c.T0Up)
	case c.Hosts%c.T0Down != 0:
		return nil, fmt.Errorf("topology: hosts %d not divisible by t0_down %d", c.Hosts, c.T0Down)
	case c.Radix > 0 && c.T0Down+c.T0Up > c.Radix:
		return nil, fmt.Errorf("topology: radix %d too small for t0_down %d + t0_up %d", c.Radix, c.T0Down, c.T0Up)
	case c.Radix > 0 && c.Hosts/c.T0Down > c.Radix:
		return nil, fmt.Errorf("topology: radix %d too small: each T1 needs %d ports, one per T0 (hosts %d / t0_down %d)",
			c.Radix, c.Hosts/c.T0Down, c.Hosts, c.T0Down)
	case c.HostRate <= 0 || c.FabricRate <= 0:
		return nil, fmt.Errorf("topology: link speed must be positive (host %d, fabric %d b/s)", c.HostRate, c.FabricRate)
	case c.HostDelay < 0 || c.FabricDelay < 0 || c.SwitchLatency < 0:
		return nil, fmt.Errorf("topology: negative link delay or switch latency")
	}
	nT0, nT1 := c.Hosts/c.T0Down, c.T0Up
	t := &Topology{Kind: "clos2", Hosts: c.Hosts, Planes: c.Planes, Block: DefaultBlock, clos2: c}
	t.tierCount = [3]int{nT0, nT1, 0}
	if nT0+nT1 > t.maxSwitchID() {
		return nil, fmt.Errorf("topology: %d switches per plane exceed the %d uSIDs a plane can name", nT0+nT1, t.maxSwitchID())
	}
	if c.T0Down > 1<<(t.idBits()-3) {
		return nil, fmt.Errorf("topology: t0_down %d exceeds the %d downlink uSIDs of a T0", c.T0Down, 1<<(t.idBits()-3))
	}
	t.Switches = make([]Switch, 0, c.Planes*(nT0+nT1))
	t.tierStart = make([][3]int, c.Planes)
	base := 0
	for p := range c.Planes {
		t.tierStart[p] = [3]int{len(t.Switches), len(t.Switches) + nT0, 0}
		for i := range nT0 {
			t.Switches = append(t.Switches, Switch{Tier: 0, Plane: p, Pod: 0, Index: i, USID: t.csid(p, 1+i),
				Ports: c.T0Down + c.T0Up, Latency: mtime.PicosOf(c.SwitchLatency), PortBase: base})
			base += c.T0Down + c.T0Up
		}
		for j := range nT1 {
			t.Switches = append(t.Switches, Switch{Tier: 1, Plane: p, Pod: 0, Index: j, USID: t.csid(p, 1+nT0+j),
				Ports: nT0, Latency: mtime.PicosOf(c.SwitchLatency), PortBase: base})
			base += nT0
		}
	}
	t.SwitchPortLink = make([]int32, base)
	t.HostLink = make([]int32, c.Hosts*c.Planes)
	t.Links = make([]Link, 0, c.Hosts*c.Planes+c.Planes*nT0*nT1)
	for h := range c.Hosts {
		for p := range c.Planes {
			t0 := t.tierStart[p][0] + h/c.T0Down
			t.connect(NodeID(h), p, t0, h%c.T0Down, c.HostRate, mtime.PicosOf(c.HostDelay))
			t.HostLink[h*c.Planes+p] = int32(len(t.Links) - 1)
		}
	}
	for p := range c.Planes {
		for i := range nT0 {
			for j := range nT1 {
				t0, t1 := t.tierStart[p][0]+i, t.tierStart[p][1]+j
				t.connect(t.Node(t0), c.T0Down+j, t1, i, c.FabricRate, mtime.PicosOf(c.FabricDelay))
			}
		}
	}
	return t, nil
}

// connect adds a link from port ap of node a to port bp of switch b.
func (t *Topology) connect(a NodeID, ap int, b int, bp int, rate int64, delay mtime.Picos) {
	l := int32(len(t.Links))
	t.Links = append(t.Links, Link{A: a, B: t.Node(b), APort: int32(ap), BPort: int32(bp), Rate: rate, Delay: delay})
	if !t.IsHost(a) {
		s := t.SwitchOf(a)
		t.SwitchPortLink[s.PortBase+ap] = l
	}
	s := &t.Switches[b]
	t.SwitchPortLink[s.PortBase+bp] = l
}

// Clos3 builds a single-plane three-tier Clos.
func Clos3(c Clos3Config) (*Topology, error) {
	if c.T0Down == 0 && c.T0Up == 0 && c.PodSize == 0 && c.T1Up == 0 && c.Radix > 0 {
		k := c.Radix / 2
		c.T0Down, c.T0Up, c.PodSize, c.T1Up = k, k, k*k, k
	}
	if c.HostRate == 0 {
		c.HostRate = 100e9
	}
	if c.FabricRate == 0 {
		c.FabricRate = c.HostRate
	}
	if c.HostDelay == 0 {
		c.HostDelay = time.Microsecond
	}
	if c.FabricDelay == 0 {
		c.FabricDelay = time.Microsecond
	}
	switch {
	case c.Hosts < 2:
		return nil, fmt.Errorf("topology: hosts %d, want at least 2", c.Hosts)
	case c.T0Down < 1 || c.T0Up < 1 || c.T1Up < 1:
		return nil, fmt.Errorf("topology: t0_down %d, t0_up %d, t1_up %d: want at least 1 each (or set radix)", c.T0Down, c.T0Up, c.T1Up)
	case c.PodSize < c.T0Down || c.PodSize%c.T0Down != 0:
		return nil, fmt.Errorf("topology: pod_size %d not a multiple of t0_down %d", c.PodSize, c.T0Down)
	case c.Hosts%c.PodSize != 0:
		return nil, fmt.Errorf("topology: hosts %d not divisible by pod_size %d", c.Hosts, c.PodSize)
	case c.HostRate <= 0 || c.FabricRate <= 0:
		return nil, fmt.Errorf("topology: link speed must be positive (host %d, fabric %d b/s)", c.HostRate, c.FabricRate)
	case c.HostDelay < 0 || c.FabricDelay < 0 || c.SwitchLatency < 0:
		return nil, fmt.Errorf("topology: negative link delay or switch latency")
	}
	pods := c.Hosts / c.PodSize
	t0PerPod := c.PodSize / c.T0Down
	nT0, nT1, nT2 := pods*t0PerPod, pods*c.T0Up, c.T0Up*c.T1Up
	if c.Radix > 0 {
		switch {
		case c.T0Down+c.T0Up > c.Radix:
			return nil, fmt.Errorf("topology: radix %d too small for t0_down %d + t0_up %d", c.Radix, c.T0Down, c.T0Up)
		case t0PerPod+c.T1Up > c.Radix:
			return nil, fmt.Errorf("topology: radix %d too small for a T1 with %d T0s below and t1_up %d", c.Radix, t0PerPod, c.T1Up)
		case pods > c.Radix:
			return nil, fmt.Errorf("topology: radix %d too small: each T2 needs one port per pod (%d)", c.Radix, pods)
		}
	}
	t := &Topology{Kind: "clos3", Hosts: c.Hosts, Planes: 1, Block: DefaultBlock, clos3: c}
	t.tierCount = [3]int{nT0, nT1, nT2}
	if nT0+nT1+nT2 > t.maxSwitchID() {
		return nil, fmt.Errorf("topology: %d switches exceed the %d uSIDs available", nT0+nT1+nT2, t.maxSwitchID())
	}
	t.tierStart = [][3]int{{0, nT0, nT0 + nT1}}
	t.Switches = make([]Switch, 0, nT0+nT1+nT2)
	base := 0
	add := func(tier, pod, idx, ports int) {
		t.Switches = append(t.Switches, Switch{Tier: tier, Pod: pod, Index: idx, USID: t.csid(0, 1+len(t.Switches)),
			Ports: ports, Latency: mtime.PicosOf(c.SwitchLatency), PortBase: base})
		base += ports
	}
	for i := range nT0 {
		add(0, i/t0PerPod, i, c.T0Down+c.T0Up)
	}
	for j := range nT1 {
		add(1, j/c.T0Up, j, t0PerPod+c.T1Up)
	}
	for k := range nT2 {
		add(2, -1, k, pods)
	}
	t.SwitchPortLink = make([]int32, base)
	t.HostLink = make([]int32, c.Hosts)
	for h := range c.Hosts {
		t.connect(NodeID(h), 0, h/c.T0Down, h%c.T0Down, c.HostRate, mtime.PicosOf(c.HostDelay))
		t.HostLink[h] = int32(len(t.Links) - 1)
	}
	for i := range nT0 {
		pod := i / t0PerPod
		for a := range c.T0Up {
			t.connect(t.Node(i), c.T0Down+a, nT0+pod*c.T0Up+a, i%t0PerPod, c.FabricRate, mtime.PicosOf(c.FabricDelay))
		}
	}
	for j := range nT1 {
		pod, a := j/c.T0Up, j%c.T0Up
		for u := range c.T1Up {
			t.connect(t.Node(nT0+j), t0PerPod+u, nT0+nT1+a*c.T1Up+u, pod, c.FabricRate, mtime.PicosOf(c.FabricDelay))
		}
	}
	return t, nil
}

// Clos2Config returns the configuration a two-tier topology was built
// with (defaults filled in).
func (t *Topology) Clos2Config() (Clos2Config, bool) { return t.clos2, t.Kind == "clos2" }

// Clos3Config returns the configuration a three-tier topology was built
// with (defaults filled in).
func (t *Topology) Clos3Config() (Clos3Config, bool) { return t.clos3, t.Kind == "clos3" }

// HostRate returns the speed of one NIC port.
func (t *Topology) HostRate() int64 { return t.Links[t.HostLink[0]].Rate }
