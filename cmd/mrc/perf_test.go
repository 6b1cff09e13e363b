package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/perf"
	"github.com/openmrc/mrc/wire"
)

// startPerfServer runs `mrc perf server --once` on an ephemeral loopback
// port in the background and returns its address and a function that
// waits for it to exit and returns its output and exit status.
func startPerfServer(t *testing.T, extra ...string) (addr string, cmd *exec.Cmd, wait func() (string, int)) {
	t.Helper()
	args := append([]string{"perf", "server", "--addr", "[::1]:0", "--once"}, extra...)
	cmd = exec.Command(mrcBin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("perf server: %v (stderr %q)", err, stderr.String())
	}
	const prefix = "mrc perf server: listening on "
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("perf server said %q", line)
	}
	addr = strings.TrimSpace(strings.TrimPrefix(line, prefix))
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		bufio.NewReader(r).WriteTo(&b)
		rest <- b.String()
	}()
	return addr, cmd, func() (string, int) {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(runTimeout):
			cmd.Process.Kill()
			t.Fatalf("perf server did not exit")
		}
		return <-rest + stderr.String(), cmd.ProcessState.ExitCode()
	}
}

// perfResult is the part of the client's JSON the tests check.
type perfResult struct {
	Gbps        float64 `json:"gbps"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	StartUnix   int64   `json:"start_unix_ns"`
	Verified    bool    `json:"verified"`
	Retransmits uint64  `json:"retransmits"`
	Trims       uint64  `json:"trims"`
	NACKs       uint64  `json:"nacks"`
	PerPlane    []struct {
		Plane   int    `json:"plane"`
		Packets uint64 `json:"packets"`
		EVs     int    `json:"evs"`
	} `json:"per_plane"`
	PerEV []struct {
		EV      string `json:"ev"`
		Plane   int    `json:"plane"`
		Packets uint64 `json:"packets"`
	} `json:"per_ev"`
	InjectedDrops uint64 `json:"injected_drops"`
	Server        struct {
		Verified bool  `json:"verified"`
		Chunks   int64 `json:"chunks"`
		Injected int64 `json:"injected_drops"`
		// SACKs and NACKs the server's control queue had no room for.
		ControlDropped uint64 `json:"control_dropped"`
	} `json:"server"`
}

// patientRetries is the retry budget of the loopback transfer tests: 7
// retries at the 64 ms timeout, then 13 doubling ones. Under `go test
// ./...` the namespace fabric's tests load both cores for half a minute,
// and a transfer with injected drops can make no progress for longer than
// the default budget (about 1.4 s); these tests are about bytes, and
// TestPerfPeerVanishes covers giving up.
const patientRetries = "20"

func perfClientJSON(t *testing.T, addr string, args ...string) perfResult {
	t.Helper()
	args = append([]string{"--retries", patientRetries}, args...)
	stdout, stderr, code := runMRC(t, append([]string{"perf", "client", "--addr", addr, "--json", "-"}, args...)...)
	if code != 0 {
		t.Fatalf("perf client: exit %d\nstderr: %s\nstdout: %s", code, stderr, stdout)
	}
	var r perfResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("perf client JSON: %v\n%s", err, stdout)
	}
	return r
}

func TestPerfLoopback(t *testing.T) {
	addr, _, wait := startPerfServer(t)
	r := perfClientJSON(t, addr, "--bytes", "48MiB", "--planes", "2", "--evs", "8", "--chunk", "256KiB")
	if !r.Verified || !r.Server.Verified || r.Bytes != 48<<20 || r.Gbps <= 0 {
		t.Errorf("result %+v", r)
	}
	if len(r.PerPlane) != 2 || r.PerPlane[0].Packets == 0 || r.PerPlane[1].Packets == 0 {
		t.Errorf("per-plane usage %+v", r.PerPlane)
	}
	if len(r.PerEV) < 8 {
		t.Errorf("%d EVs carried data, want at least 8", len(r.PerEV))
	}
	out, code := wait()
	if code != 0 || !strings.Contains(out, "verified") {
		t.Errorf("server: exit %d, output %q", code, out)
	}
}

