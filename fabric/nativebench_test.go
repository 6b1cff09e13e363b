package fabric

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	nativeRuns  = flag.Int("nativeruns", 3, "rounds of BenchmarkNativeFabric")
	nativeBytes = flag.String("nativebytes", "1GiB", "bytes per run of BenchmarkNativeFabric")
)

// BenchmarkNativeFabric measures `mrc perf --native` (SRv6
// encapsulation, the core's packets on the wire as they are) from host 0
// to host 1 across the emulated fabric of Linux SRv6 routers (two planes,
// two T1s each), every byte verified. The paired baseline, in the same
// round, is kernel TCP (`mrc perf --tcp`: the same chunks and checks)
// between the hosts' plane-0 ports through the same routers, put into
// SRv6 by the hosts' kernels (a seg6 encap.red route over T1 0, decapsulated
// by the same End.DT6). Cases: native (4 KiB packets), native-mtu8k (8
// KiB, which the links' 9000-byte MTU carries) and tcp. Run it as root
// with
//
//	go test ./fabric -run '^$' -bench NativeFabric -benchtime 1x
func BenchmarkNativeFabric(b *testing.B) {
	f := build(b, Config{})
	for _, r := range []struct {
		from, to int
	}{{0, 1}, {1, 0}} {
		route := fmt.Sprintf("route add %v/128 encap seg6 mode encap.red segs %v dev p0", f.PortAddrs(r.to)[0], f.Path(r.from, r.to, 0, 0))
		if out, err := ipBatch(f.Node(HostName(r.from)).NS, route); err != nil {
			b.Fatalf("%s: %v: %s", route, err, out)
		}
	}
	cases := []struct {
		name string
		run  func() float64
	}{
		{"native", func() float64 { return nativeRun(b, f, "--bytes", *nativeBytes) }},
		{"native-mtu8k", func() float64 { return nativeRun(b, f, "--bytes", *nativeBytes, "--mtu", "8192") }},
		{"tcp", func() float64 { return tcpRun(b, f) }},
	}
	res := make([][]float64, len(cases))
	for b.Loop() {
		for range *nativeRuns {
			for i, c := range cases {
				res[i] = append(res[i], c.run())
			}
		}
	}
	for i, c := range cases {
		b.Logf("%s: median %.2f Gbit/s of %.2f", c.name, medianOf(res[i]), res[i])
		b.ReportMetric(medianOf(res[i]), c.name+"-Gbit/s")
	}
	var ratio []float64
	for i := range res[0] {
		ratio = append(ratio, res[0][i]/res[2][i])
	}
	b.ReportMetric(medianOf(ratio), "native/tcp")
}

// nativeRun runs one native transfer and returns its rate; the transfer
// must verify.
func nativeRun(b *testing.B, f *Fabric, args ...string) float64 {
	r := perf(b, f, nil, append(args, "--retries", retries)...)
	if !r.Verified || r.SendErrors != "" {
		b.Fatalf("native: verified %v, send errors %q", r.Verified, r.SendErrors)
	}
	return r.Gbps
}

// tcpRun runs one kernel-TCP transfer from host 0 to host 1's plane-0
// port through the fabric and returns its rate.
func tcpRun(b *testing.B, f *Fabric) float64 {
	addr := fmt.Sprintf("[%v]:5202", f.PortAddrs(1)[0])
	srv, err := f.Start(HostName(1), mrcBin, "perf", "server", "--addr", addr, "--once")
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.WaitFor("listening on", 10*time.Second); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(f.Dir(), "tcp.json")
	cli, err := f.Start(HostName(0), mrcBin, "perf", "client", "--addr", addr, "--tcp", "--bytes", *nativeBytes, "--json", out)
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-cli.Done():
	case <-time.After(2 * time.Minute):
		b.Fatalf("tcp client did not finish: %s", cli.Output())
	}
	<-srv.Done()
	var r perfResult
	data, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(data, &r) != nil || !r.Verified {
		b.Fatalf("tcp: %v %s %s", err, data, strings.TrimSpace(cli.Output()))
	}
	return r.Gbps
}
