package pcap

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/openmrc/mrc/wire"
)

func TestFilter(t *testing.T) {
	data := datagram(t, 64, 64) // EV 0xC0011003: plane 1, path 3; QP 0x12
	rtx := datagram(t, 64, 64)
	var p wire.Packet
	_ = p.Decode(rtx)
	p.BTH.Rtx = true
	rtx = wire.AppendPacket(nil, &p, make([]byte, 64))
	trimmed, _ := wire.Trim(datagram(t, 64, 64), 48)
	cut := datagram(t, 64, 64) // a fixed-size trim: cut, lengths stale, DSCP 49
	cut = cut[:len(cut)-40]
	wire.SetOuterDSCP(cut, 49)
	_ = p.Decode(datagram(t, 64, 64))
	p.BTH.Opcode = wire.OpNACK
	p.BTH.DestQP = 0x34
	p.SetEV(0xC0002005)
	p.NACK = wire.NACK{Reason: wire.NackTrimmed, Entropy: 0xC0011003}
	nack := wire.AppendPacket(nil, &p, nil)

	for _, c := range []struct {
		filter string
		pkt    []byte
		want   bool
	}{
		{"", data, true},
		{"", []byte("junk"), true},
		{"op=data", []byte("junk"), false},
		{"op=data", data, true},
		{"op=data", rtx, false},
		{"op=rtx", rtx, true},
		{"op=trimmed", trimmed, true},
		{"op=data,rtx", trimmed, false},
		{"op=trimmed", cut, true},
		{"op=data", cut, false},
		{"op=nack,sack", nack, true},
		{"qpn=0x12", data, true},
		{"qpn=0x12", nack, false},
		{"plane=1", data, true},
		{"plane=0", data, false},
		{"plane=1", nack, true}, // reports on an EV of plane 1
		{"path=5", nack, true},
		{"path=4", nack, false},
		{"ev=0xc0011003", nack, true},
		{"ev=0xc0011003 op=data", nack, false},
		{"addr=fd00::1", data, true},
		{"addr=fd00::3", data, false},
	} {
		f, err := ParseFilter(c.filter)
		if err != nil {
			t.Fatalf("%q: %v", c.filter, err)
		}
		if got := f.Match(c.pkt); got != c.want {
			t.Errorf("%q: %v, want %v", c.filter, got, c.want)
		}
	}
	f, _ := ParseFilter("op=data,rtx qpn=0x12 plane=1 path=3 addr=fd00::2")
	if a := testing.AllocsPerRun(100, func() { f.Match(data) }); a != 0 {
		t.Errorf("Match allocates %v", a)
	}
	if f.Addrs[0] != netip.MustParseAddr("fd00::2") {
		t.Errorf("addrs %v", f.Addrs)
	}
	for _, bad := range []string{"op=bogus", "qpn=0x1000000", "ev=x", "plane=-1", "path=a", "addr=10.0.0.1", "addr=zz", "color=red", "op"} {
		if _, err := ParseFilter(bad); err == nil || !strings.HasPrefix(err.Error(), "pcap filter: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
