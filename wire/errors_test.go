package wire

import (
	"errors"
	"testing"
)

func isSentinel(err error) bool {
	switch err {
	case ErrTruncated, ErrInvalid, ErrUnsupported, ErrChecksum, ErrICRC, ErrECNDrop:
		return true
	}
	return false
}

func TestSentinelsDistinct(t *testing.T) {
	errs := []error{ErrTruncated, ErrInvalid, ErrUnsupported, ErrChecksum, ErrICRC, ErrECNDrop}
	for i, a := range errs {
		for j, b := range errs {
			if (i == j) != errors.Is(a, b) {
				t.Errorf("errors.Is(%v, %v) = %v", a, b, errors.Is(a, b))
			}
		}
	}
}
