package fabric

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mrcBin is the mrc binary TestMain builds, when namespaces are available.
var mrcBin string

var soakFor = flag.Duration("soak", 20*time.Second, "how long TestSoak cuts and restores links (CI: at most 60s)")

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if Available() != nil {
			return m.Run() // the tests skip
		}
		dir, err := os.MkdirTemp("", "mrc-fabric-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		mrcBin = filepath.Join(dir, "mrc")
		gobin, err := exec.LookPath("go")
		if err != nil {
			fmt.Fprintln(os.Stderr, "fabric test: cannot find the go command:", err)
			return 1
		}
		if out, err := exec.Command(gobin, "build", "-o", mrcBin, "../cmd/mrc").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "fabric test: building mrc: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// needNetns skips the test where namespaces cannot be built.
func needNetns(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// build builds a fabric that Cleanup removes, and checks that it did.
func build(t testing.TB, cfg Config) *Fabric {
	t.Helper()
	needNetns(t)
	cfg.Logf = t.Logf
	if cfg.MRCBinary == "" {
		cfg.MRCBinary = mrcBin
	}
	start := time.Now()
	f, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fabric built in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := f.Leftovers(); len(left) > 0 {
			t.Errorf("namespaces left behind: %v", left)
		}
	})
	return f
}

// perfResult is the part of `mrc perf client --json` the tests read.
type perfResult struct {
	Gbps           float64   `json:"gbps"`
	Bytes          int64     `json:"bytes"`
	Verified       bool      `json:"verified"`
	Retransmits    uint64    `json:"retransmits"`
	Trims          uint64    `json:"trims"`
	NACKs          uint64    `json:"nacks"`
	LossTimeouts   uint64    `json:"loss_timeouts"`
	EVsRetired     uint64    `json:"evs_retired"`
	EVsResurrected uint64    `json:"evs_resurrected"`
	ECNEchoes      uint64    `json:"ecn_echoes"`
	MaxStall       float64   `json:"max_stall_s"`
	StallAt        float64   `json:"stall_at_s"`
	StartUnix      int64     `json:"start_unix_ns"`
	SendErrors     string    `json:"send_errors"`
	EVEvents       []evEvent `json:"ev_events"`
	PerPlane       []struct {
		Plane   int    `json:"plane"`
		Packets uint64 `json:"packets"`
	} `json:"per_plane"`
	Server struct {
		Verified        bool   `json:"verified"`
		Error           string `json:"error"`
		CEReceived      uint64 `json:"ce_received"`
		TrimmedReceived uint64 `json:"trimmed_received"`
	} `json:"server"`
}

// perf runs `mrc perf` across the fabric from host 0 to host 1 (native
// framing) with extra client flags, calls during() while it runs, and
// returns the client's result.
func perf(t testing.TB, f *Fabric, during func(), client ...string) perfResult {
	t.Helper()
	enc := f.cfg.Encap
	portList := func(h int) string {
		var s []string
		for _, a := range f.PortAddrs(h) {
			s = append(s, a.String())
		}
		return strings.Join(s, ",")
	}
	paths0, err := f.WritePathTable(0)
	if err != nil {
		t.Fatal(err)
	}
	paths1, err := f.WritePathTable(1)
	if err != nil {
		t.Fatal(err)
	}
	ctl := fmt.Sprintf("[%v]:5201", f.ControlAddr(1))
	srv, err := f.Start(HostName(1), mrcBin, "perf", "server", "--addr", ctl, "--once", "--native", "--ports", portList(1), "--paths", paths1)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitFor("listening on", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.Dir(), "perf.json")
	args := append([]string{"perf", "client", "--addr", ctl, "--native", "--encap", enc, "--ports", portList(0), "--paths", paths0,
		"--json", out}, client...)
	cli, err := f.Start(HostName(0), mrcBin, args...)
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during()
	}
	select {
	case <-cli.Done():
	case <-time.After(2 * time.Minute):
		t.Fatalf("mrc perf client did not finish: %s", cli.Output())
	}
	t.Logf("client: %s", strings.TrimSpace(cli.Output()))
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("mrc perf server did not exit: %s", srv.Output())
	}
	t.Logf("server: %s", strings.TrimSpace(srv.Output()))
	if cli.Err() != nil {
		t.Fatalf("mrc perf client: %v", cli.Err())
	}
	var r perfResult
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("perf JSON: %v", err)
	}
	return r
}

