package swnet

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/internal/host/lines"
	"github.com/openmrc/mrc/units"
	"github.com/openmrc/mrc/vswitch"
)

// Table is a switch's static configuration, as a table file holds it
// (docs/switch.md): the switch itself, its ports, its queues and its
// static routes.
type Table struct {
	// Switch configures the pure switch. Ports, filled from the port
	// lines, and Queue, from the queue line without a port, included.
	Switch vswitch.Config
	// Plane is the plane the switch belongs to (metrics label).
	Plane int
	// ECNInner also marks the inner header of an IPv6-in-IPv6 packet the
	// switch marks CE, for decapsulators that do not carry the outer
	// mark inward as RFC 6040 says (Linux's seg6local End.DT6).
	ECNInner bool
	// Pool is the number of packet buffers (default 4096); MaxPacket
	// their size, the largest IPv6 packet the switch takes (default
	// 9216).
	Pool      int
	MaxPacket int
	// Overhead is added to each packet's length to make its size on the
	// wire for queues and rates (default 38: Ethernet header, FCS,
	// preamble and inter-frame gap).
	Overhead int
	Ports    []PortConfig
	Routes   []Route
	Default  []int
}

// PortConfig is one port of the switch.
type PortConfig struct {
	// Name is the network interface (AF_PACKET) the port is.
	Name string
	// Peer is the neighbour's MAC address, the destination of every frame
	// sent on the port; nil learns it from the first frame received.
	Peer net.HardwareAddr
	// Rate is the port's line rate in bits per second; 0 sends as fast
	// as the interface takes packets.
	Rate int64
	// Delay is the link's propagation delay, added after serialisation.
	Delay time.Duration
	// Queue overrides the switch's queue configuration for this port.
	Queue *vswitch.QueueConfig
}

// Route is a static route: destinations in Prefix leave through one of
// Ports (a next-hop group, hashed in ModeSRv6 and ModeECMP, picked by EV
// bits in ModeSTEV).
type Route struct {
	Prefix netip.Prefix
	Ports  []int
}

// LoadTable reads the table file.
func LoadTable(file string) (*Table, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTable(f, file)
}

