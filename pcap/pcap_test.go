package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// datagram returns an MRC WRITE_MIDDLE datagram with n payload bytes, of
// which only have are carried (a phantom payload when have < n).
func datagram(t testing.TB, n, have int) []byte {
	t.Helper()
	p := wire.Packet{
		IP:   wire.IPv6{HopLimit: 64, Src: [16]byte{0xfd, 0, 15: 1}, Dst: [16]byte{0xfd, 0, 15: 2}},
		UDP:  wire.UDP{DstPort: wire.UDPPortRoCEv2},
		BTH:  wire.BTH{Opcode: wire.OpWriteMiddle, PKey: wire.PKeyDefault, DestQP: 0x12, PSN: 100},
		RETH: wire.RETH{VA: 0x1000, RKey: 7, DMALen: 1 << 20},
	}
	p.SetEV(0xC0011003)
	p.PayloadLen = n
	payload := bytes.Repeat([]byte{0xAB}, have)
	return wire.AppendPacket(nil, &p, payload)
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	epoch := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	w, err := NewWriter(&buf, Options{Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	host, err := w.AddInterface(Interface{Name: "hostA:port0", Description: "NIC port 0 of A"})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := w.AddInterface(Interface{Name: "t1.3:eth7", Snaplen: 100, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := w.AddInterface(Interface{Name: "raw", LinkType: LinkIPv6})
	if err != nil {
		t.Fatal(err)
	}
	whole := datagram(t, 1000, 1000)
	phantom := datagram(t, 4096, 0)
	trimmed, err := wire.Trim(datagram(t, 1000, 1000), 48)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		ifc     int
		t       mtime.Time
		dir     Direction
		data    []byte // the datagram
		wireLen int
		capLen  int // of the frame
		origLen int
	}
	cases := []want{
		{host, 5, DirOutbound, whole, len(whole), 14 + len(whole), 14 + len(whole)},
		{host, 1_000_000_007, DirInbound, phantom, len(phantom) + 4096 + 4, 14 + len(phantom), 14 + len(phantom) + 4100},
		{sw, 2_000_000_000, DirUnknown, whole, len(whole), 100, 14 + len(whole)},
		{sw, 3_000_000_000, DirUnknown, trimmed, len(trimmed), 14 + len(trimmed), 14 + len(trimmed)},
		{raw, 4_000_000_000, DirOutbound, whole, len(whole), len(whole), len(whole)},
	}
	for _, c := range cases {
		if err := w.WriteDatagram(c.ifc, c.t, c.dir, c.data, c.wireLen); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteDatagram(9, 0, DirUnknown, whole, 0); !errors.Is(err, ErrInterface) {
		t.Errorf("unknown interface: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Packets() != uint64(len(cases)) {
		t.Errorf("Packets() = %d", w.Packets())
	}

	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !r.PcapNG() {
		t.Error("not pcapng")
	}
	for i, c := range cases {
		p, err := r.Next()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if p.Interface != c.ifc || p.Dir != c.dir || len(p.Data) != c.capLen || p.OrigLen != c.origLen {
			t.Errorf("packet %d: interface %d dir %v caplen %d origlen %d, want %d %v %d %d",
				i, p.Interface, p.Dir, len(p.Data), p.OrigLen, c.ifc, c.dir, c.capLen, c.origLen)
		}
		if want := epoch.UnixNano() + int64(c.t); p.Time != want {
			t.Errorf("packet %d: time %d, want %d", i, p.Time, want)
		}
		frame := p.Data
		if p.LinkType == LinkEthernet {
			if et := binary.BigEndian.Uint16(frame[12:]); et != EtherTypeIPv6 {
				t.Errorf("packet %d: ethertype %#x", i, et)
			}
			frame = frame[14:]
		}
		if n := min(len(frame), len(c.data)); !bytes.Equal(frame[:n], c.data[:n]) {
			t.Errorf("packet %d: datagram bytes differ", i)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last packet: %v, want EOF", err)
	}
	ifs := r.Interfaces()
	if len(ifs) != 3 || ifs[0].Name != "hostA:port0" || ifs[0].Description != "NIC port 0 of A" ||
		ifs[1].Snaplen != 100 || ifs[2].LinkType != LinkIPv6 || ifs[0].TSResol != 9 {
		t.Errorf("interfaces: %+v", ifs)
	}
}

func TestMACs(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Options{})
	a, _ := w.AddInterface(Interface{})
	b, _ := w.AddInterface(Interface{SrcMAC: [6]byte{2, 1, 2, 3, 4, 5}, DstMAC: [6]byte{2, 6, 7, 8, 9, 10}})
	d := datagram(t, 8, 8)
	_ = w.WriteDatagram(a, 0, DirUnknown, d, len(d))
	_ = w.WriteDatagram(b, 0, DirUnknown, d, len(d))
	_ = w.Flush()
	r, _ := NewReader(&buf)
	p, _ := r.Next()
	if p.Data[0] != 0x02 || p.Data[6] != 0x02 || bytes.Equal(p.Data[0:6], p.Data[6:12]) {
		t.Errorf("derived MACs % x", p.Data[:12])
	}
	if want := deriveMAC(d, true); !bytes.Equal(p.Data[0:6], want[:]) {
		t.Errorf("derived destination MAC % x, want % x", p.Data[0:6], want)
	}
	p, _ = r.Next()
	if !bytes.Equal(p.Data[:12], []byte{2, 6, 7, 8, 9, 10, 2, 1, 2, 3, 4, 5}) {
		t.Errorf("configured MACs % x", p.Data[:12])
	}
}

func TestShortFramePadded(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Options{})
	i, _ := w.AddInterface(Interface{})
	_ = w.WriteDatagram(i, 0, DirUnknown, []byte{0x60, 1, 2, 3}, 4)
	_ = w.Flush()
	r, _ := NewReader(&buf)
	p, err := r.Next()
	if err != nil || len(p.Data) != MinFrameLen || p.OrigLen != MinFrameLen {
		t.Fatalf("short frame: %v, caplen %d origlen %d", err, len(p.Data), p.OrigLen)
	}
}

func TestWriteDatagramDoesNotAllocate(t *testing.T) {
	w, _ := NewWriter(io.Discard, Options{Epoch: time.Unix(1, 0)})
	i, _ := w.AddInterface(Interface{Name: "x"})
	j, _ := w.AddInterface(Interface{Name: "y", LinkType: LinkRaw, Snaplen: 64})
	d := datagram(t, 4096, 4096)
	ph := datagram(t, 4096, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		_ = w.WriteDatagram(i, 1000, DirOutbound, d, len(d))
		_ = w.WriteDatagram(i, 1000, DirUnknown, ph, len(ph)+4100)
		_ = w.WriteDatagram(j, 1000, DirInbound, d, len(d))
		_ = w.WritePacket(j, 1000, DirUnknown, d, len(d))
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet", allocs/4)
	}
}

func BenchmarkWriteDatagram(b *testing.B) {
	w, _ := NewWriter(io.Discard, Options{})
	i, _ := w.AddInterface(Interface{Name: "x"})
	d := datagram(b, 4096, 4096)
	b.SetBytes(int64(len(d)))
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		_ = w.WriteDatagram(i, mtime.Time(n), DirOutbound, d, len(d))
	}
}

// classic builds a classic pcap file.
func classic(order binary.AppendByteOrder, nano bool, link uint32, recs ...[]byte) []byte {
	var b []byte
	magic := uint32(magicMicro)
	if nano {
		magic = magicNano
	}
	b = order.AppendUint32(b, magic)
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 4)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 262144)
	b = order.AppendUint32(b, link)
	for i, d := range recs {
		b = order.AppendUint32(b, uint32(100+i))
		b = order.AppendUint32(b, 999)
		b = order.AppendUint32(b, uint32(len(d)))
		b = order.AppendUint32(b, uint32(len(d)+10))
		b = append(b, d...)
	}
	return b
}

func TestClassicPcap(t *testing.T) {
	for _, c := range []struct {
		order binary.AppendByteOrder
		nano  bool
	}{{binary.LittleEndian, false}, {binary.BigEndian, false}, {binary.LittleEndian, true}, {binary.BigEndian, true}} {
		f := classic(c.order, c.nano, uint32(LinkRaw), []byte{0x60, 1, 2}, []byte{0x60})
		r, err := NewReader(bytes.NewReader(f))
		if err != nil {
			t.Fatal(err)
		}
		frac := int64(999_000)
		if c.nano {
			frac = 999
		}
		for i := range 2 {
			p, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if p.LinkType != LinkRaw || p.Time != int64(100+i)*1e9+frac || p.OrigLen != len(p.Data)+10 || p.Data[0] != 0x60 {
				t.Errorf("%v nano=%v record %d: %+v", c.order, c.nano, i, p)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("end: %v", err)
		}
		if r.PcapNG() {
			t.Error("classic read as pcapng")
		}
	}
}

func TestDamagedCaptures(t *testing.T) {
	if _, err := NewReader(strings.NewReader("hello, world")); !errors.Is(err, ErrNotCapture) {
		t.Errorf("text: %v", err)
	}
	if _, err := NewReader(strings.NewReader("")); !errors.Is(err, ErrNotCapture) {
		t.Errorf("empty: %v", err)
	}

	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Options{})
	i, _ := w.AddInterface(Interface{})
	d := datagram(t, 100, 100)
	for range 3 {
		_ = w.WriteDatagram(i, 0, DirUnknown, d, len(d))
	}
	_ = w.Flush()
	good := buf.Bytes()

	// Truncated in the middle of the third packet: two packets, then a
	// final error wrapping io.ErrUnexpectedEOF.
	r, _ := NewReader(bytes.NewReader(good[:len(good)-20]))
	for k := range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatalf("packet %d: %v", k, err)
		}
	}
	_, err := r.Next()
	var pe *Error
	if !errors.As(err, &pe) || pe.Skipped || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("error not sticky: %v", err2)
	}

	// The second packet claims more captured bytes than its block holds:
	// it is skipped and the third is read.
	bad := bytes.Clone(good)
	shbLen := int(binary.LittleEndian.Uint32(bad[4:]))
	idbLen := int(binary.LittleEndian.Uint32(bad[shbLen+4:]))
	epb := shbLen + idbLen
	epbLen := int(binary.LittleEndian.Uint32(bad[epb+4:]))
	binary.LittleEndian.PutUint32(bad[epb+epbLen+20:], 60000)
	r, _ = NewReader(bytes.NewReader(bad))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if !errors.As(err, &pe) || !pe.Skipped {
		t.Fatalf("bad caplen: %v", err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatalf("after a skipped block: %v", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}

	// A block whose trailer disagrees with its length ends the reading.
	bad = bytes.Clone(good)
	binary.LittleEndian.PutUint32(bad[epb+epbLen-4:], 8)
	r, _ = NewReader(bytes.NewReader(bad))
	if _, err := r.Next(); !errors.As(err, &pe) || pe.Skipped {
		t.Errorf("bad trailer: %v", err)
	}
}

func TestTimestampResolutions(t *testing.T) {
	for _, c := range []struct {
		resol uint8
		ts    uint64
		want  int64
	}{
		{6, 1_500_000, 1_500_000_000},
		{9, 123, 123},
		{3, 2, 2_000_000},
		{12, 5_000, 5},
		{0x80 | 10, 1024, 1e9},
		{0x80 | 30, 1 << 30, 1e9},
		{0x80 | 70, 1 << 40, 0},
		{0, 1 << 62, 1<<63 - 1},
	} {
		ifc := InterfaceInfo{TSResol: c.resol}
		if got := ifc.ns(c.ts); got != c.want {
			t.Errorf("resol %#x ts %d: %d ns, want %d", c.resol, c.ts, got, c.want)
		}
	}
}

// TestBigEndianPcapNG reads a big-endian section by hand-building one.
func TestBigEndianPcapNG(t *testing.T) {
	be := binary.BigEndian
	block := func(typ uint32, body []byte) []byte {
		var b []byte
		b = be.AppendUint32(b, typ)
		b = be.AppendUint32(b, uint32(12+len(body)))
		b = append(b, body...)
		return be.AppendUint32(b, uint32(12+len(body)))
	}
	var f []byte
	shb := be.AppendUint32(nil, byteOrderMagic)
	shb = be.AppendUint16(shb, 1)
	shb = be.AppendUint16(shb, 0)
	shb = be.AppendUint64(shb, ^uint64(0))
	f = append(f, block(blockSHB, shb)...)
	idb := be.AppendUint16(nil, uint16(LinkRaw))
	idb = be.AppendUint16(idb, 0)
	idb = be.AppendUint32(idb, 0)
	f = append(f, block(blockIDB, idb)...)
	spb := be.AppendUint32(nil, 7)
	spb = append(spb, 0x60, 1, 2, 3, 4, 5, 6, 0)
	f = append(f, block(blockSPB, spb)...)
	f = append(f, block(0x0BAD, []byte{1, 2, 3, 4})...) // custom: skipped
	epb := be.AppendUint32(nil, 0)
	epb = be.AppendUint32(epb, 0)
	epb = be.AppendUint32(epb, 1_000_000)
	epb = be.AppendUint32(epb, 3)
	epb = be.AppendUint32(epb, 3)
	epb = append(epb, 0x60, 9, 9, 0)
	f = append(f, block(blockEPB, epb)...)

	r, err := NewReader(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Next()
	if err != nil || len(p.Data) != 7 || p.OrigLen != 7 || p.LinkType != LinkRaw {
		t.Fatalf("SPB: %+v %v", p, err)
	}
	p, err = r.Next()
	if err != nil || !bytes.Equal(p.Data, []byte{0x60, 9, 9}) || p.Time != 1e9 {
		t.Fatalf("EPB: %+v %v", p, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
}

// TestTsharkReadsCapture checks that tshark reads what the Writer writes:
// interface names, lengths and nanosecond timestamps.
func TestTsharkReadsCapture(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("MRC_REQUIRE_TSHARK") != "" {
			t.Fatal("tshark not found, and MRC_REQUIRE_TSHARK is set")
		}
		t.Skip("tshark is not installed (DEBIAN_FRONTEND=noninteractive apt-get install -y tshark); skipping")
	}
	path := filepath.Join(t.TempDir(), "x.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := NewWriter(f, Options{})
	a, _ := w.AddInterface(Interface{Name: "hostA:port0"})
	b, _ := w.AddInterface(Interface{Name: "t1.3:eth7"})
	d := datagram(t, 100, 100)
	ph := datagram(t, 4096, 0)
	_ = w.WriteDatagram(a, 1_234_567_891, DirOutbound, d, len(d))
	_ = w.WriteDatagram(b, 2_000_000_001, DirInbound, ph, len(ph)+4100)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(tshark, "-r", path, "-n", "-T", "fields", "-E", "separator=|",
		"-e", "frame.interface_name", "-e", "frame.len", "-e", "frame.cap_len", "-e", "frame.time_epoch",
		"-e", "ipv6.flow", "-e", "udp.dstport").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := [][]string{
		{"hostA:port0", strconv.Itoa(14 + len(d)), strconv.Itoa(14 + len(d)), "1.234567891", "0x001003", "4791"},
		{"t1.3:eth7", strconv.Itoa(14 + len(ph) + 4100), strconv.Itoa(14 + len(ph)), "2.000000001", "0x001003", "4791"},
	}
	if len(lines) != len(want) {
		t.Fatalf("tshark printed %q", out)
	}
	for i, l := range lines {
		got := strings.Split(l, "|")
		for j := range want[i] {
			if j >= len(got) || got[j] != want[i][j] {
				t.Errorf("packet %d: tshark says %q, want %q", i, got, want[i])
				break
			}
		}
	}
}
