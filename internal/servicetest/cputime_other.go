//go:build !unix

package servicetest

import "time"

// cpuTime reports false: the process CPU time is read on Unix only.
func cpuTime() (time.Duration, bool) { return 0, false }
