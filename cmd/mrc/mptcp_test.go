package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMPTCPCaptureDecodes: a --pcap capture of the mptcp transport
// decodes in Wireshark as MPTCP: every packet a TCP segment with an MPTCP
// DSS option (subtype 2) whose data ACK is present, the data segments
// with their mapping, and the ACKs' TCP checksums good. Skipped without
// tshark.
func TestMPTCPCaptureDecodes(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("MRC_REQUIRE_TSHARK") != "" {
			t.Fatal("tshark not found, and MRC_REQUIRE_TSHARK is set")
		}
		t.Skip("tshark is not installed; skipping the MPTCP capture test")
	}
	dir := t.TempDir()
	scen, capPath := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "m.pcapng")
	yaml := "topology: {hosts: 4, t0_down: 2, t0_up: 2}\nworkload: {kind: permutation, size: 64KiB}\ntransports: [mptcp]\n"
	if err := os.WriteFile(scen, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMRC(t, "sim", scen, "--pcap", capPath); code != 0 {
		t.Fatalf("mrc sim: exit %d: %s", code, stderr)
	}
	cmd := exec.Command(tshark, "-n", "-r", capPath, "-o", "tcp.check_checksum:TRUE", "-T", "fields", "-E", "separator=/t",
		"-e", "tcp.options.mptcp.subtype", "-e", "tcp.options.mptcp.dataackpresent.flag", "-e", "tcp.options.mptcp.dseqnpresent.flag",
		"-e", "tcp.len", "-e", "tcp.checksum.status")
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	data := 0
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 5 || f[0] != "2" || f[1] != "1" {
			t.Fatalf("packet %d: subtype, data ACK, mapping, length, checksum status = %q", i+1, f)
		}
		// A data segment's payload is not captured, so Wireshark cannot
		// verify its checksum (2); an ACK's it can (1: good).
		if want := map[bool]string{true: "2", false: "1"}[f[3] != "0"]; f[4] != want {
			t.Fatalf("packet %d: checksum status %s, want %s (%q)", i+1, f[4], want, f)
		}
		if mapped := f[2] == "1"; mapped != (f[3] != "0") {
			t.Fatalf("packet %d: mapping flag %s with %s payload bytes", i+1, f[2], f[3])
		}
		if f[3] != "0" {
			data++
		}
	}
	if len(lines) < 10 || data < 4 {
		t.Fatalf("%d packets, %d with data: the capture is too small to show anything", len(lines), data)
	}
	t.Logf("%d packets, %d with data, all MPTCP DSS with good checksums", len(lines), data)
}
