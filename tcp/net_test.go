package tcp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/internal/testkit/dumbbell"
	"github.com/openmrc/mrc/vswitch"
)

// network is the test network of this package: a dumbbell.Net whose
// hosts are TCP endpoints.
type network struct {
	*dumbbell.Net
	eps []*Endpoint
}

var addr = dumbbell.Addr

// newDumbbell builds n hosts with cfg (Ports is set per host) and a switch
// whose every port has queue q.
func newDumbbell(t testing.TB, n int, rate int64, delay time.Duration, cfg Config, q vswitch.QueueConfig) *network {
	t.Helper()
	d := &network{}
	hosts := make([]dumbbell.Host, n)
	for h := range n {
		c := cfg
		c.Ports = []netip.Addr{addr(h)}
		c.Seed = uint64(h)
		ep, err := NewEndpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		d.eps = append(d.eps, ep)
		hosts[h] = ep
	}
	d.Net = dumbbell.New(t, hosts, rate, delay, q)
	return d
}

// connect opens a connection from host a to host b and returns both ends.
func (d *network) connect(a, b int) (*Conn, *Conn) {
	d.T.Helper()
	ca, err := d.eps[a].CreateConn()
	if err != nil {
		d.T.Fatal(err)
	}
	cb, err := d.eps[b].CreateConn()
	if err != nil {
		d.T.Fatal(err)
	}
	if err := ca.Connect(d.Now, ConnectAttr{Remote: addr(b), RemoteQPN: cb.QPN(), SendISN: 0xfffff000}); err != nil {
		d.T.Fatal(err)
	}
	if err := cb.Connect(d.Now, ConnectAttr{Remote: addr(a), RemoteQPN: ca.QPN(), RecvISN: 0xfffff000}); err != nil {
		d.T.Fatal(err)
	}
	return ca, cb
}

// vswitchQueue is a small tail-drop queue: 24 KB, below two windows.
func vswitchQueue() vswitch.QueueConfig { return vswitch.QueueConfig{Buffer: 24 << 10, ECNK: 12 << 10} }
