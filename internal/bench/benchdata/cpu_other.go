//go:build !unix

package benchdata

import "time"

// CPUTime returns 0: the process's processor time is not read on this
// system.
func CPUTime() time.Duration { return 0 }
