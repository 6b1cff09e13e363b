//go:build !linux

package swnet

import (
	"errors"
	"net"
)

// PacketLink is a switch port on a network interface; Linux only.
type PacketLink struct{ Link }

// OpenPacketLink fails: AF_PACKET is Linux's.
func OpenPacketLink(name string, peer net.HardwareAddr) (*PacketLink, error) {
	return nil, errors.New("swnet: switch ports on network interfaces (AF_PACKET) need Linux")
}

func peerOf(*PacketLink) (string, bool) { return "", false }
