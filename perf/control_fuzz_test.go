package perf

import (
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/verbs"
)

// FuzzParseMessage feeds arbitrary lines to the control protocol's parser
// as each message kind: it must return an error or a value, never panic,
// and a hello that passes validation must be one the server can build a
// session from.
func FuzzParseMessage(f *testing.F) {
	good, _ := json.Marshal(fuzzHello())
	f.Add(good)
	f.Add([]byte(`{"version":1,"evs":-1}`))
	f.Add([]byte(`{"chunk":268435456,"ring_chunks":1024}`))
	f.Add([]byte(`{"ports":["::1"],"sockets":["[::1]:1"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var h hello
		if parseMessage(line, &h) == nil {
			checkAccepted(t, &h)
		}
		var r ready
		parseMessage(line, &r)
		var d done
		parseMessage(line, &d)
		var rep ServerReport
		parseMessage(line, &rep)
	})
}

// FuzzHelloValidate varies the hello's numeric fields around their limits.
func FuzzHelloValidate(f *testing.F) {
	f.Add(1, 4096, 1<<20, 16, int64(1<<20), 16, 1, int64(100_000), int64(20_000_000), uint32(256), uint32(7), 0.0, false, false)
	f.Add(-1, 0, -1, 1, int64(-1), -1, 0, int64(-1), int64(-1), uint32(0), uint32(1<<24), 2.0, true, true)
	f.Fuzz(func(t *testing.T, planes, mtu, chunk, ring int, bytes int64, evs, sports int, rtt, loss int64, qpn, psn uint32, drop float64, phantom, tcp bool) {
		h := fuzzHello()
		h.Planes, h.MTU, h.Chunk, h.RingChunks, h.Bytes, h.EVs, h.SourcePorts = planes, mtu, chunk, ring, bytes, evs, sports
		h.BaseRTT, h.LossTimeout, h.QPN, h.PSN, h.Drop, h.Phantom, h.TCP = time.Duration(rtt), time.Duration(loss), qpn, psn, drop, phantom, tcp
		for len(h.Ports) < min(max(planes, 0), verbs.MaxPlanes) {
			p := len(h.Ports)
			h.Ports = append(h.Ports, netip.AddrFrom16([16]byte{0xfd, 0x6d, 15: byte(p + 1)}))
			h.Sockets = append(h.Sockets, netip.AddrPortFrom(netip.IPv6Loopback(), uint16(40000+p)))
		}
		checkAccepted(t, &h)
	})
}

func fuzzHello() hello {
	return hello{Version: Version, Planes: 1, MTU: 4096, Chunk: 1 << 20, RingChunks: 16, Bytes: 1 << 30, Seed: 1,
		Ports: []netip.Addr{netip.MustParseAddr("fd6d:7263::1")}, Sockets: []netip.AddrPort{netip.MustParseAddrPort("[::1]:40000")},
		QPN: 256, EVs: 16, SourcePorts: 1, BaseRTT: 100 * time.Microsecond, LossTimeout: 20 * time.Millisecond}
}

// checkAccepted validates h as a server with default limits would, from
// a client on ::1, and checks what an accepted hello promises.
func checkAccepted(t *testing.T, h *hello) {
	var lim Limits
	lim.defaults()
	if h.validate(netip.IPv6Loopback(), lim) != nil {
		return
	}
	switch {
	case h.Planes < 1 || h.Planes > verbs.MaxPlanes, h.Chunk < 1, h.RingChunks < 2, h.Bytes < 0:
		t.Fatalf("accepted a bad shape: %+v", h)
	case h.memory() > lim.SessionMemory || h.memory() < 0:
		t.Fatalf("accepted %d bytes of buffers: %+v", h.memory(), h)
	case !h.TCP && (h.EVs < 1 || h.EVs > maxEVs || h.MTU < minMTU || h.MTU > maxMTU || len(h.Ports) != h.Planes || len(h.Sockets) != h.Planes):
		t.Fatalf("accepted a bad datapath: %+v", h)
	}
}
