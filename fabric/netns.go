package fabric

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// netnsDir is where iproute2 keeps named network namespaces.
const netnsDir = "/var/run/netns"

// DefaultPrefix starts the name of every namespace the harness creates:
// prefix-PID-SEQ-NODE. The PID lets Sweep tell a crashed run's leftovers
// from a live run's namespaces.
const DefaultPrefix = "mrcfab"

var (
	availOnce sync.Once
	availErr  error
)

// Available reports why network namespaces cannot be built here, or nil:
// it needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2's ip, veth
// links, and the kernel's SRv6 (seg6local End with the NEXT-C-SID flavor,
// End.DT6). Tests skip with this message.
func Available() error {
	availOnce.Do(func() { availErr = probe() })
	return availErr
}

func probe() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("network namespaces need Linux, not %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN); run the test as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("iproute2's ip is not installed (apt-get install iproute2)")
	}
	name := fmt.Sprintf("%s-%d-probe", DefaultPrefix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("cannot create a network namespace: %v: %s", err, bytes.TrimSpace(out))
	}
	defer exec.Command("ip", "netns", "del", name).Run()
	script := strings.Join([]string{
		"link add name a0 type veth peer name b0",
		"link set a0 up",
		"route add fcbb:bb00:1::/48 encap seg6local action End flavors next-csid lblen 32 nflen 16 dev a0",
		"route add fcbb:bb00:2::/48 encap seg6local action End.DT6 table local dev a0",
	}, "\n")
	if out, err := ipBatch(name, script); err != nil {
		return fmt.Errorf("the kernel or iproute2 lacks veth or SRv6 (seg6local End next-csid, End.DT6): %v: %s", err, out)
	}
	return nil
}

// ipBatch runs ip commands, one per line, in namespace ns ("" for the
// current one), in one process.
func ipBatch(ns, script string) (string, error) {
	args := []string{}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	args = append(args, "-batch", "-")
	cmd := exec.Command("ip", args...)
	cmd.Stdin = strings.NewReader(script + "\n")
	out, err := cmd.CombinedOutput()
	return string(bytes.TrimSpace(out)), err
}

// sysctls sets sysctl keys (a=b pairs) in namespace ns.
func sysctls(ns string, kv ...string) error {
	return InNetns(ns, func() error {
		for _, s := range kv {
			k, v, _ := strings.Cut(s, "=")
			p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
			if err := os.WriteFile(p, []byte(v), 0); err != nil {
				return fmt.Errorf("sysctl %s in %s: %w", s, ns, err)
			}
		}
		return nil
	})
}

// Sweep deletes the namespaces a crashed run left behind: those named
// prefix-PID-... whose PID no longer runs (or runs something else than a
// process that could have made them). It kills the processes still
// inside them first. It returns the namespaces it deleted.
func Sweep(prefix string) ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix+"-")
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		killNetnsProcs(name)
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			return gone, fmt.Errorf("deleting stale namespace %s: %v: %s", name, err, bytes.TrimSpace(out))
		}
		gone = append(gone, name)
	}
	return gone, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// killNetnsProcs kills every process in namespace ns (SIGKILL) and waits
// briefly for them to go.
func killNetnsProcs(ns string) {
	for range 50 {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
