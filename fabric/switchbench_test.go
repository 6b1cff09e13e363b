package fabric

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openmrc/mrc/swnet"
	"github.com/openmrc/mrc/wire"
)

// BenchmarkSwitchForwarding measures `mrc switch`'s forwarding rate on
// veth, one port pair: a generator namespace blasts IPv6/UDP frames
// through an AF_PACKET socket into port s0 of the device under test, whose
// table routes them out of port s1 to a sink namespace that counts them
// (its interface's rx_packets) and drops them (IPv6 off). The paired
// baseline is the Linux kernel forwarding the same frames on the same
// links (the DUT namespace as a router): each round runs both, back to
// back. The DUT is pinned to CPU 0 and the generator to CPU 1, where
// taskset and two CPUs exist (the kernel router forwards in the
// generator's softirq, on CPU 1). It reports, for small packets (64-byte
// UDP payload) and MRC-sized ones (4 KiB), the median packets per second
// delivered to the sink by each DUT, the offered rate, and the median
// over rounds of mrc/kernel. Run it as root with
//
//	go test ./fabric -run '^$' -bench SwitchForwarding -benchtime 1x
func BenchmarkSwitchForwarding(b *testing.B) {
	if err := Available(); err != nil {
		b.Skipf("skipping: %v", err)
	}
	for _, size := range []int{64, 4096} {
		b.Run(fmt.Sprintf("payload-%d", size), func(b *testing.B) {
			duts := []string{"mrc", "kernel"}
			pps, gbps, offered := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
			var ratio []float64
			for b.Loop() {
				for range *fwdRuns {
					for _, dut := range duts {
						p, g, o := forwardOnce(b, dut, size, *fwdFor)
						pps[dut], gbps[dut], offered[dut] = append(pps[dut], p), append(gbps[dut], g), append(offered[dut], o)
					}
					ratio = append(ratio, pps["mrc"][len(pps["mrc"])-1]/pps["kernel"][len(pps["kernel"])-1])
				}
			}
			for _, dut := range duts {
				b.ReportMetric(medianOf(pps[dut]), dut+"-pkt/s")
				b.ReportMetric(medianOf(gbps[dut]), dut+"-Gbit/s")
				b.Logf("%s, %d-byte payload: median %.0f pkt/s of %.0f = %.2f Gbit/s; offered %.0f pkt/s", dut, size, medianOf(pps[dut]), pps[dut], medianOf(gbps[dut]), medianOf(offered[dut]))
			}
			b.ReportMetric(medianOf(ratio), "mrc/kernel")
			b.Logf("mrc/kernel: median %.2f of %.2f", medianOf(ratio), ratio)
		})
	}
}

var (
	fwdRuns = flag.Int("fwdruns", 3, "runs of each BenchmarkSwitchForwarding case")
	fwdFor  = flag.Duration("fwdfor", 2*time.Second, "how long each BenchmarkSwitchForwarding run sends")
)