// ParseTable reads a table; name labels errors ("name:line: ...").
func ParseTable(r io.Reader, name string) (*Table, error) {
	t := &Table{}
	type portQueue struct {
		line int
		port string
		args []string
	}
	var portQueues []portQueue
	type pending struct {
		line  int
		what  string
		args  []string
		route netip.Prefix
	}
	var routes []pending
	lr := lines.NewReader(r, bufio.MaxScanTokenSize)
	sawSwitch := false
	for {
		f, ok := lr.Next()
		if !ok {
			break
		}
		line := lr.Line()
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
		}
		switch f[0] {
		case "switch":
			if sawSwitch {
				return nil, bad("a second switch line")
			}
			sawSwitch = true
			if err := t.parseSwitch(f[1:]); err != nil {
				return nil, bad("%v", err)
			}
		case "port":
			if len(f) < 2 {
				return nil, bad("want: port <interface> [peer MAC] [rate R] [delay D] [lasthop]")
			}
			pc, lastHop, err := parsePort(f[1:])
			if err != nil {
				return nil, bad("%v", err)
			}
			for _, o := range t.Ports {
				if o.Name == pc.Name {
					return nil, bad("port %s listed twice", pc.Name)
				}
			}
			if lastHop {
				portQueues = append(portQueues, portQueue{line, pc.Name, []string{"lasthop"}})
			}
			t.Ports = append(t.Ports, pc)
		case "queue":
			args := f[1:]
			if len(args) >= 2 && args[0] == "port" {
				portQueues = append(portQueues, portQueue{line, args[1], args[2:]})
				continue
			}
			if err := parseQueue(&t.Switch.Queue, args); err != nil {
				return nil, bad("%v", err)
			}
		case "route":
			if len(f) < 3 {
				return nil, bad("want: route <prefix>/<length> <port>...")
			}
			pfx, err := netip.ParsePrefix(f[1])
			if err != nil || !pfx.Addr().Is6() || pfx.Addr().Is4In6() {
				return nil, bad("bad IPv6 prefix %q", f[1])
			}
			routes = append(routes, pending{line: line, what: "route", args: f[2:], route: pfx})
		case "default":
			if len(f) < 2 {
				return nil, bad("want: default <port>...")
			}
			routes = append(routes, pending{line: line, what: "default", args: f[1:]})
		default:
			return nil, bad("unknown directive %q (want switch, port, queue, route or default)", f[0])
		}
	}
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.Ports) == 0 {
		return nil, fmt.Errorf("%s: no ports", name)
	}
	portIndex := func(s string) (int, bool) {
		for i, p := range t.Ports {
			if p.Name == s {
				return i, true
			}
		}
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(t.Ports) {
			return i, true
		}
		return 0, false
	}
	for _, r := range routes {
		var ports []int
		for _, a := range r.args {
			i, ok := portIndex(a)
			if !ok {
				return nil, fmt.Errorf("%s:%d: no port %q", name, r.line, a)
			}
			ports = append(ports, i)
		}
		if r.what == "default" {
			t.Default = ports
		} else {
			t.Routes = append(t.Routes, Route{Prefix: r.route.Masked(), Ports: ports})
		}
	}
	for _, pq := range portQueues {
		i, ok := portIndex(pq.port)
		if !ok {
			return nil, fmt.Errorf("%s:%d: no port %q", name, pq.line, pq.port)
		}
		q := t.Switch.Queue
		if t.Ports[i].Queue != nil {
			q = *t.Ports[i].Queue
		}
		if err := parseQueue(&q, pq.args); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, pq.line, err)
		}
		t.Ports[i].Queue = &q
	}
	t.Switch.Ports = len(t.Ports)
	if t.Switch.Name == "" {
		t.Switch.Name = "switch"
	}
	if t.Pool == 0 {
		t.Pool = 4096
	}
	if t.MaxPacket == 0 {
		t.MaxPacket = 9216
	}
	if t.Overhead == 0 {
		t.Overhead = 38
	}
	if t.Switch.Mode == vswitch.ModeSRv6 && t.Switch.Addr == ([16]byte{}) {
		return nil, fmt.Errorf("%s: mode srv6 needs the switch's own uN address (switch addr ...)", name)
	}
	// Let the pure switch validate the rest, each port's queue with its
	// defaults filled in (an xon above the default xoff, say).
	sw, err := vswitch.New(t.Switch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A port's queue is checked once, as its lines left it, and blamed on
	// the last of them: a line may need a later one (xon before xoff).
	for k := len(portQueues) - 1; k >= 0; k-- {
		pq := portQueues[k]
		i, _ := portIndex(pq.port)
		if err := sw.SetPortQueue(i, *t.Ports[i].Queue); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, pq.line, err)
		}
	}
	return t, nil
}

// Queues returns the queue configuration of each port, defaults filled
// in.
func (t *Table) Queues() []vswitch.QueueConfig {
	cfg := t.Switch
	cfg.Ports = len(t.Ports)
	sw, err := vswitch.New(cfg)
	if err != nil {
		return nil
	}
	out := make([]vswitch.QueueConfig, len(t.Ports))
	for i, p := range t.Ports {
		if p.Queue != nil {
			if sw.SetPortQueue(i, *p.Queue) != nil {
				return nil
			}
		}
		out[i] = sw.PortQueue(i)
	}
	return out
}

