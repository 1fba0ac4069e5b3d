package collector

import (
	"net"
	"sync"
	"time"
)

// Per-address quota. A collector that anyone may post to can be flooded
// by one client posting many reports with fresh ids; the quota caps the
// reports accepted from one address per survey per window. IPv6 addresses
// count by their /64 prefix (one subscriber's block).

// Defaults of the quota's ServerOptions.
const (
	DefaultQuotaWindow     = time.Hour
	DefaultMaxTrackedAddrs = 100_000
)

type quota struct {
	max, maxTracked int
	window          time.Duration
	now             func() time.Time

	mu    sync.Mutex
	start time.Time
	used  map[string]int
}

func newQuota(max, maxTracked int, window time.Duration) *quota {
	return &quota{max: max, maxTracked: maxTracked, window: window, now: time.Now, used: map[string]int{}}
}

// addrKey is the quota's key of a client address: the IPv4 address, or an
// IPv6 address's /64 prefix.
func addrKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// reserve takes n reports of the quota of (survey, address). It returns
// false, taking nothing, when they do not fit, or when the window already
// tracks its maximum of addresses (bounded memory) and this one is new.
func (q *quota) reserve(survey, remote string, n int) (ok bool, used int) {
	key := survey + "\x00" + addrKey(remote)
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := q.now(); now.Sub(q.start) >= q.window {
		q.start, q.used = now, map[string]int{}
	}
	u, seen := q.used[key]
	if !seen && len(q.used) >= q.maxTracked {
		return false, 0
	}
	if u+n > q.max {
		return false, u
	}
	q.used[key] = u + n
	return true, u + n
}

// refund gives back n reports that were reserved but not counted.
func (q *quota) refund(survey, remote string, n int) {
	if n <= 0 {
		return
	}
	key := survey + "\x00" + addrKey(remote)
	q.mu.Lock()
	defer q.mu.Unlock()
	if u, ok := q.used[key]; ok {
		q.used[key] = max(0, u-n)
	}
}