func TestPerfLoopbackWithDrops(t *testing.T) {
	addr, _, wait := startPerfServer(t)
	r := perfClientJSON(t, addr, "--bytes", "32MiB", "--planes", "2", "--drop", "0.01", "--chunk", "256KiB",
		"--flow-labels", "--source-ports", "4")
	if !r.Verified || r.Bytes != 32<<20 {
		t.Errorf("result %+v", r)
	}
	if r.InjectedDrops+uint64(r.Server.Injected) == 0 || r.Retransmits == 0 {
		t.Errorf("drops injected %d+%d, retransmits %d: want some of each", r.InjectedDrops, r.Server.Injected, r.Retransmits)
	}
	if _, code := wait(); code != 0 {
		t.Errorf("server exit %d", code)
	}
}

// TestPerfRandomLoss is issue 9's bug 4 through the binary: `--bytes
// 64MiB --drop 0.01` ended 2 of 7 transfers ("the QP gave up after 9
// retries"). Each run must complete, and the server must not drop a SACK:
// it dropped hundreds per run, which is what started the stall. (The retry
// budget is the patient one: under `go test ./...` the machine itself
// stalls the processes; TestRandomLossNeverEndsATransfer in the module
// root checks the default budget in virtual time.)
func TestPerfRandomLoss(t *testing.T) {
	for seed := range 3 {
		addr, _, wait := startPerfServer(t)
		stdout, stderr, code := runMRC(t, "perf", "client", "--addr", addr, "--bytes", "64MiB", "--drop", "0.01",
			"--seed", fmt.Sprint(seed+1), "--retries", patientRetries, "--json", "-")
		var r perfResult
		if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || !r.Verified {
			t.Fatalf("seed %d: exit %d, stderr %q", seed+1, code, stderr)
		}
		if r.Server.ControlDropped != 0 {
			t.Errorf("seed %d: the server dropped %d SACKs and NACKs", seed+1, r.Server.ControlDropped)
		}
		wait()
	}
}

func TestPerfDuration(t *testing.T) {
	addr, _, wait := startPerfServer(t)
	r := perfClientJSON(t, addr, "--duration", "300ms", "--chunk", "256KiB")
	if !r.Verified || r.Bytes == 0 || r.Bytes%(256<<10) != 0 {
		t.Errorf("result %+v", r)
	}
	wait()
}

func TestPerfUsageErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	used := ln.Addr().String()
	if os.Geteuid() != 0 {
		// Without root the native checks fail on privileges first.
		t.Log("not root: the native-framing usage errors below mention CAP_NET_RAW instead")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perf"}, "server"},
		{[]string{"perf", "bogus"}, "unknown perf mode"},
		{[]string{"perf", "server"}, "--addr is required"},
		{[]string{"perf", "server", "--addr", "not-an-address"}, "want IP:PORT"},
		{[]string{"perf", "server", "--addr", used}, "address already in use"},
		{[]string{"perf", "server", "--addr", "[2001:db8::1]:5201"}, "assign requested address"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--bytes", "lots"}, "bad size"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--planes", "17"}, "planes"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--bytes", "1MiB", "--duration", "1s"}, "exclusive"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--mtu", "100"}, "MTU"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--native"}, "--native needs --ports"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--ports", "fd00::1"}, "--ports needs --native"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--native", "--ports", "not-an-address"}, "is not an IPv6 address"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--native", "--ports", "2001:db8::7"}, "is not on this host"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--native", "--ports", "::1", "--skip-icrc"}, "--skip-icrc does not apply"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--native", "--ports", "::1", "--planes", "2"}, "--planes 2 but 1 --ports"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--encap", "mpls"}, "encapsulation \"mpls\""},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--paths", "/nonexistent/paths"}, "--paths"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--pcap-filter", "op=bogus"}, "--pcap-filter"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--pcap-filter", "op=data"}, "need --pcap"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--trace-filter", "kind=sent"}, "--trace-filter needs --trace"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--metrics", used}, "address already in use"},
		{[]string{"perf", "server", "--addr", "[::1]:0", "--metrics", used}, "address already in use"},
		{[]string{"perf", "server", "--addr", "[::1]:0", "--native"}, "--native needs --ports"},
		{[]string{"perf", "server", "--addr", "[::1]:0", "--max-sessions", "0"}, "--max-sessions 0"},
		{[]string{"perf", "server", "--addr", "[::1]:0", "--session-memory", "1K"}, "--session-memory"},
		{[]string{"perf", "server", "--addr", "[::1]:0", "--session-memory", "lots"}, "session-memory"},
	} {
		line := assertUsageError(t, tc.args...)
		if os.Geteuid() != 0 && strings.Contains(line, "CAP_NET_RAW") {
			continue
		}
		if !strings.Contains(line, tc.want) {
			t.Errorf("mrc %s: %q does not mention %q", strings.Join(tc.args, " "), line, tc.want)
		}
	}
}

func TestPerfNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stdout, stderr, code := runMRC(t, "perf", "client", "--addr", addr, "--bytes", "1MiB")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no perf server") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestPerfPeerVanishes freezes the server mid-transfer: the client's QP
// must give up after its retry budget and the client exit 1 with one clear
// line.
func TestPerfPeerVanishes(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no loopback IPv6: %v", err)
	}
	metrics := ln.Addr().String()
	ln.Close()
	addr, cmd, _ := startPerfServer(t, "--metrics", metrics)
	go func() {
		// Freeze the server once data has reached it, however slowly the
		// machine starts the client: before the transfer, the client's
		// handshake would time out instead.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if receivedPayload(metrics) > 0 {
				break
			}
		}
		cmd.Process.Signal(syscall.SIGSTOP)
	}()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT) })
	start := time.Now()
	stdout, stderr, code := runMRC(t, "perf", "client", "--addr", addr, "--duration", "60s",
		"--retry-timeout", "20ms", "--retries", "5")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "stopped responding") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the client took %v to give up", d)
	}
}

// receivedPayload returns the payload bytes a perf server serving Prometheus
// metrics on addr has received, or 0 when it cannot tell yet.
func receivedPayload(addr string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var total float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "mrc_qp_payload_bytes_received_total") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				total += v
			}
		}
	}
	return total
}

