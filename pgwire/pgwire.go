// Package pgwire is dpstat's PostgreSQL wire-protocol front end, so that
// psql, drivers such as pgx and JDBC, and BI tools can run DP SQL against a
// dpstat server.
//
// A client logs in with its analyst name as the user and its token as the
// password, by SCRAM-SHA-256 (the only method offered): the token never
// crosses the connection, and the server holds only its salted verifier.
// A connection takes a session slot only once logged in; before that it
// waits at most StartupTimeout, and at most MaxPending connections wait at
// once, from any number of addresses: a pool of 64 logins from one
// application server is served in full. Only when MaxPending is reached
// does an address's share matter: a newcomer from an address holding fewer
// waiting connections than the busiest one displaces that address's oldest
// waiting connection, so that a flood from one address cannot lock others
// out, and a newcomer from the busiest address is refused (53300). A session is bound to the token it logged in with:
// rotating or revoking that token ends it at its next statement.
// Queries go to an answer.Answerer exactly as over HTTP: rows come back as a
// normal result set and the intervals, the cost and the budget left as
// NOTICE messages (or as extra columns after SET dpstat.intervals = on).
// Both the simple and the extended query protocol are served. Statements
// are read with the PostgreSQL grammar (pg_query): query strings are split
// by its scanner, statements are told apart by their parse trees, and a
// bound parameter becomes one typed constant (NULL, a number, a boolean or
// a string) in the parse tree, which is printed back as SQL for dpstat's
// own parser; a parameter can never change the statement's structure and
// never reaches an engine as SQL.
//
// Session commands: SET/SHOW dpstat.epsilon, dpstat.delta,
// dpstat.confidence, dpstat.intervals and dpstat.dropped; BEGIN, COMMIT and ROLLBACK are
// accepted as no-ops (each answer is charged when it is released); common
// client settings (client_encoding, DateStyle, ...) are accepted and the
// SHOWs drivers send answered. Catalog queries (pg_catalog,
// information_schema, version(), ...) are answered by a per-session
// in-memory database describing the declared tables the analyst may query,
// never from the data (catalog.go).
//
// Errors are ErrorResponses with SQLSTATE codes: 28P01 for a bad token,
// 42501 for a table not granted, 42601 for a syntax error, 0A000 for a
// query dpstat refuses, 53400 for an exhausted budget, 53300 when the
// server has its maximum of connections, 22023 for a bad setting, 54000 for
// an over-long statement, 08P01 for a protocol violation.
package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxConns       = 64
	DefaultStartupTimeout = 5 * time.Second
	// DefaultMaxPending bounds the connections that have not logged in
	// yet, from every address together.
	DefaultMaxPending   = 128
	DefaultIdleTimeout  = 30 * time.Minute
	DefaultQueryTimeout = 30 * time.Second
	DefaultMaxQueryLen  = 16 << 10
	// ServerVersion is what the front end reports as server_version;
	// psql chooses its catalog queries by it.
	ServerVersion = "15.0 (dpstat)"
)

