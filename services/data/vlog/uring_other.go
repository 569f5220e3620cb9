//go:build !linux

package vlog

import "errors"

func newUringEngine(depth int) (Engine, error) {
	return nil, errors.New("vlog: io_uring is only available on Linux")
}