// BenchmarkPerfLoopback is the loopback benchmark of docs/udpio.md: `mrc
// perf` against the kernel-TCP baseline (`--tcp`: the same chunks and
// byte checks over one TCP connection), in rounds that run every case
// once, back to back, so each MRC figure has a TCP figure taken moments
// apart. Cases (-perfcases):
//
//   - mrc, tcp: one connection, the server pinned to CPU 0 and the client
//     to CPU 1 (when taskset exists);
//   - mrc-x2, tcp-x2: two connections at once, crosswise (server A and
//     client B on CPU 0, client A and server B on CPU 1); the figure is
//     both connections' bytes over the time from the first start to the
//     last end;
//   - mrc-mtu8k, mrc-mtu8k-skipicrc: one connection with 8 KiB packets,
//     and without the receivers' checksum and ICRC checks.
//
// Every run must verify every byte, or the benchmark fails. It reports
// the median of -perfruns rounds of each case, and as paired ratios the
// median over rounds of mrc/tcp and of x2/x1 (a two-connection figure
// over its round's one-connection figure). Run it with
//
//	go test ./cmd/mrc -run '^$' -bench PerfLoopback -benchtime 1x
func BenchmarkPerfLoopback(b *testing.B) {
	pin := func(cpu string, args ...string) []string {
		if _, err := exec.LookPath("taskset"); err != nil {
			return args
		}
		return append([]string{"taskset", "-c", cpu}, args...)
	}
	// start runs a server pinned to srvCPU and returns its address.
	start := func(srvCPU string) string {
		srvArgs := pin(srvCPU, mrcBin, "perf", "server", "--addr", "[::1]:0", "--once")
		srv := exec.Command(srvArgs[0], srvArgs[1:]...)
		out, _ := srv.StdoutPipe()
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(strings.TrimPrefix(line, "mrc perf server: listening on "))
	}
	// client runs a client pinned to cpu against addr.
	client := func(cpu, addr string, extra []string) perfResult {
		cliArgs := pin(cpu, append([]string{mrcBin, "perf", "client", "--addr", addr, "--json", "-"}, extra...)...)
		stdout, err := exec.Command(cliArgs[0], cliArgs[1:]...).Output()
		if err != nil {
			b.Fatalf("%v: %v", cliArgs, err)
		}
		var r perfResult
		if err := json.Unmarshal(stdout, &r); err != nil || !r.Verified || r.StartUnix == 0 {
			b.Fatalf("%v: %v %+v", cliArgs, err, r)
		}
		return r
	}
	one := func(extra []string) float64 {
		return client("1", start("0"), extra).Gbps
	}
	two := func(extra []string) float64 {
		addrs := [2]string{start("0"), start("1")}
		var rs [2]perfResult
		done := make(chan int)
		for i, cpu := range []string{"1", "0"} {
			go func() { rs[i] = client(cpu, addrs[i], extra); done <- i }()
		}
		<-done
		<-done
		first := min(rs[0].StartUnix, rs[1].StartUnix)
		last := max(float64(rs[0].StartUnix)+rs[0].Seconds*1e9, float64(rs[1].StartUnix)+rs[1].Seconds*1e9)
		return float64(rs[0].Bytes+rs[1].Bytes) * 8 / (last - float64(first))
	}
	bytes := []string{"--bytes", *perfBytes}
	cases := map[string]func() float64{
		"mrc":                func() float64 { return one(bytes) },
		"tcp":                func() float64 { return one(append(bytes, "--tcp")) },
		"mrc-x2":             func() float64 { return two(bytes) },
		"tcp-x2":             func() float64 { return two(append(bytes, "--tcp")) },
		"mrc-mtu8k":          func() float64 { return one(append(bytes, "--mtu", "8192")) },
		"mrc-mtu8k-skipicrc": func() float64 { return one(append(bytes, "--mtu", "8192", "--skip-icrc")) },
	}
	names := strings.Split(*perfCases, ",")
	for _, n := range names {
		if cases[n] == nil {
			b.Fatalf("-perfcases: no case %q", n)
		}
	}
	res := map[string][]float64{}
	for b.Loop() {
		for range *perfRuns {
			for _, n := range names {
				res[n] = append(res[n], cases[n]())
			}
		}
	}
	median := func(v []float64) float64 {
		v = append([]float64(nil), v...)
		sort.Float64s(v)
		return v[len(v)/2]
	}
	// ratio reports the median over rounds of a's figure over b's.
	ratio := func(a, b2, metric string) {
		if res[a] == nil || res[b2] == nil {
			return
		}
		var r []float64
		for i := range res[a] {
			r = append(r, res[a][i]/res[b2][i])
		}
		b.Logf("%s: median %.2f of %.2f", metric, median(r), r)
		b.ReportMetric(median(r), metric)
	}
	for _, n := range names {
		b.Logf("%s: %.2f Gbit/s median of %.2f", n, median(res[n]), res[n])
		b.ReportMetric(median(res[n]), n+"-Gbit/s")
	}
	ratio("mrc", "tcp", "mrc/tcp")
	ratio("mrc-x2", "mrc", "mrc-x2/x1")
	ratio("tcp-x2", "tcp", "tcp-x2/x1")
}

var (
	perfRuns  = flag.Int("perfruns", 5, "runs of each case in BenchmarkPerfLoopback")
	perfBytes = flag.String("perfbytes", "4GiB", "bytes per run in BenchmarkPerfLoopback")
	perfCases = flag.String("perfcases", "mrc,tcp,mrc-x2,tcp-x2", "BenchmarkPerfLoopback's cases, comma-separated (also mrc-mtu8k, mrc-mtu8k-skipicrc)")
)

// freePort returns a loopback TCP address nobody listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape fetches a metrics page, retrying until it has want.
func scrape(t *testing.T, addr, want string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	var body string
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, want) {
				return body
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("metrics at %s never had %q; last:\n%s", addr, want, body)
	return ""
}