// Options configures a Server.
type Options struct {
	// Answerer answers DP SQL (required).
	Answerer answer.Answerer
	// Analysts checks user names and tokens (required).
	Analysts *analyst.Registry
	// TLS, when set, is offered to clients that ask (SSLRequest) and
	// required of every client: a plaintext login is refused.
	TLS *tls.Config
	// MaxConns bounds the logged-in sessions; a client that logs in
	// beyond it gets SQLSTATE 53300. A connection takes a place only once
	// it has logged in, so idle unauthenticated sockets cannot lock
	// analysts out.
	MaxConns int
	// MaxPending bounds the connections that have not logged in yet,
	// from every address together. At the cap, a connection from an
	// address holding fewer waiting connections than the busiest address
	// displaces the busiest address's oldest one; a connection from the
	// busiest address is refused at once (53300).
	MaxPending int
	// MaxSessionsPerAnalyst bounds one analyst's sessions at once; a
	// login beyond it gets 53300. Zero means no cap besides MaxConns.
	MaxSessionsPerAnalyst int
	// Audit, when set, records logins, failed logins and refusals over
	// budget.
	Audit *auditlog.Log
	// Limits, when set, admits every statement as it admits an HTTP
	// request (*server.Server does: its concurrency limit and each
	// analyst's rate), so that both front ends share one set of limits.
	Limits Limits
	// StartupTimeout bounds the time from connecting to being logged in.
	StartupTimeout time.Duration
	// IdleTimeout closes a session that sends nothing for this long.
	IdleTimeout time.Duration
	// QueryTimeout bounds one query.
	QueryTimeout time.Duration
	// MaxQueryLen bounds a statement's text in bytes (54000 beyond).
	MaxQueryLen int
	// DefaultEpsilon is a session's dpstat.epsilon before SET; zero means
	// the answerer's default.
	DefaultEpsilon float64
	// Logger receives internal errors; nil means the standard logger.
	Logger *log.Logger
	// Observer, when set, is told of every DP query (for logs and
	// metrics), with the request id generated for it.
	Observer answer.Observer
}

// Limits admits one request of an analyst, or refuses it with an error
// (a *answer.Error of kind KindOverloaded or KindRateLimited); the
// returned function ends the request.
type Limits interface {
	Admit(analyst string) (func(), error)
}

// Server serves the PostgreSQL protocol on listeners given to Serve.
type Server struct {
	opts  Options
	slots chan struct{}
	log   *log.Logger
	// catalogs are the catalog databases of the connected analysts.
	catalogs catalogCache

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	// pending holds, per IP address, the connections not logged in yet,
	// oldest first; npending counts them all.
	pending  map[string][]*pendingConn
	npending int
	// displaced and refusedPending count the waiting connections closed
	// to make room for another address, and the connections refused at
	// the cap.
	displaced, refusedPending uint64
	// sessions counts each analyst's sessions.
	sessions map[string]int
	// secret keys the fake SCRAM salts of unknown user names.
	secret  [32]byte
	closing bool
	wg      sync.WaitGroup
}

// New validates opts and returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Answerer == nil || opts.Analysts == nil {
		return nil, errors.New("pgwire: Answerer and Analysts are required")
	}
	err := answer.ApplyDefaults("pgwire",
		answer.Default("MaxConns", &opts.MaxConns, DefaultMaxConns),
		answer.Default("MaxPending", &opts.MaxPending, DefaultMaxPending),
		answer.Default("MaxSessionsPerAnalyst", &opts.MaxSessionsPerAnalyst, 0),
		answer.Default("StartupTimeout", &opts.StartupTimeout, DefaultStartupTimeout),
		answer.Default("IdleTimeout", &opts.IdleTimeout, DefaultIdleTimeout),
		answer.Default("QueryTimeout", &opts.QueryTimeout, DefaultQueryTimeout),
		answer.Default("MaxQueryLen", &opts.MaxQueryLen, DefaultMaxQueryLen))
	if err != nil {
		return nil, err
	}
	if opts.DefaultEpsilon != 0 {
		if err := answer.CheckParam(answer.ParamEpsilon, "DefaultEpsilon", opts.DefaultEpsilon); err != nil {
			return nil, fmt.Errorf("pgwire: %w", err)
		}
	}
	if opts.Logger == nil {
		opts.Logger = log.Default()
	}
	srv := &Server{
		opts: opts, slots: make(chan struct{}, opts.MaxConns), log: opts.Logger,
		listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}, pending: map[string][]*pendingConn{}, sessions: map[string]int{},
	}
	if _, err := rand.Read(srv.secret[:]); err != nil {
		return nil, fmt.Errorf("pgwire: reading random bytes: %w", err)
	}
	return srv, nil
}

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("pgwire: server closed")

