package perf

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

func serve(t *testing.T) (netip.AddrPort, func()) {
	t.Helper()
	srv, err := Listen(ServerConfig{Addr: netip.MustParseAddrPort("[::1]:0"), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, false) }()
	return srv.Addr(), func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// TestRun runs the client's modes against one server, in process, and
// checks that nothing is left running afterwards.
func TestRun(t *testing.T) {
	before := runtime.NumGoroutine()
	addr, stop := serve(t)
	for _, c := range []ClientConfig{
		{Bytes: 8 << 20, Planes: 2, Chunk: 256 << 10},
		{Bytes: 8 << 20, Planes: 2, Chunk: 256 << 10, Encap: "srv6"}, // SRv6 packets inside the UDP overlay
		{Bytes: 8<<20 + 12345, Chunk: 1 << 20, MTU: 8192, SkipICRC: true},
		{Bytes: 8 << 20, Phantom: true},
		{Duration: 200 * time.Millisecond, Chunk: 256 << 10},
		{Bytes: 8<<20 + 1, TCP: true},
		{Duration: 100 * time.Millisecond, TCP: true},
	} {
		c.Addr = addr
		c.Retries = 20 // a loaded test machine stalls for longer than the default budget
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		want := c.Bytes
		if want == 0 {
			want = res.Bytes
		}
		if res.Bytes != want || res.Bytes == 0 || res.Gbps <= 0 || res.Verified == c.Phantom {
			t.Errorf("%+v: bytes %d (want %d), %.2f Gbit/s, verified %v", c, res.Bytes, want, res.Gbps, res.Verified)
		}
	}
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left:\n%s", n-before, buf[:runtime.Stack(buf, true)])
	}
}

func TestPatternSlots(t *testing.T) {
	a, b := pattern(7, 4096), pattern(7, 4096)
	if string(a) != string(b) || string(a) == string(pattern(8, 4096)) {
		t.Error("pattern is not a function of its seed")
	}
	// A region slot holds different pattern slots on consecutive rounds.
	const ring = 4
	for k := int64(0); k < 20; k++ {
		s1, d1 := slots(k, ring, 10)
		s2, d2 := slots(k+ring, ring, 10)
		if d1 != d2 || s1 == s2 {
			t.Errorf("chunk %d: src %d dst %d; chunk %d: src %d dst %d", k, s1, d1, k+ring, s2, d2)
		}
	}
}
