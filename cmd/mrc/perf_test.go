package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"net"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
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
	} `json:"server"`
}

func perfClientJSON(t *testing.T, addr string, args ...string) perfResult {
	t.Helper()
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
	r := perfClientJSON(t, addr, "--bytes", "48M", "--planes", "2", "--evs", "8", "--chunk", "256K")
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
	r := perfClientJSON(t, addr, "--bytes", "32M", "--planes", "2", "--drop", "0.01", "--chunk", "256K",
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

func TestPerfDuration(t *testing.T) {
	addr, _, wait := startPerfServer(t)
	r := perfClientJSON(t, addr, "--duration", "300ms", "--chunk", "256K")
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
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--bytes", "1M", "--duration", "1s"}, "exclusive"},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--mtu", "100"}, "MTU"},
	} {
		line := assertUsageError(t, tc.args...)
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
	stdout, stderr, code := runMRC(t, "perf", "client", "--addr", addr, "--bytes", "1M")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no perf server") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestPerfPeerVanishes freezes the server mid-transfer: the client's QP
// must give up after its retry budget and the client exit 1 with one clear
// line.
func TestPerfPeerVanishes(t *testing.T) {
	addr, cmd, _ := startPerfServer(t)
	go func() {
		time.Sleep(1500 * time.Millisecond) // well into the transfer
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

// BenchmarkPerfLoopback is the loopback benchmark of docs/udpio.md: one
// `mrc perf` connection with the server pinned to CPU 0 and the client to
// CPU 1 (when taskset exists), against the kernel-TCP baseline (`--tcp`:
// the same chunks and byte checks over one TCP connection) measured in
// the same run, alternating. It reports the medians of -perfruns runs of
// each. Run it with
//
//	go test ./cmd/mrc -run '^$' -bench PerfLoopback -benchtime 1x
func BenchmarkPerfLoopback(b *testing.B) {
	pin := func(cpu string, args ...string) []string {
		if _, err := exec.LookPath("taskset"); err != nil {
			return args
		}
		return append([]string{"taskset", "-c", cpu}, args...)
	}
	run := func(extra ...string) float64 {
		srvArgs := pin("0", mrcBin, "perf", "server", "--addr", "[::1]:0", "--once")
		srv := exec.Command(srvArgs[0], srvArgs[1:]...)
		out, _ := srv.StdoutPipe()
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		defer srv.Wait()
		defer srv.Process.Kill()
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		addr := strings.TrimSpace(strings.TrimPrefix(line, "mrc perf server: listening on "))
		cliArgs := pin("1", append([]string{mrcBin, "perf", "client", "--addr", addr, "--json", "-"}, extra...)...)
		stdout, err := exec.Command(cliArgs[0], cliArgs[1:]...).Output()
		if err != nil {
			b.Fatalf("%v: %v", cliArgs, err)
		}
		var r perfResult
		if err := json.Unmarshal(stdout, &r); err != nil || !r.Verified {
			b.Fatalf("%v: %v %+v", cliArgs, err, r)
		}
		return r.Gbps
	}
	median := func(v []float64) float64 {
		sort.Float64s(v)
		return v[len(v)/2]
	}
	cases := []struct {
		name string
		args []string
	}{
		{"mrc", []string{"--bytes", *perfBytes}},
		{"mrc-mtu8k", []string{"--bytes", *perfBytes, "--mtu", "8192"}},
		{"mrc-mtu8k-skipicrc", []string{"--bytes", *perfBytes, "--mtu", "8192", "--skip-icrc"}},
		{"tcp", []string{"--bytes", *perfBytes, "--tcp"}},
	}
	res := make([][]float64, len(cases))
	for b.Loop() {
		for range *perfRuns {
			for i, c := range cases {
				res[i] = append(res[i], run(c.args...))
			}
		}
	}
	for i, c := range cases {
		b.Logf("%s: %.2f Gbit/s median of %v", c.name, median(append([]float64(nil), res[i]...)), res[i])
		b.ReportMetric(median(res[i]), c.name+"-Gbit/s")
	}
}

var (
	perfRuns  = flag.Int("perfruns", 5, "runs of each case in BenchmarkPerfLoopback")
	perfBytes = flag.String("perfbytes", "4G", "bytes per run in BenchmarkPerfLoopback")
)