// TestPerfPcapMetrics runs a transfer with SRv6 encapsulation (inside the
// UDP overlay), captures both sides with --pcap and scrapes both sides'
// --metrics during the run.
func TestPerfPcapMetrics(t *testing.T) {
	dir := t.TempDir()
	srvPcap, cliPcap := filepath.Join(dir, "server.pcapng"), filepath.Join(dir, "client.pcapng")
	srvMetrics, cliMetrics := freePort(t), freePort(t)
	addr, _, wait := startPerfServer(t, "--pcap", srvPcap, "--metrics", srvMetrics, "--pcap-snaplen", "256")
	type res struct {
		r    perfResult
		pcap uint64
		err  error
	}
	done := make(chan res, 1)
	go func() {
		stdout, stderr, code := runMRC(t, "perf", "client", "--addr", addr, "--json", "-", "--retries", patientRetries, "--duration", "1500ms", "--planes", "2",
			"--encap", "srv6", "--chunk", "256KiB", "--pcap", cliPcap, "--pcap-filter", "plane=0,1", "--metrics", cliMetrics)
		var r res
		if code != 0 {
			r.err = fmt.Errorf("exit %d: %s", code, stderr)
		} else if err := json.Unmarshal([]byte(stdout), &r.r); err != nil {
			r.err = err
		} else {
			var x struct {
				Pcap uint64 `json:"pcap_packets"`
			}
			json.Unmarshal([]byte(stdout), &x)
			r.pcap = x.Pcap
		}
		done <- r
	}()
	body := scrape(t, cliMetrics, `mrc_qp_state{host="client"`, 10*time.Second)
	for _, want := range []string{`mrc_qp_state{host="client",qpn=`, `mrc_port_packets_total{node="client",port="1",plane="1",dir="tx"}`, `mrc_endpoint_drops_total{host="client"`} {
		if !strings.Contains(body, want) {
			t.Errorf("client metrics lack %q", want)
		}
	}
	scrape(t, srvMetrics, `mrc_qp_data_packets_received_total{host="server"`, 10*time.Second)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.r.Verified || r.pcap == 0 {
		t.Errorf("verified %v, %d packets captured", r.r.Verified, r.pcap)
	}
	out, code := wait()
	if code != 0 || !strings.Contains(out, "packets captured") {
		t.Errorf("server: exit %d: %s", code, out)
	}
	for _, file := range []string{cliPcap, srvPcap} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := pcap.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n, srv6, dirs := 0, 0, map[pcap.Direction]int{}
		for {
			p, err := rd.Next()
			if err != nil {
				break
			}
			n++
			dirs[p.Dir]++
			ip := p.Data[pcap.EthernetLen:]
			if ip[6] == wire.ProtoIPv6 && ip[24] == 0xfc && ip[25] == 0xbb {
				srv6++
			}
		}
		f.Close()
		if file == cliPcap && uint64(n) != r.pcap {
			t.Errorf("%s: %d packets, the client reported %d", file, n, r.pcap)
		}
		if n == 0 || srv6 != n || dirs[pcap.DirInbound] == 0 || dirs[pcap.DirOutbound] == 0 {
			t.Errorf("%s: %d packets, %d SRv6-encapsulated, directions %v", file, n, srv6, dirs)
		}
	}
}

// TestPerfNativeUnprivileged: native framing without CAP_NET_RAW is one
// clear line, exit 2.
func TestPerfNativeUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		line := assertUsageError(t, "perf", "client", "--addr", "[::1]:5201", "--native", "--ports", "::1")
		if !strings.Contains(line, "CAP_NET_RAW") {
			t.Errorf("%q does not mention CAP_NET_RAW", line)
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("skipping: no setpriv to drop root")
	}
	for _, mode := range []string{"client", "server"} {
		cmd := exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", mrcBin, "perf", mode, "--addr", "[::1]:5201", "--native", "--ports", "::1")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 2 || stdout.String() != "" || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "needs CAP_NET_RAW") {
			t.Errorf("perf %s as nobody: exit %d, stdout %q, stderr %q", mode, code, stdout.String(), stderr.String())
		}
	}
}