// Serve accepts connections on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			defer func() {
				// A bug met by one session closes that session, not the
				// server.
				if r := recover(); r != nil {
					s.log.Printf("dpstat serve: pg session from %s: internal error: %v\n%s", c.RemoteAddr(), r, debug.Stack())
				}
			}()
			p, held := s.newPending(c)
			if p == nil {
				s.refuseNow(c, fmt.Sprintf("sorry, too many connections that have not logged in: the server holds at most %d, and %s holds %d of them, the most of any address; retry shortly", s.opts.MaxPending, addrOf(c), held))
				return
			}
			defer p.done()
			s.serveConn(c, p)
		}()
	}
}

// addrOf is the IP address of c's peer, or its whole address when it has
// none.
func addrOf(c net.Conn) string {
	a := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// pendingConn is a connection counted until it logs in or closes.
type pendingConn struct {
	s    *Server
	c    net.Conn
	addr string
	// gone is set (under s.mu) once the connection stops counting: it
	// logged in, closed, or was displaced.
	gone bool
}

// newPending counts c as waiting to log in. At MaxPending, a connection
// from an address holding fewer waiting connections than the busiest one
// displaces (closes) the busiest address's oldest; otherwise it returns
// nil and how many its address holds.
func (s *Server) newPending(c net.Conn) (*pendingConn, int) {
	addr := addrOf(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.npending >= s.opts.MaxPending {
		busiest, n := "", 0
		for a, l := range s.pending {
			if len(l) > n || (len(l) == n && a < busiest) {
				busiest, n = a, len(l)
			}
		}
		if held := len(s.pending[addr]); held+1 >= n {
			s.refusedPending++
			return nil, held
		}
		victim := s.pending[busiest][0]
		s.dropPendingLocked(victim)
		s.displaced++
		// Its handshake fails at its next read or write and ends.
		victim.c.Close()
	}
	p := &pendingConn{s: s, c: c, addr: addr}
	s.pending[addr] = append(s.pending[addr], p)
	s.npending++
	return p, 0
}

// dropPendingLocked stops counting p; s.mu is held.
func (s *Server) dropPendingLocked(p *pendingConn) {
	if p.gone {
		return
	}
	p.gone = true
	l := s.pending[p.addr]
	for i, q := range l {
		if q == p {
			l = append(l[:i:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(s.pending, p.addr)
	} else {
		s.pending[p.addr] = l
	}
	s.npending--
}

// done stops counting the connection (when it closes).
func (p *pendingConn) done() {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	p.s.dropPendingLocked(p)
}

// login stops counting a connection that logged in; false means it was
// displaced meanwhile and must end.
func (p *pendingConn) login() bool {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if p.gone {
		return false
	}
	p.s.dropPendingLocked(p)
	return true
}

// Stats are the front end's connection counts, for monitoring.
type Stats struct {
	// Sessions are the logged-in sessions; Pending the connections that
	// have not logged in yet.
	Sessions, Pending int
	// Displaced counts waiting connections closed at the MaxPending cap
	// to make room for another address; RefusedPending the connections
	// refused at the cap.
	Displaced, RefusedPending uint64
}

// Stats returns the current connection counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Sessions: len(s.slots), Pending: s.npending, Displaced: s.displaced, RefusedPending: s.refusedPending}
}

// openSession counts a session of name, or returns false when the analyst
// has MaxSessionsPerAnalyst of them.
func (s *Server) openSession(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.MaxSessionsPerAnalyst > 0 && s.sessions[name] >= s.opts.MaxSessionsPerAnalyst {
		return false
	}
	s.sessions[name]++
	return true
}

func (s *Server) closeSession(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[name]--; s.sessions[name] <= 0 {
		delete(s.sessions, name)
	}
}

// refuseNow sends a FATAL 53300 without reading anything and closes: a
// client reads it after sending its startup message.
func (s *Server) refuseNow(c net.Conn, msg string) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	be := pgproto3.NewBackend(c, c)
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "53300", Message: msg})
	be.Flush()
}

// Shutdown stops accepting, lets running queries finish and closes every
// session, waiting until they are gone or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	// Wake sessions blocked reading the next message; a query in flight
	// finishes first because sessions check their deadline only between
	// messages.
	for c := range s.conns {
		c.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// Close closes every listener and connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	return nil
}

func (s *Server) closingNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}
