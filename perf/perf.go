// Package perf is the library behind `mrc perf`, an iperf-style tool that
// runs one MRC connection over the udpio datapath: the client RDMA-WRITEs
// a seeded byte pattern into a buffer the server registered, one
// WRITE_IMM per chunk, and the server checks every chunk against the same
// pattern when its immediate arrives.
//
// MRC has no connection manager, so the two sides set the QP up over a
// small TCP control connection (protocol below), then move the data over
// UDP, one socket per plane, with udpio.
//
// # Control protocol
//
// One JSON object per line. The client sends a hello (its plane
// addresses, QPN and the transfer's shape); the server answers ready (its
// plane addresses, QPN and the memory region) or an error; after the last
// completion the client sends done, and the server answers with a report
// once every chunk has arrived and been checked.
//
// # The ring
//
// The server's region holds RingChunks chunks and the pattern RingChunks+1,
// so chunk k comes from pattern slot k mod (RingChunks+1) and lands in
// region slot k mod RingChunks: a slot holds different bytes every round,
// and a chunk that never arrived cannot pass for one that did. The client
// keeps at most RingChunks-1 chunks outstanding, so no chunk is
// overwritten before the server has checked it (the server checks in the
// event that reports the chunk, before it acknowledges the packets that
// completed it).
package perf

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/verbs"
)

// Version is the control protocol version.
const Version = 1

// hello is the client's opening message.
type hello struct {
	Version     int              `json:"version"`
	Planes      int              `json:"planes"`
	MTU         int              `json:"mtu"`
	Chunk       int              `json:"chunk"`
	RingChunks  int              `json:"ring_chunks"`
	Bytes       int64            `json:"bytes"` // 0: until the client says done
	Phantom     bool             `json:"phantom"`
	Seed        uint64           `json:"seed"`
	Ports       []netip.Addr     `json:"ports"`
	Sockets     []netip.AddrPort `json:"sockets"`
	QPN         uint32           `json:"qpn"`
	PSN         uint32           `json:"psn"` // the client's first PSN, drawn at random
	EVs         int              `json:"evs"`
	SourcePorts int              `json:"source_ports"`
	FlowLabels  bool             `json:"flow_labels"`
	BaseRTT     time.Duration    `json:"base_rtt"`
	LossTimeout time.Duration    `json:"loss_timeout"`
	Drop        float64          `json:"drop"`
	SkipICRC    bool             `json:"skip_icrc,omitempty"`
	// Native asks for native framing (the core's packets on the wire as
	// they are; Ports are the client's NIC addresses), Encap for the
	// encapsulation ("plain", "usid", "srv6").
	Native bool   `json:"native,omitempty"`
	Encap  string `json:"encap,omitempty"`
	// TCP asks for the kernel-TCP baseline: the same chunks, pattern and
	// checks, written on the control connection itself.
	TCP bool `json:"tcp,omitempty"`
}

// ready is the server's answer.
type ready struct {
	Error   string           `json:"error,omitempty"`
	Ports   []netip.Addr     `json:"ports"`
	Sockets []netip.AddrPort `json:"sockets"`
	QPN     uint32           `json:"qpn"`
	PSN     uint32           `json:"psn"` // the server's first PSN, drawn at random
	MR      verbs.MR         `json:"mr"`
	GSO     bool             `json:"gso"`
	GRO     bool             `json:"gro"`
}

// done is the client's end of transfer.
type done struct {
	Chunks int64  `json:"chunks"`
	Bytes  int64  `json:"bytes"`
	Failed string `json:"failed,omitempty"`
}

