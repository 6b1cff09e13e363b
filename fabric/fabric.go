// Package fabric builds an emulated MRC fabric out of Linux network
// namespaces and veth links, for tests: a multi-plane two-tier Clos whose
// T0 and T1 switches are Linux's own SRv6 routers (seg6local End with the
// NEXT-C-SID flavor, RFC 9800 uN) or `mrc switch` processes, and whose
// hosts decapsulate with End.DT6 and run the MRC datapath (`mrc perf`
// with native framing). docs/fabric.md describes the layout, the
// addressing and the tests.
//
// Every namespace is named prefix-PID-SEQ-NODE; Close deletes them (and
// kills what runs inside), and Sweep deletes those of a run that died
// before it could. Build needs root and iproute2; Available says why not.
// The harness only ever configures addresses it creates (fd00::/16 on
// the links, fcbb:bb00::/32 for uSIDs), inside its own namespaces.
package fabric

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Node kinds.
const (
	KindHost = "host"
	KindT0   = "t0"
	KindT1   = "t1"
)

// Encapsulations the fabric can be built for.
const (
	EncapSRv6 = "srv6" // IPv6-in-IPv6, uSID container outside; hosts decapsulate with End.DT6
	EncapUSID = "usid" // inline uSID container; hosts own their last uSID as an address
)

// Config shapes a fabric. Zero fields take the defaults in their comments.
type Config struct {
	// Prefix starts every namespace name (default DefaultPrefix).
	Prefix string
	// Planes is the number of planes (default 2, at most 15).
	Planes int
	// Hosts is the number of hosts (default 2, at most 16). Host h hangs
	// off T0 h of every plane, with one NIC port per plane.
	Hosts int
	// T1s is the number of T1 switches per plane (default 2, at most 16):
	// the paths between two hosts on one plane.
	T1s int
	// MTU of every link (default 9000; MRC's 4 KiB packets plus headers
	// must fit).
	MTU int
	// Encap is EncapSRv6 (default) or EncapUSID.
	Encap string
	// MRC names the switches that run `mrc switch` instead of Linux
	// routing, e.g. "t1-p1-0". MRCBinary is then the mrc binary.
	MRC       []string
	MRCBinary string
	// MRCPort sets the rate and delay of every port of an `mrc switch`
	// ("rate 1G delay 50us", the table file's port options), MRCQueue
	// its queue directive ("buffer 512KiB trim-at 64KiB ecn 16KiB 48KiB").
	MRCPort  string
	MRCQueue string
	// Dir holds the files the harness writes (path tables, switch
	// tables, outputs); default a new temporary directory, removed by
	// Close.
	Dir string
	// Logf, when set, gets a line per step.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() error {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Planes == 0 {
		c.Planes = 2
	}
	if c.Hosts == 0 {
		c.Hosts = 2
	}
	if c.T1s == 0 {
		c.T1s = 2
	}
	if c.MTU == 0 {
		c.MTU = 9000
	}
	if c.Encap == "" {
		c.Encap = EncapSRv6
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	switch {
	case c.Planes < 1 || c.Planes > 15:
		return fmt.Errorf("fabric: %d planes, want 1..15", c.Planes)
	case c.Hosts < 2 || c.Hosts > 16:
		return fmt.Errorf("fabric: %d hosts, want 2..16", c.Hosts)
	case c.T1s < 1 || c.T1s > 16:
		return fmt.Errorf("fabric: %d T1s per plane, want 1..16", c.T1s)
	case c.MTU < 1280 || c.MTU > 65535:
		return fmt.Errorf("fabric: MTU %d", c.MTU)
	case c.Encap != EncapSRv6 && c.Encap != EncapUSID:
		return fmt.Errorf("fabric: encapsulation %q, want %q or %q", c.Encap, EncapSRv6, EncapUSID)
	case len(c.MRC) > 0 && c.MRCBinary == "":
		return errors.New("fabric: MRC switches need MRCBinary")
	}
	return nil
}

