package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSimProfiles: mrc sim --cpuprofile and --memprofile write pprof
// files (gzip-compressed protocol buffers) beside the usual results, and
// an unwritable profile path is a usage error before anything runs.
func TestSimProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	cm := filepath.Join("..", "..", "scenario", "presets", "htsim", "alltoall_serial_16n.cm")
	stdout, stderr, code := runMRC(t, "sim", "--tm", cm, "--transports", "mrc", "--quiet", "--cpuprofile", cpu, "--memprofile", mem)
	if code != 0 || !bytes.Contains([]byte(stdout), []byte("flows completed")) {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	for _, f := range []string{cpu, mem} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			t.Errorf("%s is not a pprof profile (%d bytes, starting %q)", f, len(data), data[:min(len(data), 8)])
		}
	}
	for _, flag := range []string{"--cpuprofile", "--memprofile"} {
		assertUsageError(t, "sim", "--tm", cm, flag, filepath.Join(dir, "no-such-dir", "x.pprof"))
	}
}