// startPerfClient runs `mrc perf client` against addr in the background.
func startPerfClient(t *testing.T, addr string, args ...string) (cmd *exec.Cmd, stdout, stderr *strings.Builder) {
	t.Helper()
	cmd = exec.Command(mrcBin, append([]string{"perf", "client", "--addr", addr, "--retries", patientRetries}, args...)...)
	stdout, stderr = &strings.Builder{}, &strings.Builder{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdout, stderr
}

// waitExit waits for cmd, at most a minute, and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%s did not exit", strings.Join(cmd.Args, " "))
	}
	return cmd.ProcessState.ExitCode()
}

// TestPerfInterrupt: Ctrl-C during a transfer prints the statistics so
// far and exits 130 (issue 9).
func TestPerfInterrupt(t *testing.T) {
	addr, _, wait := startPerfServer(t)
	cmd, stdout, stderr := startPerfClient(t, addr, "--duration", "60s", "--chunk", "256KiB")
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, cmd); code != 130 {
		t.Errorf("exit %d, want 130; stderr %q", code, stderr)
	}
	if out := stdout.String(); !strings.HasPrefix(out, "mrc perf: ") || !strings.Contains(out, "interrupted: partial statistics") || !strings.Contains(out, "retransmits") {
		t.Errorf("stdout %q: want the partial statistics", out)
	}
	if e := stderr.String(); strings.Count(e, "\n") != 1 || !strings.HasPrefix(e, "mrc perf: interrupted after ") {
		t.Errorf("stderr %q", e)
	}
	if out, _ := wait(); !strings.Contains(out, "interrupted") {
		t.Errorf("server log %q does not say the client was interrupted", out)
	}
}

// TestPerfServerStopped: a server stopped mid-transfer tells its client,
// which says so instead of reporting a closed connection (issue 9).
func TestPerfServerStopped(t *testing.T) {
	addr, srv, wait := startPerfServer(t)
	cmd, _, stderr := startPerfClient(t, addr, "--duration", "60s", "--chunk", "256KiB")
	time.Sleep(time.Second)
	srv.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, cmd); code != 1 {
		t.Errorf("client exit %d, want 1", code)
	}
	if e := stderr.String(); strings.Count(e, "\n") != 1 || !strings.Contains(e, "the server was stopped") || strings.Contains(e, "closed") || strings.Contains(e, "EOF") {
		t.Errorf("client stderr %q", e)
	}
	if out, code := wait(); code != 0 || !strings.HasSuffix(out, "mrc perf server: stopped\n") {
		t.Errorf("server: exit %d, output %q", code, out)
	}
}

// TestPerfOneChunk: "1 chunk", not "1 chunks" (issue 9).
func TestPerfOneChunk(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		addr, _, wait := startPerfServer(t)
		args := []string{"perf", "client", "--addr", addr, "--bytes", "1MiB", "--retries", patientRetries}
		if tcp {
			args = append(args, "--tcp")
		}
		stdout, stderr, code := runMRC(t, args...)
		if code != 0 || !strings.Contains(stdout, "verified (1 chunk)\n") || stderr != "" {
			t.Errorf("tcp %v: exit %d, stdout %q, stderr %q", tcp, code, stdout, stderr)
		}
		if out, _ := wait(); !strings.Contains(out, "in 1 chunk, verified") {
			t.Errorf("server said %q", out)
		}
	}
}

// TestPerfProgressText: the once-a-second line a terminal shows, and
// nothing when stderr is not one.
func TestPerfProgressText(t *testing.T) {
	got := progressText(perf.Progress{Bytes: 512 << 20, Total: 1 << 30, Elapsed: 2 * time.Second, Retransmits: 7})
	if want := "mrc perf: 512.0 MiB of 1024.0 MiB (50%) in 2 s, 2.15 Gbit/s, 7 retransmits"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	var b strings.Builder
	p := perfProgress(&b)
	p.show(perf.Progress{Bytes: 1})
	p.clear()
	if b.Len() != 0 {
		t.Errorf("progress on a non-terminal: %q", b.String())
	}
}