// ServerReport is what the server saw.
type ServerReport struct {
	Error           string `json:"error,omitempty"`
	Chunks          int64  `json:"chunks"`     // WRITE_IMMs received
	Bytes           int64  `json:"bytes"`      // bytes in them
	Checked         int64  `json:"checked"`    // chunks compared with the pattern
	Mismatch        int64  `json:"mismatched"` // chunks that differed
	Verified        bool   `json:"verified"`   // every chunk arrived and matched
	SACKs           uint64 `json:"sacks_sent"`
	NACKs           uint64 `json:"nacks_sent"`
	Dups            uint64 `json:"duplicates"`
	Dropped         uint64 `json:"dropped"`          // packets the endpoint discarded
	CEReceived      uint64 `json:"ce_received"`      // data packets that arrived marked CE
	TrimmedReceived uint64 `json:"trimmed_received"` // trimmed headers that arrived (and were NACKed)
	ControlDropped  uint64 `json:"control_dropped"`  // SACKs and NACKs the endpoint's control queue had no room for
	// DropReasons breaks Dropped down by mrc.DropReason.
	DropReasons map[string]uint64 `json:"drop_reasons,omitempty"`
	Injected    uint64            `json:"injected_drops"` // packets dropped on purpose (--drop)
	Overflows   uint64            `json:"rx_overflows"`   // datagrams the kernel dropped: socket buffer full
	Malformed   uint64            `json:"rx_malformed"`   // datagrams whose length fields disagree with their size
	// The datapath's other receive drops (udpio.DriverStats), before the
	// endpoint sees a datagram.
	Junk            uint64 `json:"rx_junk"`          // too short to hold an MRC packet
	UnknownPeer     uint64 `json:"rx_unknown_peer"`  // from a core address no peer has
	Spoofed         uint64 `json:"rx_spoofed"`       // a peer's core address, from another IP than its socket's
	AnswersWithheld uint64 `json:"answers_withheld"` // NACKs, SACKs and probe answers over their per-RTT bound
}

// dropReasons returns an endpoint's nonzero drop counts by reason name,
// or nil.
func dropReasons(s verbs.Stats) map[string]uint64 {
	var m map[string]uint64
	for r, n := range s.Drops {
		if n > 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[verbs.DropReason(r).String()] = n
		}
	}
	return m
}

// pattern returns n bytes of the seeded pattern.
func pattern(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 4 {
		key[i*8] = byte(seed >> (8 * i))
		key[i*8+4] = byte(seed >> (8 * (i + 4)))
	}
	b := make([]byte, n)
	c := rand.NewChaCha8(key)
	c.Read(b)
	return b
}

// slots returns where chunk k comes from in the pattern and goes to in the
// server's region.
func slots(k int64, ring, chunk int) (src, dst int) {
	return int(k%int64(ring+1)) * chunk, int(k%int64(ring)) * chunk
}

// chunkLen returns the length of chunk k of a transfer of total bytes (0:
// unbounded, every chunk full).
func chunkLen(k, total int64, chunk int) int {
	if total == 0 {
		return chunk
	}
	return int(min(int64(chunk), total-k*int64(chunk)))
}

// coreAddrs returns core port addresses for planes: a random /64 of the
// ULA prefix fd6d:7263::/32 ("mrc"), one address per plane. They name the
// ports to the MRC core; udpio maps them to socket addresses.
func coreAddrs(r *rand.Rand, planes int) []netip.Addr {
	var a [16]byte
	a[0], a[1], a[2], a[3] = 0xfd, 0x6d, 0x72, 0x63
	for i := 4; i < 8; i++ {
		a[i] = byte(r.Uint32())
	}
	out := make([]netip.Addr, planes)
	for p := range out {
		a[15] = byte(p + 1)
		out[p] = netip.AddrFrom16(a)
	}
	return out
}

// lineConn is the control connection's framing: JSON lines of at most
// MaxLine bytes.
type lineConn struct {
	enc *json.Encoder
	br  *bufio.Reader
}

func newLineConn(c net.Conn) *lineConn {
	return &lineConn{enc: json.NewEncoder(c), br: bufio.NewReaderSize(c, MaxLine)}
}

// rest returns a reader of the bytes after the last message read.
func (c *lineConn) rest() io.Reader { return c.br }

func (c *lineConn) send(v any) error { return c.enc.Encode(v) }

// recv reads one message into v.
func (c *lineConn) recv(v any) error {
	line, err := c.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return fmt.Errorf("control connection: a message longer than %d bytes", MaxLine)
	case err != nil:
		return fmt.Errorf("control connection: %w", err)
	}
	return parseMessage(line, v)
}

// parseMessage decodes one control message (a JSON object) into v.
func parseMessage(line []byte, v any) error {
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("control connection: %w", err)
	}
	return nil
}