// medianOf returns the median of v (the upper one of an even count).
func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// forwardOnce builds gen -- dut -- sink, sends for d and returns the
// packets per second the sink received, their IPv6 bit rate, and the
// packets per second the generator handed to its interface.
func forwardOnce(b *testing.B, dut string, payload int, d time.Duration) (pps, gbps, offered float64) {
	b.Helper()
	base := fmt.Sprintf("%s-%d-%d", DefaultPrefix, os.Getpid(), seq.Add(1))
	gen, sw, sink := base+"-gen", base+"-dut", base+"-sink"
	for _, ns := range []string{gen, sw, sink} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			b.Fatalf("ip netns add %s: %v: %s", ns, err, out)
		}
		b.Cleanup(func() {
			killNetnsProcs(ns)
			exec.Command("ip", "netns", "del", ns).Run()
		})
	}
	const (
		genMAC  = "02:6d:72:62:00:01"
		s0MAC   = "02:6d:72:62:00:02"
		s1MAC   = "02:6d:72:62:00:03"
		sinkMAC = "02:6d:72:62:00:04"
	)
	script := strings.Join([]string{
		fmt.Sprintf("link add name g0 netns %s address %s mtu 9000 type veth peer name s0 netns %s address %s mtu 9000", gen, genMAC, sw, s0MAC),
		fmt.Sprintf("link add name s1 netns %s address %s mtu 9000 type veth peer name k1 netns %s address %s mtu 9000", sw, s1MAC, sink, sinkMAC),
	}, "\n")
	if out, err := ipBatch("", script); err != nil {
		b.Fatalf("links: %v: %s", err, out)
	}
	for ns, devs := range map[string]string{gen: "g0", sw: "s0 s1", sink: "k1"} {
		for _, dev := range strings.Fields(devs) {
			if out, err := ipBatch(ns, "link set "+dev+" up"); err != nil {
				b.Fatalf("%s up: %v: %s", dev, err, out)
			}
		}
	}
	if err := sysctls(sink, "net.ipv6.conf.all.disable_ipv6=1"); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	switch dut {
	case "mrc":
		if err := sysctls(sw, "net.ipv6.conf.all.disable_ipv6=1"); err != nil {
			b.Fatal(err)
		}
		table := filepath.Join(dir, "dut.table")
		conf := fmt.Sprintf("switch name dut mode srv6 addr fcbb:bb00:100::\nport s0 peer %s\nport s1 peer %s\nroute fcbb:bb00:200::/48 s1\n", genMAC, sinkMAC)
		if err := os.WriteFile(table, []byte(conf), 0o644); err != nil {
			b.Fatal(err)
		}
		args := append(pinTo("0"), mrcBin, "switch", "--table", table, "--json", filepath.Join(dir, "dut.json"))
		cmd := exec.Command("ip", append([]string{"netns", "exec", sw}, args...)...)
		log, err := os.Create(filepath.Join(dir, "dut.log"))
		if err != nil {
			b.Fatal(err)
		}
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Signal(unix.SIGTERM); cmd.Wait() })
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			out, _ := os.ReadFile(log.Name())
			if strings.Contains(string(out), "forwarding on") {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("mrc switch did not start: %s", out)
			}
		}
	case "kernel":
		if err := sysctls(sw, "net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"); err != nil {
			b.Fatal(err)
		}
		script := strings.Join([]string{
			"addr add fd00:99:1::1/64 dev s1 nodad",
			fmt.Sprintf("neigh replace fd00:99:1::2 lladdr %s dev s1 nud permanent", sinkMAC),
			"route add fcbb:bb00:200::/48 via fd00:99:1::2 dev s1",
		}, "\n")
		if out, err := ipBatch(sw, script); err != nil {
			b.Fatalf("router: %v: %s", err, out)
		}
	}

	frame := benchFrame(payload)
	var link *swnet.PacketLink
	if err := InNetns(gen, func() error {
		mac, _ := net.ParseMAC(s0MAC)
		var err error
		link, err = swnet.OpenPacketLink("g0", mac)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer link.Close()
	batch := make([][]byte, 64)
	for i := range batch {
		batch[i] = frame
	}
	before := rxPackets(b, sink, "k1")
	if runtime.NumCPU() > 1 {
		// Pin this thread, and keep it locked: it ends with the
		// benchmark's goroutine instead of serving others on CPU 1.
		runtime.LockOSThread()
		var cpu1 unix.CPUSet
		cpu1.Set(1)
		unix.SchedSetaffinity(0, &cpu1)
	}
	start := time.Now()
	sent := 0
	for time.Since(start) < d {
		n, _ := link.Send(batch)
		sent += n
	}
	time.Sleep(50 * time.Millisecond) // what the DUT still holds (at most its socket buffer: under 1 % of a run)
	got := rxPackets(b, sink, "k1") - before
	secs := d.Seconds()
	return float64(got) / secs, float64(got) * float64(len(frame)) * 8 / secs / 1e9, float64(sent) / secs
}

// benchFrame returns an IPv6/UDP packet with a payload of n bytes to
// fcbb:bb00:200::1, which the DUT routes out of s1.
func benchFrame(n int) []byte {
	p := make([]byte, wire.IPv6Len+wire.UDPLen+n)
	ip := wire.IPv6{PayloadLen: uint16(wire.UDPLen + n), NextHeader: wire.ProtoUDP, HopLimit: 64,
		Src: [16]byte{0xfd, 0, 0, 0x99, 15: 1}, Dst: [16]byte{0xfc, 0xbb, 0xbb, 0, 2, 0, 15: 1}}
	ip.Append(p[:0])
	u := wire.UDP{SrcPort: 0xc000, DstPort: wire.UDPPortRoCEv2, Length: uint16(wire.UDPLen + n)}
	u.Checksum = wire.UDPChecksum(ip.Src, ip.Dst, p[wire.IPv6Len:])
	u.Append(p[wire.IPv6Len:wire.IPv6Len])
	return p
}

// rxPackets returns the packets interface dev of namespace ns received.
func rxPackets(b *testing.B, ns, dev string) uint64 {
	out, err := exec.Command("ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev).Output()
	if err != nil {
		b.Fatalf("ip -s link: %v", err)
	}
	var links []struct {
		Stats struct {
			RX struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		b.Fatalf("ip -s -j link: %v: %s", err, out)
	}
	return links[0].Stats.RX.Packets
}

// pinTo returns the taskset prefix that pins a command to cpu, or nothing
// where taskset or a second CPU is missing.
func pinTo(cpu string) []string {
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		return nil
	}
	return []string{"taskset", "-c", cpu}
}
