package ib

import (
	"net/netip"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/wire"
)

// Endpoint is one InfiniBand HCA: package roce's RC engine configured as
// Config says (see the package comment). It has roce.Endpoint's methods;
// connect its QPs with Connect, which applies the configuration's
// timeout, retry count and reorder window.
type Endpoint struct {
	*roce.Endpoint
	cfg Config
}

// NewEndpoint returns an HCA with cfg. Every port starts up.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	c := cfg.withDefaults()
	if err := Check(c); err != nil {
		return nil, err
	}
	rc := roce.Config{
		Ports: c.Ports, MTU: c.MTU, Seed: c.Seed, LinkBitsPerSec: c.LinkBitsPerSec, CC: roce.CCNone,
		AckEvery: c.AckEvery, SkipICRC: c.SkipICRC, MaxQPs: c.MaxQPs, Tracer: c.Tracer,
	}
	if c.CC == CCCCA {
		cca, line, maxPkt := c.CCA, c.LinkBitsPerSec, MaxPacket(c.MTU)
		rc.CC = roce.CCBECN
		rc.NewReaction = func(mtime.Time) roce.Reaction { return NewCCA(cca, line, maxPkt) }
	}
	ep, err := roce.NewEndpoint(rc)
	if err != nil {
		return nil, err
	}
	return &Endpoint{Endpoint: ep, cfg: c}, nil
}

// MaxPacket is the largest packet an endpoint with this MTU sends, as
// the IP datagram the fabric carries: headers, payload and ICRC.
func MaxPacket(mtu int) int { return roce.MaxHeaderLen + mtu + wire.ICRCLen }

// Config returns the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// Connect moves q from RESET to RTS on port, towards the peer QP
// remoteQPN at remote, with the configuration's local ACK timeout, retry
// count and reorder window.
func (e *Endpoint) Connect(now mtime.Time, q *roce.QP, port int, remote netip.Addr, remoteQPN uint32) error {
	return q.Connect(now, roce.ConnectAttr{Port: port, Remote: remote, RemoteQPN: remoteQPN,
		TimeoutExp: e.cfg.TimeoutExp, RetryCount: e.cfg.RetryCount, ReorderWindow: e.cfg.ReorderWindow})
}
