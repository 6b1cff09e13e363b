//go:build !linux

package fabric

import "errors"

// InNetns needs Linux.
func InNetns(ns string, fn func() error) error {
	return errors.New("fabric: network namespaces need Linux")
}
