// Package mmsg wraps Linux's sendmmsg and recvmmsg for sockets driven by
// the Go runtime's poller: the UDP and raw-IPv6 datapath and the
// software switch's packet sockets use it.
package mmsg

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Send hands hdrs to one sendmmsg call, waiting in the runtime poller while
// the socket is full. It returns how many messages the kernel took; errno
// is the error of hdrs[sent] when the kernel refused it (the caller skips
// or retries it), and err an error of the socket itself.
func Send(rc syscall.RawConn, hdrs []unix.Mmsghdr) (sent int, errno syscall.Errno, err error) {
	err = rc.Write(func(fd uintptr) bool {
		for {
			r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			sent, errno = int(r), e
			return true
		}
	})
	return sent, errno, err
}

// Recv reads up to len(hdrs) messages with one recvmmsg call. With wait it
// blocks in the runtime poller until one arrives; without, it returns 0 at
// once when nothing waits.
func Recv(rc syscall.RawConn, hdrs []unix.Mmsghdr, wait bool) (got int, errno syscall.Errno, err error) {
	call := func(fd uintptr, flags int) (retry, done bool) {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
		switch e {
		case unix.EINTR:
			return true, false
		case unix.EAGAIN:
			return false, false
		}
		got, errno = int(r), e
		return false, true
	}
	if !wait {
		err = rc.Control(func(fd uintptr) {
			for {
				if retry, _ := call(fd, unix.MSG_DONTWAIT); !retry {
					return
				}
			}
		})
		return got, errno, err
	}
	err = rc.Read(func(fd uintptr) bool {
		for {
			retry, done := call(fd, 0)
			if !retry {
				return done
			}
		}
	})
	return got, errno, err
}