// Node is a host or switch of the fabric: one network namespace.
type Node struct {
	Name  string // "h0", "t0-p1-0", "t1-p0-1"
	NS    string // its network namespace
	Kind  string // KindHost, KindT0, KindT1
	Plane int    // switches: their plane
	Index int    // host number, or the switch's index in its tier and plane
	USID  uint16 // switches: their uN uSID
	MRC   bool   // run by `mrc switch`
	ifs   []*iface
	// conf holds the ip commands that configure each interface, replayed
	// when it comes back up.
	conf map[string][]string
	// neigh holds the ip commands that pin neighbours reached through an
	// interface (next hops that are `mrc switch` ports).
	proc *Proc // the `mrc switch` process
}

// iface is one end of a link.
type iface struct {
	node *Node
	name string
	mac  string
	addr netip.Addr // its address on the link (for an `mrc switch` end: the name its neighbour routes via)
	peer *iface
}

// Link is a veth pair between two nodes.
type Link struct {
	A, B   string // node names
	AIf    string // interface names
	BIf    string
	AAddr  netip.Addr
	BAddr  netip.Addr
	ends   [2]*iface
	isDown atomic.Bool
}

// Fabric is a built fabric. Its methods are safe for concurrent use.
type Fabric struct {
	cfg    Config
	id     string
	dir    string
	ownDir bool
	nodes  map[string]*Node
	order  []*Node
	links  []*Link
	mgmt   string // management namespace (control network bridge)

	mu     sync.Mutex
	procs  []*Proc
	closed bool
}

var seq atomic.Int64

// uSID layout (F3216, block fcbb:bb00::/32): plane in the top 4 bits,
// then 0x1xx for T0s, 0x2xx for T1s and 0xexx for the hosts' decapsulation
// SIDs.
func t0SID(p, i int) uint16   { return uint16(p<<12 | 0x100 | i) }
func t1SID(p, j int) uint16   { return uint16(p<<12 | 0x200 | j) }
func hostSID(p, h int) uint16 { return uint16(p<<12 | 0xe00 | h) }

// sidAddr returns fcbb:bb00:<sids...>::.
func sidAddr(sids ...uint16) netip.Addr {
	a := [16]byte{0xfc, 0xbb, 0xbb, 0x00}
	for i, s := range sids {
		a[4+2*i], a[5+2*i] = byte(s>>8), byte(s)
	}
	return netip.AddrFrom16(a)
}

func addr(groups ...uint16) netip.Addr {
	var a [16]byte
	for i, g := range groups {
		a[2*i], a[2*i+1] = byte(g>>8), byte(g)
	}
	return netip.AddrFrom16(a)
}

// hostLinkAddr is the address of host h's NIC port p (end 1) or of its
// T0's port (end 2): fd00:1:h:p::end.
func hostLinkAddr(h, p, end int) netip.Addr {
	return addr(0xfd00, 1, uint16(h), uint16(p), 0, 0, 0, uint16(end))
}

// upLinkAddr is the address of T0 i's (end 1) or T1 j's (end 2) port on
// their link in plane p: fd00:2:p:i*16+j::end.
func upLinkAddr(p, i, j, end int) netip.Addr {
	return addr(0xfd00, 2, uint16(p), uint16(i*16+j), 0, 0, 0, uint16(end))
}

// controlAddr is host h's address on the control network: fd00:c::h+1.
func controlAddr(h int) netip.Addr { return addr(0xfd00, 0xc, 0, 0, 0, 0, 0, uint16(h+1)) }