func (t *Table) parseSwitch(args []string) error {
	for i := 0; i < len(args); i++ {
		key := args[i]
		val := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("switch: %s needs a value", key)
			}
			i++
			return args[i], nil
		}
		num := func() (int, error) {
			v, err := val()
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("switch: %s %q: want a count", key, v)
			}
			return n, nil
		}
		var err error
		switch key {
		case "name":
			t.Switch.Name, err = val()
		case "mode":
			var v string
			if v, err = val(); err == nil {
				switch v {
				case "srv6":
					t.Switch.Mode = vswitch.ModeSRv6
				case "ecmp":
					t.Switch.Mode = vswitch.ModeECMP
				case "stev":
					t.Switch.Mode = vswitch.ModeSTEV
				default:
					err = fmt.Errorf("switch: mode %q, want srv6, ecmp or stev", v)
				}
			}
		case "addr":
			var v string
			if v, err = val(); err == nil {
				a, perr := netip.ParseAddr(v)
				if perr != nil || !a.Is6() || a.Is4In6() {
					err = fmt.Errorf("switch: addr %q: want an IPv6 uN address (block|uSID)", v)
				} else {
					t.Switch.Addr = a.As16()
				}
			}
		case "seed":
			var v string
			if v, err = val(); err == nil {
				t.Switch.Seed, err = strconv.ParseUint(v, 0, 64)
				if err != nil {
					err = fmt.Errorf("switch: seed %q", v)
				}
			}
		case "plane":
			t.Plane, err = num()
		case "ev-shift":
			var n int
			n, err = num()
			t.Switch.EVShift = uint(n)
		case "ev-bits":
			var n int
			n, err = num()
			t.Switch.EVBits = uint(n)
		case "ecn-inner":
			t.ECNInner = true
		case "pool":
			t.Pool, err = num()
			if err == nil && (t.Pool < 16 || t.Pool > 1<<20) {
				err = fmt.Errorf("switch: pool %d, want 16..1048576", t.Pool)
			}
		case "max-packet":
			t.MaxPacket, err = num()
			if err == nil && (t.MaxPacket < 1280 || t.MaxPacket > 65535) {
				err = fmt.Errorf("switch: max-packet %d, want 1280..65535", t.MaxPacket)
			}
		case "overhead":
			t.Overhead, err = num()
		default:
			err = fmt.Errorf("switch: unknown option %q", key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parsePort parses "<interface> [peer MAC] [rate R] [delay D] [lasthop]".
func parsePort(args []string) (pc PortConfig, lastHop bool, err error) {
	pc.Name = args[0]
	if pc.Name == "" || len(pc.Name) > 15 || strings.ContainsAny(pc.Name, "/ ") {
		return pc, false, fmt.Errorf("port: bad interface name %q", pc.Name)
	}
	for i := 1; i < len(args); i++ {
		key := args[i]
		if key == "lasthop" {
			lastHop = true
			continue
		}
		if i+1 >= len(args) {
			return pc, false, fmt.Errorf("port %s: %s needs a value", pc.Name, key)
		}
		i++
		v := args[i]
		switch key {
		case "peer":
			pc.Peer, err = net.ParseMAC(v)
			if err != nil || len(pc.Peer) != 6 {
				return pc, false, fmt.Errorf("port %s: peer %q: want a MAC address", pc.Name, v)
			}
		case "rate":
			pc.Rate, err = units.ParseRate(v)
			if err != nil {
				return pc, false, fmt.Errorf("port %s: bad rate: %v", pc.Name, err)
			}
		case "delay":
			pc.Delay, err = units.ParseDuration(v)
			if err != nil {
				return pc, false, fmt.Errorf("port %s: delay: %v", pc.Name, err)
			}
			if pc.Delay > 10*time.Second {
				return pc, false, fmt.Errorf("port %s: delay %q: want a duration up to 10s", pc.Name, v)
			}
		default:
			return pc, false, fmt.Errorf("port %s: unknown option %q", pc.Name, key)
		}
	}
	return pc, lastHop, nil
}

// parseQueue applies queue options to q:
//
//	buffer N  header N  trim-at N  trim-to N  ecn MIN MAX  ecn-k K  trim  no-trim
//	lasthop  ecn-lasthop  lossless  xoff N  xon N
//
// Sizes are bytes, in the grammar of package units (2MiB, 512KiB, 64kB).
// Naming trim-at or trim-to turns trimming on.
func parseQueue(q *vswitch.QueueConfig, args []string) error {
	for i := 0; i < len(args); i++ {
		key := args[i]
		size := func() (int, error) {
			if i+1 >= len(args) {
				return 0, fmt.Errorf("queue: %s needs a size", key)
			}
			i++
			n, err := units.ParseSize(args[i])
			if err != nil {
				return 0, fmt.Errorf("queue: %s: bad size: %v", key, err)
			}
			if n > math.MaxInt32 {
				return 0, fmt.Errorf("queue: %s: bad size: %q: want less than 2GiB", key, args[i])
			}
			return int(n), nil
		}
		var err error
		switch key {
		case "buffer":
			q.Buffer, err = size()
		case "header":
			q.HeaderBuffer, err = size()
		case "trim-at":
			q.TrimAt, err = size()
			q.Trim = true
		case "trim-to":
			q.TrimTo, err = size()
			q.Trim = true
		case "trim":
			q.Trim = true
		case "no-trim":
			q.Trim = false
		case "ecn":
			if q.ECNMin, err = size(); err == nil {
				q.ECNMax, err = size()
			}
		case "ecn-k":
			q.ECNK, err = size()
		case "no-ecn":
			q.ECNMin, q.ECNMax, q.ECNK = 0, 0, 0
		case "lasthop":
			q.LastHop = true
		case "ecn-lasthop":
			q.ECNLastHop = true
		case "lossless":
			q.Lossless = true
		case "xoff":
			q.PFCXoff, err = size()
		case "xon":
			q.PFCXon, err = size()
		default:
			err = fmt.Errorf("queue: unknown option %q", key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
