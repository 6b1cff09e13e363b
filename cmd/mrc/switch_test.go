package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmrc/mrc/fabric"
	"github.com/openmrc/mrc/swnet"
	"github.com/openmrc/mrc/wire"
)

func writeTable(t *testing.T, table string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "switch.table")
	if err := os.WriteFile(f, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSwitchUsageErrors(t *testing.T) {
	good := writeTable(t, "switch mode srv6 addr fcbb:bb00:201::\nport mrc-no-such0\nroute fcbb:bb00:101::/48 mrc-no-such0\n")
	bad := writeTable(t, "switch mode srv6 addr fcbb:bb00:201::\nport p0\nroute fcbb:bb00:101::/48 p7\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"switch"}, "--table is required"},
		{[]string{"switch", "--table", "/nonexistent/table"}, "no such file"},
		{[]string{"switch", "--table", bad}, `switch.table:3: no port "p7"`},
		{[]string{"switch", "--table", good, "extra"}, "unexpected argument"},
		{[]string{"switch", "--table", good}, "port mrc-no-such0: no such network interface"},
		{[]string{"switch", "--bogus"}, "flag provided but not defined"},
	} {
		line := assertUsageError(t, tc.args...)
		if !strings.Contains(line, tc.want) {
			t.Errorf("mrc %s: %q does not mention %q", strings.Join(tc.args, " "), line, tc.want)
		}
	}
}

func TestSwitchCheck(t *testing.T) {
	f := writeTable(t, `switch name t1 mode srv6 addr fcbb:bb00:201:: ecn-inner
port d0 peer 02:00:00:00:00:01 rate 1G delay 10us
port d1 lasthop
queue buffer 512KiB trim-at 64KiB ecn 16KiB 48KiB
route fcbb:bb00:101::/48 d0
route fcbb:bb00:102::/48 d1
`)
	stdout, stderr, code := runMRC(t, "switch", "--table", f, "--check")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"mode srv6, addr fcbb:bb00:201::", "port 0 d0: peer 02:00:00:00:00:01, rate 1 Gbit/s, delay 10µs",
		"trim true at 65536, ECN 16384..49152, last hop true", "route fcbb:bb00:102::/48 -> [1]"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--check output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestSwitchForwards runs `mrc switch` on two veth ports in a namespace of
// its own and drives it from the veths' other ends: an SRv6 packet in on
// one port comes out of the other, shifted, to the configured neighbour;
// the metrics endpoint serves the counters; SIGTERM writes them as JSON.
func TestSwitchForwards(t *testing.T) {
	if err := fabric.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ns := fmt.Sprintf("%s-%d-switch", fabric.DefaultPrefix, os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	if err := fabric.InNetns(ns, func() error {
		for _, k := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ip("-n", ns, "link", "set", "lo", "up")
	ip("-n", ns, "link", "add", "sw0", "address", "02:00:00:00:01:00", "type", "veth", "peer", "name", "x0", "address", "02:00:00:00:01:01")
	ip("-n", ns, "link", "add", "sw1", "address", "02:00:00:00:02:00", "type", "veth", "peer", "name", "x1", "address", "02:00:00:00:02:01")
	for _, d := range []string{"sw0", "x0", "sw1", "x1"} {
		ip("-n", ns, "link", "set", "dev", d, "up")
	}
	table := writeTable(t, `switch name t1 mode srv6 addr fcbb:bb00:201::
port sw0 peer 02:00:00:00:01:01
port sw1 peer 02:00:00:00:02:01 rate 10G delay 100us
route fcbb:bb00:101::/48 sw0
route fcbb:bb00:102::/48 sw1
`)
	counters := filepath.Join(t.TempDir(), "counters.json")
	cmd := exec.Command("ip", "netns", "exec", ns, mrcBin, "switch", "--table", table, "--metrics", "127.0.0.1:9464", "--json", counters)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewReader(out)
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("mrc switch: %v (stderr %q)", err, stderr.String())
		}
		if strings.HasPrefix(line, "mrc switch: forwarding on 2 ports") {
			break
		}
	}
	var x0, x1 *swnet.PacketLink
	if err := fabric.InNetns(ns, func() error {
		var err error
		if x0, err = swnet.OpenPacketLink("x0", net.HardwareAddr{2, 0, 0, 0, 1, 0}); err != nil {
			return err
		}
		x1, err = swnet.OpenPacketLink("x1", net.HardwareAddr{2, 0, 0, 0, 2, 0})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer x0.Close()
	defer x1.Close()
	pkt := srv6Packet(wire.F3216.Container([16]byte{0xfc, 0xbb, 0xbb, 0}, 0x201, 0x102, 0xe01))
	if _, err := x0.Send([][]byte{pkt}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		bufs, sizes := [][]byte{make([]byte, 9216)}, []int{0}
		for {
			n, err := x1.Receive(bufs, sizes)
			if err != nil {
				return
			}
			if n > 0 && sizes[0] >= 40 && bufs[0][6] == wire.ProtoIPv6 {
				got <- append([]byte(nil), bufs[0][:sizes[0]]...)
				return
			}
		}
	}()
	select {
	case g := <-got:
		want := wire.F3216.Container([16]byte{0xfc, 0xbb, 0xbb, 0}, 0x102, 0xe01)
		if *wire.OuterDst(g) != want || g[7] != 63 || len(g) != len(pkt) {
			t.Errorf("forwarded packet: destination %x (want %x), hop limit %d, %d bytes (sent %d)", *wire.OuterDst(g), want, g[7], len(g), len(pkt))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the packet did not come out of the other port")
	}
	// Metrics, from inside the namespace.
	var body string
	if err := fabric.InNetns(ns, func() error {
		c, err := net.Dial("tcp", "127.0.0.1:9464")
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
		b, err := io.ReadAll(c)
		body = string(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`mrc_port_packets_total{node="t1",port="sw0",plane="0",dir="rx"} 1`,
		`mrc_switch_packets_total{node="t1",event="sent"} 1`, `mrc_switch_port_up{node="t1",port="sw1",plane="0"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("mrc switch exit: %v (stderr %q)", err, stderr.String())
	}
	var st swnet.Stats
	b, err := os.ReadFile(counters)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Sent != 1 || st.Ports[0].RxPackets != 1 || st.Ports[1].TxPackets != 1 || st.Ports[1].Peer != "02:00:00:00:02:01" {
		t.Errorf("counters %+v", st)
	}
}

// srv6Packet is a whole IPv6-in-IPv6 MRC WRITE packet to the uSID
// container dst.
func srv6Packet(dst [16]byte) []byte {
	var p wire.Packet
	src, final := [16]byte{0xfd, 1, 15: 1}, [16]byte{0xfd, 2, 15: 1}
	p.Encap = true
	p.Outer = wire.IPv6{TrafficClass: 10<<2 | uint8(wire.ECT0), NextHeader: wire.ProtoIPv6, HopLimit: 64, Src: src, Dst: dst}
	p.IP = wire.IPv6{TrafficClass: 10<<2 | uint8(wire.ECT0), NextHeader: wire.ProtoUDP, HopLimit: 64, Src: src, Dst: final}
	p.UDP = wire.UDP{DstPort: wire.UDPPortRoCEv2}
	p.SetEV(0xc0001234)
	p.BTH = wire.BTH{Opcode: wire.OpWriteOnly, DestQP: 0x100, PSN: 1}
	p.RETH = wire.RETH{VA: 1 << 32, RKey: 1, DMALen: 1000}
	return wire.AppendPacket(nil, &p, make([]byte, 1000))
}

// TestSwitchUnprivileged: without CAP_NET_RAW, one clear line, exit 2.
func TestSwitchUnprivileged(t *testing.T) {
	// A file nobody may read (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "mrc-switch-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	table := filepath.Join(dir, "switch.table")
	if err := os.WriteFile(table, []byte("switch mode ecmp\nport lo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	switch setpriv, lerr := exec.LookPath("setpriv"); {
	case os.Geteuid() != 0:
		cmd = exec.Command(mrcBin, "switch", "--table", table)
	case lerr == nil:
		cmd = exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", mrcBin, "switch", "--table", table)
	default:
		t.Skip("skipping: no setpriv to drop root")
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || stdout.String() != "" || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "needs CAP_NET_RAW") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
