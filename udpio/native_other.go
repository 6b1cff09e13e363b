//go:build !linux

package udpio

import "errors"

// Native framing needs Linux: raw IPv6 sockets with IPV6_HDRINCL and the
// receive control messages that rebuild a packet's header.

type nativePlane struct{}

func (p *nativePlane) close() {}

var errNativeLinux = errors.New("udpio: native framing is only implemented on Linux")

// Open fails: native framing is Linux only.
func (b *NativeBind) Open() ([]ReceiveFunc, error) { return nil, errNativeLinux }

func (b *NativeBind) sendPlane(*nativePlane, []Burst) error { return errNativeLinux }

func checkRaw() error { return errNativeLinux }