// Build creates the fabric: namespaces, links, addresses, SRv6 routes,
// and the `mrc switch` processes. On failure it removes what it made.
// It first sweeps the namespaces of dead runs (Sweep).
func Build(cfg Config) (*Fabric, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if gone, err := Sweep(cfg.Prefix); err != nil {
		cfg.Logf("sweep: %v", err)
	} else if len(gone) > 0 {
		cfg.Logf("swept %d namespaces of dead runs: %s", len(gone), strings.Join(gone, " "))
	}
	f := &Fabric{cfg: cfg, id: fmt.Sprintf("%s-%d-%d", cfg.Prefix, os.Getpid(), seq.Add(1)), nodes: map[string]*Node{}}
	f.dir = cfg.Dir
	if f.dir == "" {
		d, err := os.MkdirTemp("", f.id+"-")
		if err != nil {
			return nil, err
		}
		f.dir, f.ownDir = d, true
	}
	if err := f.build(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *Fabric) addNode(name, kind string, plane, index int, sid uint16) *Node {
	n := &Node{Name: name, NS: f.id + "-" + name, Kind: kind, Plane: plane, Index: index, USID: sid, conf: map[string][]string{}}
	for _, m := range f.cfg.MRC {
		if m == name {
			n.MRC = true
		}
	}
	f.nodes[name] = n
	f.order = append(f.order, n)
	return n
}

// HostName returns the name of host h.
func HostName(h int) string { return fmt.Sprintf("h%d", h) }

// T0Name and T1Name return the names of switches.
func T0Name(p, i int) string { return fmt.Sprintf("t0-p%d-%d", p, i) }
func T1Name(p, j int) string { return fmt.Sprintf("t1-p%d-%d", p, j) }

func (f *Fabric) build() error {
	c := &f.cfg
	for h := range c.Hosts {
		f.addNode(HostName(h), KindHost, -1, h, 0)
	}
	for p := range c.Planes {
		for i := range c.Hosts {
			f.addNode(T0Name(p, i), KindT0, p, i, t0SID(p, i))
		}
		for j := range c.T1s {
			f.addNode(T1Name(p, j), KindT1, p, j, t1SID(p, j))
		}
	}
	for _, m := range c.MRC {
		n, ok := f.nodes[m]
		if !ok || n.Kind == KindHost {
			return fmt.Errorf("fabric: no switch %q to run as mrc switch", m)
		}
	}
	f.mgmt = f.id + "-mgmt"
	var b strings.Builder
	b.WriteString("netns add " + f.mgmt + "\n")
	for _, n := range f.order {
		b.WriteString("netns add " + n.NS + "\n")
	}
	if out, err := ipBatch("", b.String()); err != nil {
		return fmt.Errorf("fabric: creating namespaces: %v: %s", err, out)
	}
	f.cfg.Logf("fabric %s: %d namespaces", f.id, len(f.order)+1)
	// Namespace-wide settings before any link exists, so links inherit
	// them ("default").
	for _, n := range f.order {
		kv := []string{"net.ipv6.conf.all.accept_ra=0", "net.ipv6.conf.default.accept_ra=0",
			"net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
			"net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1"}
		switch {
		case n.MRC:
			// The kernel keeps out of the way: no IPv6 on the
			// ports, so no NDP, MLD or forwarding of its own.
			kv = append(kv, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
		default:
			kv = append(kv, "net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.default.forwarding=1",
				"net.ipv6.conf.all.seg6_enabled=1", "net.ipv6.conf.default.seg6_enabled=1")
		}
		if err := sysctls(n.NS, kv...); err != nil {
			return err
		}
	}
	// Links.
	macs := 0
	mac := func() string {
		macs++
		return fmt.Sprintf("02:6d:72:66:%02x:%02x", macs>>8, macs&0xff)
	}
	link := func(a *Node, aif string, aAddr netip.Addr, bn *Node, bif string, bAddr netip.Addr) {
		ea := &iface{node: a, name: aif, mac: mac(), addr: aAddr}
		eb := &iface{node: bn, name: bif, mac: mac(), addr: bAddr}
		ea.peer, eb.peer = eb, ea
		a.ifs = append(a.ifs, ea)
		bn.ifs = append(bn.ifs, eb)
		f.links = append(f.links, &Link{A: a.Name, B: bn.Name, AIf: aif, BIf: bif, AAddr: aAddr, BAddr: bAddr, ends: [2]*iface{ea, eb}})
	}
	for p := range c.Planes {
		for i := range c.Hosts {
			t0 := f.nodes[T0Name(p, i)]
			link(f.nodes[HostName(i)], fmt.Sprintf("p%d", p), hostLinkAddr(i, p, 1), t0, fmt.Sprintf("h%d", i), hostLinkAddr(i, p, 2))
			for j := range c.T1s {
				link(t0, fmt.Sprintf("u%d", j), upLinkAddr(p, i, j, 1), f.nodes[T1Name(p, j)], fmt.Sprintf("d%d", i), upLinkAddr(p, i, j, 2))
			}
		}
	}
	b.Reset()
	for _, l := range f.links {
		a, z := l.ends[0], l.ends[1]
		fmt.Fprintf(&b, "link add name %s netns %s address %s mtu %d type veth peer name %s netns %s address %s mtu %d\n",
			a.name, a.node.NS, a.mac, c.MTU, z.name, z.node.NS, z.mac, c.MTU)
	}
	// The control network: a bridge in the management namespace.
	var m strings.Builder
	m.WriteString("link set lo up\nlink add name ctlbr type bridge\nlink set ctlbr up\n")
	for h := range c.Hosts {
		fmt.Fprintf(&b, "link add name ctl netns %s type veth peer name h%d netns %s\n", f.nodes[HostName(h)].NS, h, f.mgmt)
		fmt.Fprintf(&m, "link set dev h%d master ctlbr up\n", h)
	}
	if out, err := ipBatch("", b.String()); err != nil {
		return fmt.Errorf("fabric: creating links: %v: %s", err, out)
	}
	if out, err := ipBatch(f.mgmt, m.String()); err != nil {
		return fmt.Errorf("fabric: control network: %v: %s", err, out)
	}
	// Per node configuration.
	for _, n := range f.order {
		if err := f.configure(n); err != nil {
			return err
		}
	}
	for _, n := range f.order {
		if n.MRC {
			if err := f.startSwitch(n); err != nil {
				return err
			}
		}
	}
	f.cfg.Logf("fabric %s: %d links, %d planes, %d hosts, %d T1s per plane, %s; mrc switch at %v",
		f.id, len(f.links), c.Planes, c.Hosts, c.T1s, c.Encap, c.MRC)
	return nil
}

// via returns the route to prefix through interface i of its node.
func routeVia(prefix netip.Prefix, i *iface) string {
	return fmt.Sprintf("route replace %v via %v dev %s", prefix, i.peer.addr, i.name)
}

// sidDev is the device that holds a node's seg6local routes: one end of
// a veth pair inside the node's namespace, which no link cut takes down.
// (seg6local routes on lo do not work, and routes on a link's device
// vanish when the link goes down.)
const sidDev = "sid"

func endFlavor(sid uint16) string {
	return fmt.Sprintf("route replace %v/48 encap seg6local action End flavors next-csid lblen 32 nflen 16 dev %s", sidAddr(sid), sidDev)
}

// configure writes node n's addresses, routes and neighbours.
func (f *Fabric) configure(n *Node) error {
	c := &f.cfg
	var b strings.Builder
	b.WriteString("link set lo up\n")
	for _, i := range n.ifs {
		fmt.Fprintf(&b, "link set dev %s up\n", i.name)
	}
	if !n.MRC {
		fmt.Fprintf(&b, "link add name %s type veth peer name %sp\nlink set dev %s up\nlink set dev %sp up\n", sidDev, sidDev, sidDev, sidDev)
	}
	if n.MRC {
		// `mrc switch` owns the ports: links up, nothing else.
		if out, err := ipBatch(n.NS, b.String()); err != nil {
			return fmt.Errorf("fabric: configuring %s: %v: %s", n.Name, err, out)
		}
		return nil
	}
	conf := func(ifn, cmd string) { n.conf[ifn] = append(n.conf[ifn], cmd) }
	if !n.MRC {
		for _, i := range n.ifs {
			conf(i.name, fmt.Sprintf("addr replace %v/64 dev %s nodad", i.addr, i.name))
			if i.peer.node.MRC {
				// The neighbour is an `mrc switch` port, which answers
				// no neighbour solicitations: pin its MAC.
				conf(i.name, fmt.Sprintf("neigh replace %v lladdr %s dev %s nud permanent", i.peer.addr, i.peer.mac, i.name))
			}
		}
	}
	switch n.Kind {
	case KindHost:
		h := n.Index
		fmt.Fprintf(&b, "link set dev ctl up\naddr replace %v/64 dev ctl nodad\n", controlAddr(h))
		for p := range c.Planes {
			i := n.ifs[p]
			plane := netip.PrefixFrom(sidAddr(uint16(p<<12)), 36)
			conf(i.name, routeVia(plane, i))
			if c.Encap == EncapSRv6 {
				fmt.Fprintf(&b, "route replace %v/48 encap seg6local action End.DT6 table local dev %s\n", sidAddr(hostSID(p, h)), sidDev)
			} else {
				fmt.Fprintf(&b, "addr replace %v/128 dev lo nodad\n", sidAddr(hostSID(p, h)))
			}
		}
	case KindT0:
		p, i := n.Plane, n.Index
		if !n.MRC {
			b.WriteString(endFlavor(n.USID) + "\n")
		}
		for _, x := range n.ifs {
			peer := x.peer.node
			switch peer.Kind {
			case KindHost:
				conf(x.name, routeVia(netip.PrefixFrom(sidAddr(hostSID(p, i)), 48), x))
			case KindT1:
				conf(x.name, routeVia(netip.PrefixFrom(sidAddr(peer.USID), 48), x))
			}
		}
	case KindT1:
		if !n.MRC {
			b.WriteString(endFlavor(n.USID) + "\n")
		}
		for _, x := range n.ifs {
			conf(x.name, routeVia(netip.PrefixFrom(sidAddr(x.peer.node.USID), 48), x))
		}
	}
	if !n.MRC {
		for _, i := range n.ifs {
			for _, cmd := range n.conf[i.name] {
				b.WriteString(cmd + "\n")
			}
		}
	}
	if out, err := ipBatch(n.NS, b.String()); err != nil {
		return fmt.Errorf("fabric: configuring %s: %v: %s", n.Name, err, out)
	}
	return nil
}

// SwitchTable returns the `mrc switch` table file of switch node name
// (docs/switch.md): its ports with their neighbours' MACs, and a static
// route per neighbour's uSID.
func (f *Fabric) SwitchTable(name string) (string, error) {
	n, ok := f.nodes[name]
	if !ok || n.Kind == KindHost {
		return "", fmt.Errorf("fabric: no switch %q", name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# mrc switch %s, plane %d (written by package fabric)\n", n.Name, n.Plane)
	fmt.Fprintf(&b, "switch name %s mode srv6 addr %v seed %d", n.Name, sidAddr(n.USID), n.USID)
	if f.cfg.Encap == EncapSRv6 {
		// Linux's End.DT6 does not carry an outer CE mark inward
		// (RFC 6040), so the switch marks the inner header too.
		b.WriteString(" ecn-inner")
	}
	b.WriteString("\n")
	if f.cfg.MRCQueue != "" {
		fmt.Fprintf(&b, "queue %s\n", f.cfg.MRCQueue)
	}
	for _, i := range n.ifs {
		fmt.Fprintf(&b, "port %s peer %s %s", i.name, i.peer.mac, f.cfg.MRCPort)
		if i.peer.node.Kind == KindHost {
			b.WriteString(" lasthop")
		}
		b.WriteString("\n")
	}
	for _, i := range n.ifs {
		peer := i.peer.node
		sid := peer.USID
		if peer.Kind == KindHost {
			sid = hostSID(n.Plane, peer.Index)
		}
		fmt.Fprintf(&b, "route %v/48 %s\n", sidAddr(sid), i.name)
	}
	return b.String(), nil
}

// startSwitch runs `mrc switch` for node n and waits until it forwards.
func (f *Fabric) startSwitch(n *Node) error {
	table, err := f.SwitchTable(n.Name)
	if err != nil {
		return err
	}
	file := filepath.Join(f.dir, n.Name+".table")
	if err := os.WriteFile(file, []byte(table), 0o644); err != nil {
		return err
	}
	p, err := f.Start(n.Name, f.cfg.MRCBinary, "switch", "--table", file, "--json", filepath.Join(f.dir, n.Name+".json"))
	if err != nil {
		return err
	}
	n.proc = p
	if err := p.WaitFor("mrc switch: forwarding", 10*time.Second); err != nil {
		return fmt.Errorf("fabric: mrc switch %s: %v", n.Name, err)
	}
	return nil
}

// SwitchCountersFile returns where `mrc switch` at node name writes its
// final counters (JSON) when it stops (StopSwitch, Close).
func (f *Fabric) SwitchCountersFile(name string) string {
	return filepath.Join(f.dir, name+".json")
}

// StopSwitch stops the `mrc switch` of node name (SIGTERM) and waits for
// it to write its counters and exit.
func (f *Fabric) StopSwitch(name string) error {
	n, ok := f.nodes[name]
	if !ok || n.proc == nil {
		return fmt.Errorf("fabric: no mrc switch at %q", name)
	}
	return n.proc.Stop(5 * time.Second)
}

// ID returns the fabric's name, the prefix of its namespaces.
func (f *Fabric) ID() string { return f.id }

// Dir returns the directory of the fabric's files.
func (f *Fabric) Dir() string { return f.dir }

// Node returns the node called name, or nil.
func (f *Fabric) Node(name string) *Node { return f.nodes[name] }

// Nodes returns every node, hosts first.
func (f *Fabric) Nodes() []*Node { return f.order }

// Links returns every link between a host and a T0 or a T0 and a T1.
func (f *Fabric) Links() []*Link { return f.links }

// Namespaces returns the names of every namespace the fabric made.
func (f *Fabric) Namespaces() []string {
	out := []string{f.mgmt}
	for _, n := range f.order {
		out = append(out, n.NS)
	}
	return out
}

// PortAddrs returns host h's NIC port addresses, plane by plane: the MRC
// endpoint's port addresses (mrc.Config.Ports), to which the fabric
// delivers its packets.
func (f *Fabric) PortAddrs(h int) []netip.Addr {
	out := make([]netip.Addr, f.cfg.Planes)
	for p := range out {
		if f.cfg.Encap == EncapUSID {
			out[p] = sidAddr(hostSID(p, h))
		} else {
			out[p] = hostLinkAddr(h, p, 1)
		}
	}
	return out
}

// ControlAddr returns host h's address on the control network, which
// joins the hosts outside the fabric (for `mrc perf`'s TCP control
// connection).
func (f *Fabric) ControlAddr(h int) netip.Addr { return controlAddr(h) }

// Path returns the uSID container from host src to host dst on plane p
// through T1 j.
func (f *Fabric) Path(src, dst, p, j int) netip.Addr {
	return sidAddr(t0SID(p, src), t1SID(p, j), t0SID(p, dst), hostSID(p, dst))
}

// PathTable returns host src's path table (udpio.PathTable's text form):
// for every other host's port on every plane, one path per T1, in T1
// order, so an EV's path index j goes through T1 j.
func (f *Fabric) PathTable(src int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# paths from host %d (written by package fabric)\n", src)
	for dst := range f.cfg.Hosts {
		if dst == src {
			continue
		}
		ports := f.PortAddrs(dst)
		for p := range f.cfg.Planes {
			fmt.Fprintf(&b, "path %v", ports[p])
			for j := range f.cfg.T1s {
				fmt.Fprintf(&b, " %v", f.Path(src, dst, p, j))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// WritePathTable writes host h's path table into the fabric's directory
// and returns the file's name.
func (f *Fabric) WritePathTable(h int) (string, error) {
	file := filepath.Join(f.dir, fmt.Sprintf("h%d.paths", h))
	return file, os.WriteFile(file, []byte(f.PathTable(h)), 0o644)
}

// link finds the link between nodes a and b.
func (f *Fabric) link(a, b string) (*Link, error) {
	for _, l := range f.links {
		if l.A == a && l.B == b || l.A == b && l.B == a {
			return l, nil
		}
	}
	return nil, fmt.Errorf("fabric: no link between %s and %s", a, b)
}

// SetLink takes the link between nodes a and b down (ip link set down at
// a's end; b sees its carrier go) or brings it back up, restoring the
// addresses, routes and neighbours the kernel dropped with it.
func (f *Fabric) SetLink(a, b string, up bool) error {
	l, err := f.link(a, b)
	if err != nil {
		return err
	}
	end := l.ends[0]
	if l.B == a {
		end = l.ends[1]
	}
	state := "down"
	if up {
		state = "up"
	}
	if out, err := ipBatch(end.node.NS, fmt.Sprintf("link set dev %s %s", end.name, state)); err != nil {
		return fmt.Errorf("fabric: link %s-%s %s: %v: %s", a, b, state, err, out)
	}
	l.isDown.Store(!up)
	if !up {
		return nil
	}
	for _, e := range l.ends {
		if cmds := e.node.conf[e.name]; len(cmds) > 0 {
			if out, err := ipBatch(e.node.NS, strings.Join(cmds, "\n")); err != nil {
				return fmt.Errorf("fabric: restoring %s:%s: %v: %s", e.node.Name, e.name, err, out)
			}
		}
	}
	return nil
}

// Command returns a command that runs name with args inside node's
// namespace (ip netns exec). The caller runs it; Start tracks it too.
func (f *Fabric) Command(node, name string, args ...string) (*exec.Cmd, error) {
	n, ok := f.nodes[node]
	if !ok {
		return nil, fmt.Errorf("fabric: no node %q", node)
	}
	return exec.Command("ip", append([]string{"netns", "exec", n.NS, name}, args...)...), nil
}

// Close stops every process the fabric started, deletes its namespaces
// (and with them every link) and its directory. It is idempotent.
func (f *Fabric) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	procs := f.procs
	f.mu.Unlock()
	for _, p := range procs {
		p.Stop(2 * time.Second)
	}
	var errs []error
	var b strings.Builder
	for _, ns := range f.Namespaces() {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err != nil {
			continue
		}
		killNetnsProcs(ns)
		b.WriteString("netns del " + ns + "\n")
	}
	if b.Len() > 0 {
		if out, err := ipBatch("", b.String()); err != nil {
			errs = append(errs, fmt.Errorf("fabric: deleting namespaces: %v: %s", err, out))
		}
	}
	if f.ownDir {
		os.RemoveAll(f.dir)
	}
	return errors.Join(errs...)
}

// Leftovers returns the namespaces of this fabric that still exist (none
// after Close).
func (f *Fabric) Leftovers() []string {
	var out []string
	for _, ns := range f.Namespaces() {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// Proc is a process the fabric started in a namespace.
type Proc struct {
	Cmd  *exec.Cmd
	Name string
	Log  string // the file its output goes to
	done chan struct{}
	err  error
}

var procSeq atomic.Int64

// Start runs name with args in node's namespace, its output (stdout and
// stderr) going to a file in the fabric's directory, so that it outlives
// the caller if need be; Close stops it.
func (f *Fabric) Start(node, name string, args ...string) (*Proc, error) {
	cmd, err := f.Command(node, name, args...)
	if err != nil {
		return nil, err
	}
	log := filepath.Join(f.dir, fmt.Sprintf("%s.%s.%d.log", node, filepath.Base(name), procSeq.Add(1)))
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor
	p := &Proc{Cmd: cmd, Name: node + ":" + filepath.Base(name), Log: log, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("fabric: closed")
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f.procs = append(f.procs, p)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Output returns what the process wrote so far (stdout and stderr).
func (p *Proc) Output() string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err returns how the process exited, once Done.
func (p *Proc) Err() error { return p.err }

// WaitFor waits until the process's output contains s.
func (p *Proc) WaitFor(s string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !strings.Contains(p.Output(), s) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before saying %q: %s", p.Name, p.err, s, p.Output())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not say %q within %v: %s", p.Name, s, limit, p.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Stop sends SIGTERM, waits up to grace for the process to exit, then
// kills it.
func (p *Proc) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
	}
	p.Cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s did not stop within %v; killed", p.Name, grace)
}
