package perf

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/udpio"
	"github.com/openmrc/mrc/verbs"
)

// The control port's limits (docs/udpio.md, docs/security.md): a client
// reaches the server's memory, sockets and time only through its hello,
// and the server checks every field of it before it allocates anything.

// MaxLine is the longest control message, newline included.
const MaxLine = 64 << 10

// Bounds of the hello's fields.
const (
	maxChunk       = 256 << 20 // bytes per WRITE_IMM
	maxRing        = 1024      // chunks in the server's region
	maxEVs         = 256       // active EVs per plane
	maxSourcePorts = 1024      // sockets per plane
	maxSockets     = 256       // sockets per session, all planes
	minMTU, maxMTU = 256, 9000
	maxBaseRTT     = time.Second
	maxLossTimeout = 10 * time.Second
	maxQPN         = 1<<24 - 1
)

// Limits bound what the clients may take of a server. Zero fields take
// the defaults in their comments.
type Limits struct {
	// MaxSessions is the number of sessions served at once (default 16).
	// A connection beyond it sheds the oldest idle session (one waiting
	// for its hello, or whose datapath has been quiet for a second), or
	// is refused when none is idle.
	MaxSessions int
	// SessionMemory bounds the buffers one session may make the server
	// allocate: its region, the pattern it is checked against, and the
	// datapath's receive and send buffers (default 256 MiB).
	SessionMemory int64
	// HelloTimeout bounds the wait for a client's hello (default 10 s).
	HelloTimeout time.Duration
	// IdleTimeout ends a session whose datapath has received nothing and
	// whose client has said nothing for this long (default 30 s).
	IdleTimeout time.Duration
}

func (l *Limits) defaults() {
	if l.MaxSessions == 0 {
		l.MaxSessions = 16
	}
	if l.SessionMemory == 0 {
		l.SessionMemory = 256 << 20
	}
	if l.HelloTimeout == 0 {
		l.HelloTimeout = 10 * time.Second
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = 30 * time.Second
	}
}

// validate checks every field of a hello that came from peer (the control
// connection's remote address) against lim.
func (h *hello) validate(peer netip.Addr, lim Limits) error {
	if err := h.validateShape(); err != nil {
		return err
	}
	if !h.TCP {
		if err := h.validateDatapath(peer); err != nil {
			return err
		}
	}
	if need := h.memory(); need > lim.SessionMemory {
		return fmt.Errorf("the session needs %d MiB of buffers, more than this server's %d MiB per session", need>>20, lim.SessionMemory>>20)
	}
	return nil
}

// validateShape checks the transfer's shape, common to MRC and TCP.
func (h *hello) validateShape() error {
	switch {
	case h.Version != Version:
		return fmt.Errorf("protocol version %d, want %d", h.Version, Version)
	case h.Planes < 1 || h.Planes > verbs.MaxPlanes:
		return fmt.Errorf("%d planes, want 1..%d", h.Planes, verbs.MaxPlanes)
	case h.TCP && h.Planes != 1:
		return fmt.Errorf("the TCP baseline has one plane, not %d", h.Planes)
	case h.Chunk < 1 || h.Chunk > maxChunk:
		return fmt.Errorf("chunk of %d bytes, want 1..%d", h.Chunk, maxChunk)
	case h.RingChunks < 2 || h.RingChunks > maxRing:
		return fmt.Errorf("ring of %d chunks, want 2..%d", h.RingChunks, maxRing)
	case h.Bytes < 0:
		return fmt.Errorf("%d bytes to move", h.Bytes)
	case !(h.Drop >= 0 && h.Drop < 1):
		return fmt.Errorf("drop probability %v, want [0,1)", h.Drop)
	}
	return nil
}

// validateDatapath checks what an MRC session's sockets, endpoint and QP
// are built from.
func (h *hello) validateDatapath(peer netip.Addr) error {
	switch {
	case h.MTU < minMTU || h.MTU > maxMTU:
		return fmt.Errorf("MTU %d, want %d..%d", h.MTU, minMTU, maxMTU)
	case h.EVs < 1 || h.EVs > maxEVs:
		return fmt.Errorf("%d EVs per plane, want 1..%d", h.EVs, maxEVs)
	case h.SourcePorts < 1 || h.SourcePorts > maxSourcePorts || h.Planes*h.SourcePorts > maxSockets:
		return fmt.Errorf("%d source ports on %d planes, want 1..%d and at most %d sockets", h.SourcePorts, h.Planes, maxSourcePorts, maxSockets)
	case h.BaseRTT < 0 || h.BaseRTT > maxBaseRTT:
		return fmt.Errorf("base RTT %v, want 0..%v", h.BaseRTT, maxBaseRTT)
	case h.LossTimeout < 0 || h.LossTimeout > maxLossTimeout:
		return fmt.Errorf("loss timeout %v, want 0..%v", h.LossTimeout, maxLossTimeout)
	case h.QPN <= 2 || h.QPN > maxQPN:
		return fmt.Errorf("QPN %d, want 3..%d", h.QPN, maxQPN)
	case h.PSN > maxQPN:
		return fmt.Errorf("start PSN %d is not 24-bit", h.PSN)
	case h.Native && h.Phantom:
		return fmt.Errorf("native framing carries real packets: no phantom payloads")
	case len(h.Ports) != h.Planes || len(h.Sockets) != h.Planes:
		return fmt.Errorf("%d ports and %d sockets for %d planes", len(h.Ports), len(h.Sockets), h.Planes)
	}
	if _, err := parseEncap(h.Encap, h.Native); err != nil {
		return err
	}
	seen := map[netip.Addr]bool{}
	for p, a := range h.Ports {
		if !a.Is6() || a.Is4In6() || a.IsUnspecified() || a.IsMulticast() || seen[a] {
			return fmt.Errorf("plane %d: port address %v is not a distinct unicast IPv6 address", p, a)
		}
		seen[a] = true
	}
	for p, so := range h.Sockets {
		if !so.IsValid() || so.Port() == 0 {
			return fmt.Errorf("plane %d: socket address %v has no port", p, so)
		}
		// The server sends only to the host that asked, so that a hello
		// cannot aim its datagrams at a third party.
		if !h.Native && so.Addr().Unmap() != peer {
			return fmt.Errorf("plane %d: socket %v is not on the client's address %v", p, so, peer)
		}
	}
	return nil
}

// memory returns the bytes of buffers the session makes the server
// allocate.
func (h *hello) memory() int64 {
	chunk, ring := int64(h.Chunk), int64(h.RingChunks)
	var n int64
	if !h.Phantom || h.TCP {
		n += chunk*ring + chunk*(ring+1) // region and pattern
	}
	if !h.TCP {
		n += udpio.DriverMemory(h.Planes, h.MTU, udpio.Options{})
	}
	return n
}
