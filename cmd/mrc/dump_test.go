package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/dump"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// A capture of a real transfer for the dump and Wireshark tests: two MRC
// endpoints of package testnet move data A→B over two planes in SRv6 mode
// while the network trims packets and black-holes one path, so that the
// capture holds data packets, SACKs, trim NACKs, retransmissions, an EV
// retired after an untrimmed loss and the probes of that EV.

// captured is one packet of a test capture and what was sent.
type captured struct {
	raw     []byte      // the datagram, from its outermost IPv6 header
	pkt     wire.Packet // raw, decoded
	iface   string      // capture point
	arrival bool        // recorded on arrival at the receiver (a trimmed packet)
}

// testCapture is a capture file and the packets in it, in order.
type testCapture struct {
	path        string
	packets     []captured
	retired     []uint32 // EVs A retired (ASSUMED_BAD) during the transfer
	resurrected []uint32 // EVs A brought back after probes
}

// count returns how many captured packets satisfy f.
func (c *testCapture) count(f func(*captured) bool) int {
	n := 0
	for i := range c.packets {
		if f(&c.packets[i]) {
			n++
		}
	}
	return n
}

// makeTransferCapture runs the transfer and writes its capture to dir.
//
// testnet's Tap sees packets as their sender's port transmits them, before
// the network trims them, so a trimmed packet is recorded separately, on
// arrival at B: when B NACKs a trimmed PSN, the capture gets A's last
// transmission of that PSN trimmed as the network does it (wire.Trim with
// the DSCP of the NACK's reason), at the NACK's time, as received on B's
// port. ECN marking is off so this is exactly what B received.
func makeTransferCapture(t *testing.T, dir string) *testCapture {
	t.Helper()
	const planes = 2
	net, err := testnet.New(testnet.Config{Seed: 3, Planes: planes, Encap: mrc.EncapSRv6, Trim: 0.06, TrimLastHop: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := net.Connect(mrc.EVProfile{ActivePerPlane: 4, BackupPerPlane: 4, PathsPerPlane: 64}, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	epA, epB := net.Endpoint(testnet.A), net.Endpoint(testnet.B)
	src := make([]byte, 192<<10)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	dst := make([]byte, len(src))
	srcMR, _ := epA.RegisterMemory(src, verbs.AccessLocal)
	dstMR, _ := epB.RegisterMemory(dst, verbs.AccessRemoteWrite)

	c := &testCapture{path: filepath.Join(dir, "transfer.pcapng")}
	f, err := os.Create(c.path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(f, pcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ifc [2][planes]int
	var names [2][planes]string
	for s := range 2 {
		for p := range planes {
			names[s][p] = fmt.Sprintf("%c:port%d", 'A'+s, p)
			if ifc[s][p], err = w.AddInterface(pcap.Interface{Name: names[s][p],
				Description: fmt.Sprintf("NIC port %d (plane %d) of host %c", p, p, 'A'+s)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	record := func(now mtime.Time, side, port int, dir pcap.Direction, pkt []byte, arrival bool) {
		cp := captured{raw: pkt, iface: names[side][port], arrival: arrival}
		if err := cp.pkt.Decode(pkt); err != nil {
			t.Fatalf("capture: undecodable packet: %v", err)
		}
		if err := w.WriteDatagram(ifc[side][port], now, dir, pkt, len(pkt)); err != nil {
			t.Fatal(err)
		}
		c.packets = append(c.packets, cp)
	}

	type tx struct {
		pkt  []byte
		port int
	}
	lastTx := map[uint32]tx{} // PSN → A's last transmission of it
	dataSent, killed := 0, false
	var deadPath testnet.Path
	net.Tap = func(now mtime.Time, from testnet.Side, t verbs.Transmit, pkt []byte) {
		pkt = bytes.Clone(pkt)
		var p wire.Packet
		_ = p.Decode(pkt)
		if from == testnet.A && p.BTH.Opcode.IsData() {
			lastTx[p.BTH.PSN] = tx{pkt, t.Port}
			dataSent++
			if dataSent == 6 && !killed {
				// Black-hole the path of this packet: it and every later
				// packet on it are lost without a trim, so A retires
				// the EV and resends elsewhere.
				deadPath = testnet.Path{Plane: t.Port, Index: wire.EV(uint32(wire.JoinEV(p.UDP.SrcPort, p.Outer.FlowLabel))).Path()}
				net.KillPath(deadPath)
				killed = true
			}
		}
		if from == testnet.B && p.BTH.Opcode == wire.OpNACK {
			dscp := uint8(0)
			switch p.NACK.Reason {
			case wire.NackTrimmed:
				dscp = wire.DefaultDSCP.Trimmed
			case wire.NackTrimmedLastHop:
				dscp = wire.DefaultDSCP.TrimmedLastHop
			}
			if orig, ok := lastTx[p.NACK.NackPSN]; ok && dscp != 0 {
				trimmed, err := wire.Trim(bytes.Clone(orig.pkt), dscp)
				if err != nil {
					panic(err)
				}
				record(now, int(testnet.B), orig.port, pcap.DirInbound, trimmed, true)
			}
		}
		record(now, int(from), t.Port, pcap.DirOutbound, pkt, false)
	}
	done, imms := 0, 0
	net.OnEvent = func(s testnet.Side, ev verbs.Event) {
		switch {
		case ev.Kind == verbs.EventWriteDone:
			done++
		case ev.Kind == verbs.EventRecvImm:
			imms++
		case ev.Kind == verbs.EventEVState && s == testnet.A && ev.To == verbs.EVAssumedBad:
			c.retired = append(c.retired, uint32(ev.EV))
		case ev.Kind == verbs.EventEVState && s == testnet.A && ev.From == verbs.EVAssumedBad:
			c.resurrected = append(c.resurrected, uint32(ev.EV))
		case ev.Kind == verbs.EventQPError:
			t.Fatalf("QP error: %v", ev.Err)
		}
	}
	const msgs = 3
	chunk := len(src) / msgs
	for i := range msgs {
		if err := qb.PostRecv(uint64(i)); err != nil {
			t.Fatal(err)
		}
		if err := qa.PostWrite(0, verbs.WriteRequest{ID: uint64(i), Local: srcMR, LocalOffset: uint64(i * chunk),
			Remote: dstMR, RemoteOffset: uint64(i * chunk), Length: uint64(chunk), WithImm: i == msgs-1, Imm: 0xC0FFEE}); err != nil {
			t.Fatal(err)
		}
	}
	net.Kick(testnet.A)
	if !net.RunUntil(mtime.Time(time.Second), func() bool { return done == msgs && imms == 1 }) {
		t.Fatalf("transfer unfinished: %d of %d writes, %d immediates", done, msgs, imms)
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("transfer not byte-exact")
	}
	// Let A probe the retired EV while its path is still dead, then heal
	// the path so that the probes are answered and the EV comes back.
	never := func() bool { return false }
	net.RunUntil(net.Now().Add(400*time.Microsecond), never)
	net.HealPath(deadPath)
	net.RunUntil(net.Now().Add(2*time.Millisecond), never)
	// A port of A goes down and comes back: A tells B with endpoint
	// requests (PORT_STATUS_UPDATE), which B answers.
	net.SetPortUp(testnet.A, 1, false)
	net.RunUntil(net.Now().Add(100*time.Microsecond), never)
	net.SetPortUp(testnet.A, 1, true)
	net.RunUntil(net.Now().Add(100*time.Microsecond), never)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDumpUsage(t *testing.T) {
	dir := t.TempDir()
	notCapture := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notCapture, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump"}, "want one capture file"},
		{[]string{"dump", "a", "b"}, "want one capture file"},
		{[]string{"dump", filepath.Join(dir, "missing.pcap")}, "no such file"},
		{[]string{"dump", notCapture}, "not a pcap or pcapng capture"},
		{[]string{"dump", "--port", "x", notCapture}, "--port"},
		{[]string{"dump", "--bogus", notCapture}, "bogus"},
	} {
		if line := assertUsageError(t, c.args...); !strings.Contains(line, c.want) {
			t.Errorf("mrc %s: %q does not mention %q", strings.Join(c.args, " "), line, c.want)
		}
	}
	if _, stderr, code := runMRC(t, "dump", "-h"); code != 0 || !strings.Contains(stderr, "--json") && !strings.Contains(stderr, "-json") {
		t.Errorf("mrc dump -h: exit %d, stderr %q", code, stderr)
	}
}

// TestDumpTruncatedCapture: a capture cut short prints what it holds and
// exits 1 with one line saying where it stopped.
func TestDumpTruncatedCapture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "dump", "testdata", "edge.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.pcapng")
	if err := os.WriteFile(path, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runMRC(t, "dump", "--brief", path)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "cut short") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "#23 ") || !strings.Contains(stdout, "! capture damaged, reading stops") {
		t.Errorf("stdout:\n%s", stdout)
	}
	// From standard input too.
	stdout, _, code = runMRCStdin(t, string(data), "dump", "--brief", "-")
	if code != 0 || !strings.Contains(stdout, "#24 ") {
		t.Errorf("stdin: exit %d\n%s", code, stdout)
	}
}

// dumpJSON runs mrc dump --json on path and returns its frames.
func dumpJSON(t *testing.T, path string) []dump.Frame {
	t.Helper()
	stdout, stderr, code := runMRC(t, "dump", "--json", path)
	if code != 0 {
		t.Fatalf("mrc dump --json: exit %d: %s", code, stderr)
	}
	var frames []dump.Frame
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var f dump.Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("line %d: %v", len(frames)+1, err)
		}
		frames = append(frames, f)
	}
	return frames
}

// outerEV returns the EV a packet travels on: the UDP source port and the
// flow label of the outermost header.
func outerEV(p *wire.Packet) uint32 {
	if p.Encap {
		return uint32(wire.JoinEV(p.UDP.SrcPort, p.Outer.FlowLabel))
	}
	return uint32(p.EV())
}

// sackedRanges formats the PSNs a SACK's bitmap reports as "5-7,9".
func sackedRanges(s *wire.SACK) string {
	var r [][2]int
	for i := 0; i < wire.SACKBitmapBits; i++ {
		if !s.Bit(i) {
			continue
		}
		j := i
		for j+1 < wire.SACKBitmapBits && s.Bit(j+1) {
			j++
		}
		r = append(r, [2]int{int((s.Base() + uint32(i)) & wire.PSNMask), int((s.Base() + uint32(j)) & wire.PSNMask)})
		i = j
	}
	return dump.Ranges(r)
}

// TestDumpTransfer decodes the capture of a real transfer with mrc dump
// and checks every packet against what was sent.
func TestDumpTransfer(t *testing.T) {
	c := makeTransferCapture(t, t.TempDir())
	checkTransferCapture(t, c)
	frames := dumpJSON(t, c.path)
	if len(frames) != len(c.packets) {
		t.Fatalf("mrc dump shows %d packets, the capture has %d", len(frames), len(c.packets))
	}
	for i := range c.packets {
		checkDumpFrame(t, &frames[i], &c.packets[i])
	}
}

// checkTransferCapture checks that the capture holds what the tests need:
// trims, trim NACKs, retransmissions, an EV retired and probed back.
func checkTransferCapture(t *testing.T, c *testCapture) {
	t.Helper()
	isData := func(p *captured) bool { return p.pkt.BTH.Opcode.IsData() }
	trims := c.count(func(p *captured) bool { return p.pkt.Trimmed })
	nacks := c.count(func(p *captured) bool {
		return p.pkt.BTH.Opcode == wire.OpNACK && p.pkt.NACK.Reason == wire.NackTrimmed
	})
	rtx := c.count(func(p *captured) bool { return isData(p) && p.pkt.BTH.Rtx && !p.arrival })
	if trims == 0 || nacks == 0 || rtx == 0 || len(c.retired) == 0 || len(c.resurrected) == 0 {
		t.Fatalf("capture lacks a case: %d trimmed, %d trim NACKs, %d retransmissions, retired %x, resurrected %x",
			trims, nacks, rtx, c.retired, c.resurrected)
	}
	ev := c.retired[0]
	probes := c.count(func(p *captured) bool { return p.pkt.BTH.Opcode == wire.OpProbe && outerEV(&p.pkt) == ev })
	answered := c.count(func(p *captured) bool {
		return p.pkt.BTH.Opcode == wire.OpSACK && p.pkt.SACK.PR && uint32(p.pkt.SACK.Entropy) == ev
	})
	if probes == 0 || answered == 0 {
		t.Fatalf("retired EV %#x: %d probes, %d answered", ev, probes, answered)
	}
	eps := c.count(func(p *captured) bool { return p.pkt.BTH.Opcode == wire.OpEndpointRequest })
	if eps == 0 {
		t.Fatal("no endpoint requests")
	}
}

// checkDumpFrame compares a frame of mrc dump --json with the packet sent.
func checkDumpFrame(t *testing.T, f *dump.Frame, c *captured) {
	t.Helper()
	p := &c.pkt
	where := fmt.Sprintf("packet %d (%s)", f.Number, f.Summary)
	if len(f.Problems) > 0 || !f.MRC {
		t.Errorf("%s: problems %q", where, f.Problems)
		return
	}
	if f.IfName != c.iface || f.Len != len(c.raw)+14 || f.CapLen != f.Len {
		t.Errorf("%s: interface %q len %d/%d, want %q %d", where, f.IfName, f.CapLen, f.Len, c.iface, len(c.raw)+14)
	}
	ev := outerEV(p)
	b := f.BTH
	if b.Opcode != int(p.BTH.Opcode) || b.PSN != int(p.BTH.PSN) || b.DestQP != int(p.BTH.DestQP) || b.Rtx != p.BTH.Rtx ||
		b.A != p.BTH.AckReq || b.TS != p.BTH.TS || b.PadCnt != int(p.BTH.PadCnt) || b.PKey != int(p.BTH.PKey) {
		t.Errorf("%s: bth %+v, sent %+v", where, b, p.BTH)
	}
	if f.EV == nil || f.EV.Value != ev || f.EV.Plane != wire.EV(ev).Plane() || f.EV.Path != wire.EV(ev).Path() {
		t.Errorf("%s: ev %+v, sent %#x", where, f.EV, ev)
	}
	if len(f.IP) != 2 || f.IP[0].DSCP != int(p.Outer.DSCP()) || f.IP[1].Dst != addrString(p.IP.Dst) || f.UDP.Length != int(p.UDP.Length) {
		t.Errorf("%s: ip %+v udp %+v", where, f.IP, f.UDP)
	}
	if f.UDP.Checksum.OK == nil || !*f.UDP.Checksum.OK {
		t.Errorf("%s: UDP checksum %+v", where, f.UDP.Checksum)
	}
	if f.Trimmed != p.Trimmed {
		t.Errorf("%s: trimmed %v, sent %v", where, f.Trimmed, p.Trimmed)
	}
	if p.HasICRC && (f.ICRC == nil || f.ICRC.Value != fmt.Sprintf("0x%08x", p.ICRC) || !*f.ICRC.OK) {
		t.Errorf("%s: icrc %+v, sent %#08x", where, f.ICRC, p.ICRC)
	}
	switch op := p.BTH.Opcode; {
	case op.IsData():
		if f.METH.MSN != int(p.METH.MSN) || f.METH.RQMSN != int(p.METH.RQMSN) || f.RETH.VA != fmt.Sprintf("0x%016x", p.RETH.VA) ||
			f.RETH.RKey != p.RETH.RKey || f.RETH.DMALen != p.RETH.DMALen {
			t.Errorf("%s: meth %+v reth %+v, sent %+v %+v", where, f.METH, f.RETH, p.METH, p.RETH)
		}
		if op.HasImm() && (f.ImmDt == nil || f.ImmDt.Value != uint32(p.Imm)) {
			t.Errorf("%s: immdt %+v, sent %#x", where, f.ImmDt, p.Imm)
		}
		if !p.Trimmed && (f.Data == nil || f.Data.Len != p.PayloadLen || f.Data.Captured != p.PayloadLen) {
			t.Errorf("%s: payload %+v, sent %d", where, f.Data, p.PayloadLen)
		}
	case op == wire.OpSACK:
		s := f.SACK
		if s.CackPSN != int(p.SACK.CackPSN) || s.SackOffset != int(p.SACK.SackOffset) || s.SackBitmap != fmt.Sprintf("0x%016x", p.SACK.SackBitmap) ||
			dump.Ranges(s.Sacked) != sackedRanges(&p.SACK) || s.MName != p.SACK.M.String() || s.PR != p.SACK.PR ||
			s.Entropy.Value != uint32(p.SACK.Entropy) || s.MPR != int(p.SACK.MPR) || s.CCState.RcvdBytes != int(p.SACK.CC.RcvdBytes) ||
			s.CCState.OOOCount != int(p.SACK.CC.OOOCount) || s.AckPSNOffset != int(p.SACK.AckPSNOffset) {
			t.Errorf("%s: sack %+v, sent %+v", where, s, p.SACK)
		}
	case op == wire.OpNACK:
		n := f.NACK
		if n.ReasonName != p.NACK.Reason.String() || n.NackPSN != int(p.NACK.NackPSN) || n.Entropy.Value != uint32(p.NACK.Entropy) ||
			n.Entropy.Plane != wire.EV(uint32(p.NACK.Entropy)).Plane() || n.CCType != int(p.NACK.CCType) {
			t.Errorf("%s: nack %+v, sent %+v", where, n, p.NACK)
		}
	case op == wire.OpProbe:
		if f.PETH.ProbeID != int(p.Probe.ProbeID) || f.PETH.TSETH.TxTimestamp != int(p.Probe.TS.TxTimestamp) {
			t.Errorf("%s: peth %+v, sent %+v", where, f.PETH, p.Probe)
		}
	case op == wire.OpEndpointRequest:
		if f.ERTH.PortStatusMask != p.EPReq.PortStatusMask || f.ERTH.OpName != p.EPReq.Op.String() {
			t.Errorf("%s: erth %+v, sent %+v", where, f.ERTH, p.EPReq)
		}
	case op == wire.OpEndpointResponse:
		if f.EETH.PortStatusMask != p.EPResp.PortStatusMask || f.EETH.TxTimestamp != int(p.EPResp.TxTimestamp) {
			t.Errorf("%s: eeth %+v, sent %+v", where, f.EETH, p.EPResp)
		}
	default:
		t.Errorf("%s: unexpected opcode %v", where, op)
	}
}

func addrString(a [16]byte) string { return netip.AddrFrom16(a).String() }

// tsharkFields are the fields the Wireshark test extracts, in order.
var tsharkFields = []string{
	"frame.number", "frame.interface_name", "_ws.col.Protocol", "_ws.col.Info",
	"mrc.bth.opcode", "mrc.bth.destqp", "mrc.bth.psn", "mrc.bth.rtx", "mrc.bth.a", "mrc.bth.ts", "mrc.bth.padcnt",
	"mrc.ev", "mrc.ev.plane", "mrc.ev.path",
	"mrc.meth.msn", "mrc.reth.va", "mrc.reth.rkey", "mrc.reth.dma_len", "mrc.immdt", "mrc.payload_len", "mrc.trimmed", "mrc.icrc",
	"mrc.seth.cack_psn", "mrc.seth.sack_offset", "mrc.seth.sack_bitmap", "mrc.seth.sacked", "mrc.seth.m", "mrc.seth.pr", "mrc.seth.rtx",
	"mrc.seth.entropy", "mrc.seth.entropy.plane", "mrc.seth.entropy.path", "mrc.cc.rcvd_bytes",
	"mrc.neth.reason", "mrc.neth.ce", "mrc.neth.nack_psn", "mrc.neth.entropy", "mrc.neth.entropy.plane", "mrc.neth.entropy.path",
	"mrc.peth.probe_id", "mrc.erth.op", "mrc.erth.port_status_mask", "mrc.eeth.op", "mrc.eeth.tx_timestamp", "mrc.eeth.port_status_mask",
	"mrc.malformed", "mrc.unknown_opcode", "mrc.not_captured",
}

// tsharkDecode runs tshark with the dissector on path and returns one map
// of field values per packet.
func tsharkDecode(t *testing.T, path string) []map[string]string {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("MRC_REQUIRE_TSHARK") != "" {
			t.Fatal("tshark not found, and MRC_REQUIRE_TSHARK is set")
		}
		t.Skip("tshark is not installed (DEBIAN_FRONTEND=noninteractive apt-get install -y tshark); skipping the Wireshark dissector test")
	}
	lua, err := filepath.Abs(filepath.Join("..", "..", "contrib", "wireshark", "mrc.lua"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-n", "-r", path, "-X", "lua_script:" + lua, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"}
	for _, f := range tsharkFields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	// A clean configuration: no personal plugins (an installed mrc.lua
	// would register the protocol twice) or preferences.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark reports a Lua error:\n%s", stderr.String())
	}
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		vals := strings.Split(line, "\t")
		if len(vals) != len(tsharkFields) {
			t.Fatalf("tshark printed %d fields, want %d: %q", len(vals), len(tsharkFields), line)
		}
		row := map[string]string{}
		for i, f := range tsharkFields {
			switch v := vals[i]; v { // newer Wireshark prints booleans as words
			case "True":
				row[f] = "1"
			case "False":
				row[f] = "0"
			default:
				row[f] = v
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// TestWiresharkDissector runs tshark with contrib/wireshark/mrc.lua on the
// capture of a real transfer, checks every field it decodes against what
// was sent, and checks that its Info column says what mrc dump says.
// It skips when tshark is not installed, unless MRC_REQUIRE_TSHARK is set
// (as in CI).
func TestWiresharkDissector(t *testing.T) {
	c := makeTransferCapture(t, t.TempDir())
	checkTransferCapture(t, c)
	rows := tsharkDecode(t, c.path)
	frames := dumpJSON(t, c.path)
	if len(rows) != len(c.packets) || len(frames) != len(c.packets) {
		t.Fatalf("tshark shows %d packets, mrc dump %d, the capture has %d", len(rows), len(frames), len(c.packets))
	}
	for i := range c.packets {
		row, p, f := rows[i], &c.packets[i].pkt, &frames[i]
		ev := outerEV(p)
		want := map[string]string{
			"frame.number":         strconv.Itoa(i + 1),
			"frame.interface_name": c.packets[i].iface,
			"_ws.col.Protocol":     "MRC",
			"_ws.col.Info":         f.Summary,
			"mrc.bth.opcode":       fmt.Sprintf("0x%02x", uint8(p.BTH.Opcode)),
			"mrc.bth.destqp":       fmt.Sprintf("0x%06x", p.BTH.DestQP),
			"mrc.bth.psn":          strconv.Itoa(int(p.BTH.PSN)),
			"mrc.bth.rtx":          b2s(p.BTH.Rtx),
			"mrc.bth.a":            b2s(p.BTH.AckReq),
			"mrc.bth.ts":           b2s(p.BTH.TS),
			"mrc.bth.padcnt":       strconv.Itoa(int(p.BTH.PadCnt)),
			"mrc.ev":               fmt.Sprintf("0x%08x", ev),
			"mrc.ev.plane":         strconv.Itoa(wire.EV(ev).Plane()),
			"mrc.ev.path":          strconv.Itoa(wire.EV(ev).Path()),
			"mrc.malformed":        "",
			"mrc.unknown_opcode":   "",
			"mrc.not_captured":     "",
		}
		if p.HasICRC {
			want["mrc.icrc"] = fmt.Sprintf("0x%08x", p.ICRC)
		}
		switch op := p.BTH.Opcode; {
		case op.IsData():
			want["mrc.meth.msn"] = strconv.Itoa(int(p.METH.MSN))
			want["mrc.reth.va"] = fmt.Sprintf("0x%016x", p.RETH.VA)
			want["mrc.reth.rkey"] = fmt.Sprintf("0x%08x", p.RETH.RKey)
			want["mrc.reth.dma_len"] = strconv.Itoa(int(p.RETH.DMALen))
			if op.HasImm() {
				want["mrc.immdt"] = fmt.Sprintf("0x%08x", uint32(p.Imm))
			}
			if p.Trimmed {
				want["mrc.trimmed"] = "1"
				want["mrc.payload_len"] = ""
			} else {
				want["mrc.trimmed"] = ""
				want["mrc.payload_len"] = strconv.Itoa(p.PayloadLen)
			}
		case op == wire.OpSACK:
			s := &p.SACK
			want["mrc.seth.cack_psn"] = strconv.Itoa(int(s.CackPSN))
			want["mrc.seth.sack_offset"] = strconv.Itoa(int(s.SackOffset))
			want["mrc.seth.sack_bitmap"] = fmt.Sprintf("0x%016x", s.SackBitmap)
			want["mrc.seth.sacked"] = sackedRanges(s)
			want["mrc.seth.m"] = strconv.Itoa(int(s.M))
			want["mrc.seth.pr"] = b2s(s.PR)
			want["mrc.seth.rtx"] = b2s(s.Rtx)
			want["mrc.seth.entropy"] = fmt.Sprintf("0x%08x", uint32(s.Entropy))
			want["mrc.seth.entropy.plane"] = strconv.Itoa(wire.EV(uint32(s.Entropy)).Plane())
			want["mrc.seth.entropy.path"] = strconv.Itoa(wire.EV(uint32(s.Entropy)).Path())
			want["mrc.cc.rcvd_bytes"] = strconv.Itoa(int(s.CC.RcvdBytes))
		case op == wire.OpNACK:
			n := &p.NACK
			want["mrc.neth.reason"] = fmt.Sprintf("0x%02x", uint8(n.Reason))
			want["mrc.neth.nack_psn"] = strconv.Itoa(int(n.NackPSN))
			want["mrc.neth.ce"] = b2s(n.CE)
			want["mrc.neth.entropy"] = fmt.Sprintf("0x%08x", uint32(n.Entropy))
			want["mrc.neth.entropy.plane"] = strconv.Itoa(wire.EV(uint32(n.Entropy)).Plane())
			want["mrc.neth.entropy.path"] = strconv.Itoa(wire.EV(uint32(n.Entropy)).Path())
			if !strings.Contains(row["_ws.col.Info"], " "+n.Reason.String()+" psn ") {
				t.Errorf("packet %d: Info %q does not name the NACK reason %v", i+1, row["_ws.col.Info"], n.Reason)
			}
		case op == wire.OpProbe:
			want["mrc.peth.probe_id"] = strconv.Itoa(int(p.Probe.ProbeID))
		case op == wire.OpEndpointRequest:
			want["mrc.erth.op"] = strconv.Itoa(int(p.EPReq.Op))
			want["mrc.erth.port_status_mask"] = fmt.Sprintf("0x%08x", p.EPReq.PortStatusMask)
		case op == wire.OpEndpointResponse:
			want["mrc.eeth.op"] = strconv.Itoa(int(p.EPResp.Op))
			want["mrc.eeth.tx_timestamp"] = strconv.Itoa(int(p.EPResp.TxTimestamp))
			want["mrc.eeth.port_status_mask"] = fmt.Sprintf("0x%08x", p.EPResp.PortStatusMask)
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if row[k] != want[k] {
				t.Errorf("packet %d (%s): tshark %s = %q, sent %q", i+1, f.Summary, k, row[k], want[k])
			}
		}
	}
}

// TestWiresharkDissectorEdgeCases runs tshark with the dissector on
// dump/testdata/edge.pcapng: well-formed packets must decode as mrc dump
// decodes them, damaged ones must be flagged malformed, packets cut on
// purpose (snap length, phantom payload, a fixed-size trim) must not, and RoCE opcodes that
// are not MRC's must go to Wireshark's own InfiniBand dissector.
func TestWiresharkDissectorEdgeCases(t *testing.T) {
	path := filepath.Join("..", "..", "dump", "testdata", "edge.pcapng")
	rows := tsharkDecode(t, path)
	frames := dumpJSON(t, path)
	if len(rows) != len(frames) {
		t.Fatalf("tshark shows %d packets, mrc dump %d", len(rows), len(frames))
	}
	byName := map[string]map[string]string{}
	for i, row := range rows {
		name := row["frame.interface_name"]
		byName[name] = row
		f := &frames[i]
		if f.MRC && len(f.Problems) == 0 && row["_ws.col.Info"] != f.Summary {
			t.Errorf("%s: tshark Info %q, mrc dump %q", name, row["_ws.col.Info"], f.Summary)
		}
	}
	for _, c := range []struct {
		name, field, want string
	}{
		{"write_only_imm", "mrc.immdt", "0xdeadbeef"},
		{"write_only_imm", "mrc.bth.padcnt", "3"},
		{"write_only_imm", "mrc.payload_len", "13"},
		{"srh_inline_usid_rtx", "mrc.bth.rtx", "1"},
		{"encapsulated_trimmed", "mrc.trimmed", "1"},
		{"encapsulated_cut", "mrc.trimmed", "1"},
		{"encapsulated_cut", "mrc.payload_len", "4096"},
		{"encapsulated_cut", "mrc.malformed", ""},
		{"encapsulated_truncated", "mrc.trimmed", ""},
		{"encapsulated_truncated", "mrc.malformed", "1"},
		{"phantom", "mrc.payload_len", "4096"},
		{"phantom", "mrc.not_captured", "1"},
		{"phantom", "mrc.malformed", ""},
		{"sack", "mrc.seth.sacked", "6-7,9-11,68"},
		{"sack", "mrc.seth.m", "1"},
		{"sack", "mrc.seth.pr", "1"},
		{"sack", "mrc.seth.rtx", "1"},
		{"nack", "mrc.neth.reason", "0x06"},
		{"nack_unknown_reason", "mrc.neth.reason", "0x42"},
		{"nack", "mrc.neth.ce", "1"},
		{"probe", "mrc.peth.probe_id", "42"},
		{"endpoint_request", "mrc.erth.port_status_mask", "0x00000005"},
		{"endpoint_response", "mrc.eeth.tx_timestamp", "3"},
		{"endpoint_response", "mrc.eeth.op", "1"},
		{"snapped_sack", "mrc.not_captured", "1"},
		{"snapped_sack", "mrc.malformed", ""},
		{"truncated_sack", "mrc.malformed", "1"},
		{"unknown_opcode", "mrc.unknown_opcode", "1"},
		{"unknown_opcode", "_ws.col.Protocol", "MRC"},
		{"roce_send_opcode", "_ws.col.Protocol", "RRoCE"},
		{"roce_send_opcode", "mrc.bth.opcode", ""},
		{"roce_nak", "_ws.col.Protocol", "RRoCE"},
		{"roce_nak", "mrc.bth.opcode", ""},
		{"ipv4", "mrc.bth.opcode", "0xd1"},
		{"ipv4", "mrc.ev", ""},
	} {
		row, ok := byName[c.name]
		if !ok {
			t.Errorf("no packet on interface %q", c.name)
			continue
		}
		if row[c.field] != c.want {
			t.Errorf("%s: %s = %q, want %q (Info %q)", c.name, c.field, row[c.field], c.want, row["_ws.col.Info"])
		}
	}
}

// TestDumpEmptyCapture: a valid capture without packets says so on one
// line and exits 1, in text and JSON.
func TestDumpEmptyCapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.pcapng")
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.Options{Application: "mrc tests"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(pcap.Interface{Name: "h0/p0"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"dump", path}, {"dump", "--json", path}, {"dump", "--brief", path}} {
		stdout, stderr, code := runMRC(t, args...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no packets") {
			t.Errorf("mrc %s: exit %d, stdout %q, stderr %q; want exit 1 and one line saying no packets", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// TestDumpRoCECapture: a capture of our RoCE baseline decodes as RoCE,
// every header of every packet, with no problems; and an empty capture
// because --pcap-filter matched nothing is warned about when written
// (not with --quiet).
func TestDumpRoCECapture(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.pcapng")
	if _, stderr, code := runMRC(t, "sim", "--preset", "incast", "--transports", "roce", "--pcap", path); code != 0 {
		t.Fatalf("mrc sim: exit %d: %s", code, stderr)
	}
	frames := dumpJSON(t, path)
	if len(frames) < 100 {
		t.Fatalf("%d packets in the RoCE capture, want hundreds", len(frames))
	}
	kinds := map[string]int{}
	for i := range frames {
		f := &frames[i]
		if !f.RoCE || f.MRC || len(f.Problems) > 0 || f.BTH == nil || f.EV != nil || strings.Contains(f.Summary, "not MRC") {
			t.Fatalf("packet %d: roce %v mrc %v problems %q ev %+v summary %q", f.Number, f.RoCE, f.MRC, f.Problems, f.EV, f.Summary)
		}
		name := strings.TrimPrefix(f.BTH.OpcodeName, "RoCE ")
		kinds[name]++
		switch {
		case name == "RDMA_WRITE_FIRST" && (f.RETH == nil || f.RETH.DMALen != 1<<20 || f.Data == nil || f.Data.Len != 4096):
			t.Errorf("packet %d: WRITE_FIRST with reth %+v payload %+v", f.Number, f.RETH, f.Data)
		case name == "ACKNOWLEDGE" && (f.AETH == nil || f.ICRC == nil || f.ICRC.OK == nil || !*f.ICRC.OK):
			t.Errorf("packet %d: ACKNOWLEDGE with aeth %+v icrc %+v", f.Number, f.AETH, f.ICRC)
		}
	}
	for _, k := range []string{"RDMA_WRITE_FIRST", "RDMA_WRITE_MIDDLE", "ACKNOWLEDGE"} {
		if kinds[k] == 0 {
			t.Errorf("no %s packet in the capture (kinds %v)", k, kinds)
		}
	}

	empty := filepath.Join(dir, "e.pcapng")
	_, stderr, code := runMRC(t, "sim", "--preset", "incast", "--transports", "roce", "--pcap", empty, "--pcap-filter", "op=data")
	var warnings []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "warning: ") {
			warnings = append(warnings, l)
		}
	}
	if code != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], empty+": no packets: --pcap-filter \"op=data\" matched none") {
		t.Errorf("empty filtered capture: exit %d, warnings %q in stderr %q", code, warnings, stderr)
	}
	if _, stderr, _ := runMRC(t, "sim", "--preset", "incast", "--transports", "roce", "--pcap", empty, "--pcap-filter", "op=data", "--quiet"); stderr != "" {
		t.Errorf("--quiet: stderr %q", stderr)
	}
	// A capture that matched keeps quiet about it.
	if _, stderr, _ := runMRC(t, "sim", "--preset", "incast", "--transports", "mrc", "--pcap", empty, "--pcap-filter", "op=data"); strings.Contains(stderr, "warning") {
		t.Errorf("a filtered MRC capture with packets warns: %q", stderr)
	}
}