// TestFabricPerf moves data across a plain fabric (Linux routers only)
// in native SRv6 mode, over every path of both planes.
func TestFabricPerf(t *testing.T) {
	f := build(t, Config{})
	r := perf(t, f, nil, "--bytes", "64MiB", "--evs", "8")
	if !r.Verified || r.Bytes != 64<<20 || r.SendErrors != "" {
		t.Fatalf("result: verified %v, %d bytes, send errors %q", r.Verified, r.Bytes, r.SendErrors)
	}
	if len(r.PerPlane) != 2 || r.PerPlane[0].Packets == 0 || r.PerPlane[1].Packets == 0 {
		t.Errorf("per plane %+v", r.PerPlane)
	}
	t.Logf("%.2f Gbit/s, %d retransmits, %d loss timeouts", r.Gbps, r.Retransmits, r.LossTimeouts)
}

// evEvent is one entry of perf's EV timeline.
type evEvent = struct {
	T      float64 `json:"t"`
	Unix   int64   `json:"unix_ns"`
	EV     string  `json:"ev"`
	Plane  int     `json:"plane"`
	Path   int     `json:"path"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Reason string  `json:"reason"`
}

// retries is the client's retry budget in the fabric tests: 7 retries at
// the 64 ms timeout, then 13 doubling ones, more than the tests last. On
// a loaded 2-core machine a transfer through this fabric can make no
// progress for over a second (EVs retired on a flapping path, the rest
// skipped for trims and ECN, the peer descheduled), and the default
// budget (about 1.4 s) would give up; the tests are about bytes and
// paths, and TestPerfPeerVanishes covers giving up.
const retries = "20"

// mrcSwitchPort and mrcSwitchQueue make the `mrc switch` the slowest hop
// of its plane, so its queue builds: ECN marks, then trims.
const (
	mrcSwitchPort  = "rate 500M delay 20us"
	mrcSwitchQueue = "buffer 256KiB header 64KiB trim-at 32KiB ecn 8KiB 24KiB"
)

// switchCounters stops the `mrc switch` at node and reads its counters.
func switchCounters(t *testing.T, f *Fabric, node string) map[string]any {
	t.Helper()
	if err := f.StopSwitch(node); err != nil {
		t.Errorf("stopping mrc switch %s: %v", node, err)
	}
	b, err := os.ReadFile(f.SwitchCountersFile(node))
	if err != nil {
		t.Fatalf("mrc switch %s counters: %v", node, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("mrc switch %s counters: %v", node, err)
	}
	return m
}

// TestFabricFailover is the fabric test: `mrc perf` in native SRv6
// mode across a two-plane, two-tier fabric of Linux SRv6 routers with one
// `mrc switch` (a T1 of plane 1, trimming and marking ECN). Midway through
// the transfer it cuts the link between T0 p0-0 and T1 p0-0, then
// restores it. The data must arrive byte-exact, the EVs of that path
// (plane 0, path 0) must be retired after the cut and resurrected after
// the restore; the test reports the bypass time.
func TestFabricFailover(t *testing.T) {
	const sw = "t1-p1-0"
	f := build(t, Config{MRC: []string{sw}, MRCPort: mrcSwitchPort, MRCQueue: mrcSwitchQueue})
	// The outage is long enough for the adaptive loss timer (smoothed RTT
	// + 4 deviations, which CPU contention inflates to hundreds of ms) to
	// fire.
	const outage = 2 * time.Second
	var cutAt, restoreStart, restoreAt time.Time
	during := func() {
		time.Sleep(time.Second)
		cutAt = time.Now()
		if err := f.SetLink(T0Name(0, 0), T1Name(0, 0), false); err != nil {
			t.Error(err)
		}
		time.Sleep(outage)
		restoreStart = time.Now()
		if err := f.SetLink(T0Name(0, 0), T1Name(0, 0), true); err != nil {
			t.Error(err)
		}
		restoreAt = time.Now() // with its routes back
	}
	r := perf(t, f, during, "--duration", "4500ms", "--evs", "8", "--retries", retries)
	if !r.Verified || !r.Server.Verified || r.Bytes == 0 {
		t.Fatalf("transfer not verified: %d bytes, verified %v/%v, server error %q", r.Bytes, r.Verified, r.Server.Verified, r.Server.Error)
	}
	cut, restoreFrom, restore := cutAt.UnixNano(), restoreStart.UnixNano(), restoreAt.UnixNano()
	onPath := func(e evEvent) bool { return e.Plane == 0 && e.Path == 0 }
	// The path's EVs at the cut: in service unless their last change
	// before it took them out (spuriously: a late SACK looks like a loss).
	last := map[string]string{}
	var retired, resurrected, early []evEvent
	for _, e := range r.EVEvents {
		if !onPath(e) {
			continue
		}
		switch {
		case e.Unix < cut:
			last[e.EV] = e.To
		case e.To == "ASSUMED_BAD" && e.Unix < restoreFrom:
			retired = append(retired, e)
		case e.From == "ASSUMED_BAD" && e.To == "GOOD" && e.Unix >= restoreFrom:
			resurrected = append(resurrected, e)
		case e.To == "GOOD" && e.Reason == "probes" && e.Unix >= cut+int64(300*time.Millisecond) && e.Unix < restoreFrom:
			early = append(early, e) // a probe got through a cut link?
		}
	}
	inService := len(last) == 0
	for _, st := range last {
		inService = inService || st == "GOOD" || st == "SKIP"
	}
	var bypass time.Duration
	switch {
	case len(retired) > 0:
		bypass = time.Duration(retired[0].Unix - cut)
	case inService:
		t.Fatalf("the EVs of plane 0 path 0 stayed in service while their link was down; EV events: %+v", r.EVEvents)
	default:
		t.Logf("the EVs of plane 0 path 0 were already out of service (spuriously retired) when the link was cut")
	}
	if len(early) > 0 {
		t.Errorf("EVs of the cut path came back while it was down: %+v", early)
	}
	if len(resurrected) == 0 {
		t.Errorf("no EV of plane 0 path 0 was resurrected after the link came back")
	}
	t.Logf("%d bytes at %.2f Gbit/s, verified; %d retransmits, %d trims, %d CE marks received (%d echoed), %d loss timeouts, %d EVs retired / %d resurrected in all",
		r.Bytes, r.Gbps, r.Retransmits, r.Trims, r.Server.CEReceived, r.ECNEchoes, r.LossTimeouts, r.EVsRetired, r.EVsResurrected)
	t.Logf("link t0-p0-0 -- t1-p0-0 cut at +%.3f s: bypass %v (the path's EVs retired, %d retirement events while down); "+
		"restored at +%.3f s: first EV back after %v (%d resurrections); longest wait between completions %.1f ms at +%.3f s",
		float64(cut-r.StartUnix)/1e9, bypass.Round(time.Microsecond), len(retired), float64(restore-r.StartUnix)/1e9,
		resurrectDelay(resurrected, restore), len(resurrected), 1000*r.MaxStall, r.StallAt)
	for _, e := range r.EVEvents {
		if onPath(e) && e.Unix >= cut-int64(50*time.Millisecond) {
			t.Logf("  EV %s (plane %d path %d) %s -> %s (%s) at +%.1f ms from the cut", e.EV, e.Plane, e.Path, e.From, e.To, e.Reason, float64(e.Unix-cut)/1e6)
		}
	}
	m := switchCounters(t, f, sw)
	t.Logf("mrc switch %s: received %v, trimmed %v, ECN marks %v (inner %v), drops %v", sw, m["received"], m["trimmed"], m["ecn_marked"], m["ecn_marked_inner"], m["drops"])
	if m["trimmed"].(float64) == 0 || m["ecn_marked"].(float64) == 0 {
		t.Errorf("the mrc switch neither trimmed nor marked: %v", m)
	}
	if r.Trims == 0 || r.Server.TrimmedReceived == 0 || r.Server.CEReceived == 0 {
		t.Errorf("trimmed headers received %d (NACKed as trims: %d), CE marks received %d: want some of each", r.Server.TrimmedReceived, r.Trims, r.Server.CEReceived)
	}
}

func resurrectDelay(ev []evEvent, restore int64) time.Duration {
	if len(ev) == 0 {
		return -1
	}
	return time.Duration(ev[0].Unix - restore).Round(time.Microsecond)
}

// TestFabricSoak cuts a T0-T1 link and restores the one cut before, every
// second, through every T0-T1 link of the fabric in turn (the `mrc switch`
// ones included), for -soak (default 20 s; 5 s with -short), while `mrc
// perf` moves data across: not a byte may be lost.
func TestFabricSoak(t *testing.T) {
	limit := *soakFor
	if testing.Short() {
		limit = min(limit, 5*time.Second)
	}
	limit = min(limit, 10*time.Minute)
	const sw = "t1-p1-0"
	f := build(t, Config{MRC: []string{sw}, MRCPort: mrcSwitchPort, MRCQueue: mrcSwitchQueue})
	var uplinks []*Link
	for _, l := range f.Links() {
		if strings.HasPrefix(l.A, "t0-") && strings.HasPrefix(l.B, "t1-") {
			uplinks = append(uplinks, l)
		}
	}
	cuts := 0
	during := func() {
		var down *Link
		deadline := time.Now().Add(limit - time.Second)
		for i := 0; time.Now().Before(deadline) && i < 600; i++ {
			time.Sleep(time.Second)
			l := uplinks[i%len(uplinks)]
			if err := f.SetLink(l.A, l.B, false); err != nil {
				t.Error(err)
				return
			}
			cuts++
			if down != nil {
				if err := f.SetLink(down.A, down.B, true); err != nil {
					t.Error(err)
					return
				}
			}
			down = l
		}
		if down != nil {
			if err := f.SetLink(down.A, down.B, true); err != nil {
				t.Error(err)
			}
		}
	}
	r := perf(t, f, during, "--duration", limit.String(), "--evs", "8", "--retries", retries)
	t.Logf("%d link cuts in %v: %d bytes at %.2f Gbit/s, verified %v; %d retransmits, %d trims, %d loss timeouts, %d EVs retired / %d resurrected; longest wait between completions %.1f ms",
		cuts, limit, r.Bytes, r.Gbps, r.Verified, r.Retransmits, r.Trims, r.LossTimeouts, r.EVsRetired, r.EVsResurrected, 1000*r.MaxStall)
	if !r.Verified || !r.Server.Verified || r.Bytes == 0 {
		t.Fatalf("bytes lost: %d bytes, verified %v/%v, server error %q", r.Bytes, r.Verified, r.Server.Verified, r.Server.Error)
	}
	// How many cuts fit in the time depends on how fast this machine runs
	// ip(8); what the soak needs is links cut and restored while data
	// flows, so at least one of each.
	if cuts < 2 {
		t.Errorf("only %d cuts in %v: no link was cut and restored during the transfer", cuts, limit)
	}
	m := switchCounters(t, f, sw)
	t.Logf("mrc switch %s: received %v, trimmed %v, ECN marks %v, drops %v", sw, m["received"], m["trimmed"], m["ecn_marked"], m["drops"])
}

// TestSweep: the namespaces of a run whose process has died are removed
// by the next Build (Sweep); those of live runs are left alone.
func TestSweep(t *testing.T) {
	needNetns(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s-%d-1-h0", DefaultPrefix, dead.Process.Pid)
	live := fmt.Sprintf("%s-%d-999-h0", DefaultPrefix, os.Getpid())
	for _, ns := range []string{stale, live} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	defer exec.Command("ip", "netns", "del", live).Run()
	defer exec.Command("ip", "netns", "del", stale).Run()
	gone, err := Sweep(DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gone) != fmt.Sprint([]string{stale}) {
		t.Errorf("swept %v, want just %s", gone, stale)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, live)); err != nil {
		t.Errorf("a live run's namespace was swept: %v", err)
	}
}
