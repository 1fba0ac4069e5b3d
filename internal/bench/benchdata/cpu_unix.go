//go:build unix

package benchdata

import (
	"syscall"
	"time"
)

// CPUTime returns the processor time (user and system) the process has
// used so far, DuckDB's threads included, or 0 where it is not known. On
// a shared machine the processor time of a query varies less than its
// wall time, which waits while other jobs run.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
