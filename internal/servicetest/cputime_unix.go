//go:build unix

package servicetest

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used, and
// true; where it cannot be read, false.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
