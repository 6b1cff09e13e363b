package pages

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident returns the percentage of b's whole pages that are mapped.
func resident(t *testing.T, b []byte) int {
	page := os.Getpagesize()
	// mincore wants a page-aligned start: skip to the first whole page.
	skip := (page - int(uintptr(unsafe.Pointer(&b[0]))%uintptr(page))) % page
	b = b[skip : skip+(len(b)-skip)/page*page]
	vec := make([]byte, len(b)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return in * 100 / len(vec)
}

// TestMapped: every page of what Mapped returns is resident, where a
// fresh allocation of the same size is not.
func TestMapped(t *testing.T) {
	const n = 16 << 20
	if got := resident(t, make([]byte, n)); got > 50 {
		t.Logf("a fresh make([]byte) is already %d%% resident here: the check below cannot fail on this machine", got)
	}
	if got := resident(t, Mapped(n)); got != 100 {
		t.Errorf("Mapped: %d%% of its pages resident, want 100", got)
	}
}
