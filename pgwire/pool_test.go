package pgwire_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/pgwire"
)

// TestPoolFromOneAddress: an application server's pool opens 64
// connections at once from one address, and every login succeeds (before,
// the ninth login still in progress from one address was refused).
func TestPoolFromOneAddress(t *testing.T) {
	const n = 64
	e := newEnv(t, pgwire.Options{MaxConns: n})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []*pgx.Conn
		errs  []error
		start = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := pgx.Connect(ctx, e.dsn("alice", e.alice))
			if err == nil {
				err = c.Ping(ctx)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			conns = append(conns, c)
		}()
	}
	close(start)
	wg.Wait()
	for _, c := range conns {
		defer c.Close(context.Background())
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d logins failed; first: %v", len(errs), n, errs[0])
	}
	if st := e.srv.Stats(); st.Sessions != n || st.Pending != 0 {
		t.Fatalf("stats %+v: want %d sessions, none pending", st, n)
	}
	if _, err := conns[n-1].Exec(ctx, "SELECT COUNT(*) FROM adult"); err != nil {
		t.Fatalf("a query on the last session: %v", err)
	}
}

// TestPendingFairness: when one address holds every waiting place (a
// flood of sockets that never log in), a login from another address
// displaces the flood's oldest socket and succeeds at once, while one more
// socket from the flooding address is refused.
func TestPendingFairness(t *testing.T) {
	e := newEnv(t, pgwire.Options{MaxPending: 4, StartupTimeout: 20 * time.Second})
	var flood []net.Conn
	for range 4 {
		nc, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		flood = append(flood, nc)
	}
	waitFor(t, func() bool { return e.srv.Stats().Pending == 4 })
	// Another address on the loopback network.
	cfg, err := pgx.ParseConfig(e.dsn("alice", e.alice))
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	cfg.DialFunc = d.DialContext
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("a login from another address beside a flood: %v", err)
	}
	defer c.Close(ctx)
	// One of the flood's sockets (the first the server counted) was
	// closed to make room.
	closed := 0
	for _, nc := range flood {
		nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Fatal("a flood socket got data")
		} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d flood sockets closed, want 1", closed)
	}
	// The flood is back at the cap; its address is the busiest, so its
	// next login is refused at once.
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitFor(t, func() bool { return e.srv.Stats().Pending == 4 })
	_, err = pgx.Connect(ctx, e.dsn("alice", e.alice))
	if sqlState(err) != "53300" || !strings.Contains(err.Error(), "have not logged in") {
		t.Fatalf("one more login from the flooding address: %v", err)
	}
	if st := e.srv.Stats(); st.Displaced != 1 || st.RefusedPending != 1 {
		t.Fatalf("stats %+v: want 1 displaced, 1 refused", st)
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 5s")
}
