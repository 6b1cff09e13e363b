package udpio

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/host/lines"
	"github.com/openmrc/mrc/wire"
)

// PathTable is a node's static SRv6 configuration (digest §3.12): for each
// peer port address, the uSID containers of the paths that reach it. An
// EV of plane p towards peer port address a takes path
// Paths(a)[ev.Path() % len(Paths(a))], so EVs with distinct path
// indices spread over the listed paths, and a path index names one
// physical path (in a two-tier plane, one T1).
//
// The text form, one directive per line ('#' starts a comment):
//
//	path <peer port address> <uSID container> [<uSID container> ...]
//
// for example, from a host under T0 fcbb:bb00:0101 to the host behind
// T0 fcbb:bb00:0102, decapsulation uSID 0e01, over T1s 0201 and 0202:
//
//	path fd00:a:1:0::1  fcbb:bb00:101:201:102:e01::  fcbb:bb00:101:202:102:e01::
//
// Repeated lines for one address append paths. docs/fabric.md shows a
// whole fabric's tables.
type PathTable struct {
	paths map[netip.Addr][][16]byte
	order []netip.Addr
}

// ParsePathTable reads a path table; name labels errors ("name:line: ...").
func ParsePathTable(r io.Reader, name string) (*PathTable, error) {
	t := &PathTable{paths: map[netip.Addr][][16]byte{}}
	lr := lines.NewReader(r, bufio.MaxScanTokenSize)
	for {
		f, ok := lr.Next()
		if !ok {
			break
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", name, lr.Line(), fmt.Sprintf(format, a...))
		}
		if f[0] != "path" {
			return nil, bad("unknown directive %q (want: path <address> <uSID container>...)", f[0])
		}
		if len(f) < 3 {
			return nil, bad("want: path <address> <uSID container>...")
		}
		to, err := netip.ParseAddr(f[1])
		if err != nil || !to.Is6() || to.Is4In6() || to.Zone() != "" {
			return nil, bad("bad IPv6 address %q", f[1])
		}
		if _, ok := t.paths[to]; !ok {
			t.order = append(t.order, to)
		}
		for _, c := range f[2:] {
			a, err := netip.ParseAddr(c)
			if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
				return nil, bad("bad uSID container %q", c)
			}
			t.paths[to] = append(t.paths[to], a.As16())
		}
	}
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.paths) == 0 {
		return nil, fmt.Errorf("%s: no paths", name)
	}
	return t, nil
}

// LoadPathTable reads the path table in file.
func LoadPathTable(file string) (*PathTable, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePathTable(f, file)
}

// Paths returns the containers that reach peer port address to.
func (t *PathTable) Paths(to netip.Addr) [][16]byte { return t.paths[to] }

// Addrs returns the peer port addresses the table has paths to, in the
// order they first appear.
func (t *PathTable) Addrs() []netip.Addr { return t.order }

// PathFunc returns the mrc.PathFunc of a QP whose peer has the port
// addresses remote (plane by plane), and the most paths any plane has
// (the EV profile's PathsPerPlane). It fails if a plane has no path.
func (t *PathTable) PathFunc(remote []netip.Addr) (mrc.PathFunc, int, error) {
	byPlane := make([][][16]byte, len(remote))
	most := 0
	for p, a := range remote {
		byPlane[p] = t.paths[a]
		if len(byPlane[p]) == 0 {
			return nil, 0, fmt.Errorf("no SRv6 path to %v (plane %d) in the path table", a, p)
		}
		most = max(most, len(byPlane[p]))
	}
	return func(plane int, ev wire.EV) [16]byte {
		ps := byPlane[plane]
		return ps[ev.Path()%len(ps)]
	}, most, nil
}
