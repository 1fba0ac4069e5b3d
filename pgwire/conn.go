package pgwire

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
)

// pgError is an error reported to the client as an ErrorResponse.
type pgError struct {
	code, msg, detail, hint string
	fatal                   bool
}

// Error implements error.
func (e *pgError) Error() string { return e.msg }

func pgErrorf(code, format string, args ...any) *pgError {
	return &pgError{code: code, msg: fmt.Sprintf(format, args...)}
}

// session is one logged-in client.
type session struct {
	s    *Server
	conn net.Conn
	be   *pgproto3.Backend
	user analyst.Analyst
	// cred is the token the session logged in with: a rotation or a
	// revocation of it ends the session.
	cred analyst.Credential

	epsilon, delta, confidence float64
	intervals                  bool
	// dropped is dpstat.dropped: queries also ask for the DP estimate of
	// the rows contribution bounding dropped.
	dropped bool
	params  map[string]string

	// accuracy is dpstat.accuracy: when set, queries ask for it instead
	// of epsilon (see assign).
	accuracy *answer.Accuracy
	// fresh is dpstat.fresh: answers are never derived from releases.
	fresh bool

	stmts   map[string]*statement
	portals map[string]*portal
	// cat answers catalog queries; acquired on the first one and shared
	// with the analyst's other sessions.
	cat *catalogDB
	// txStatus is what ReadyForQuery reports: 'I' idle, 'T' after BEGIN.
	// BEGIN, COMMIT and ROLLBACK change nothing else.
	txStatus byte
	// skipping is set after an error in the extended protocol: messages
	// are ignored until the next Sync.
	skipping bool
	// expect is the row description the client was given for the portal
	// being executed, if any.
	expect *description
	// reqID is the id of the DP query being answered, if any.
	reqID string
	// refusedSQL is the last query observed as refused at a dry run.
	refusedSQL string
}

// column is one result column.
type column struct {
	name string
	oid  uint32
}

// description is a result's shape and how to fill it.
type description struct {
	cols []column
	// kind says which handler runs the statement.
	kind stmtKind
	// intervals is the session's dpstat.intervals when a DP query was
	// described; the columns depend on it.
	intervals bool
}

type stmtKind int

const (
	kindDP stmtKind = iota
	kindSet
	kindShow
	kindTxn
	kindCatalog
	kindEmpty
)

func (s *Server) serveConn(c net.Conn, pending *pendingConn) {
	c.SetDeadline(time.Now().Add(s.opts.StartupTimeout))
	be := pgproto3.NewBackend(c, c)
	be.SetMaxBodyLen(s.opts.MaxQueryLen + 64<<10)
	var startup *pgproto3.StartupMessage
	secure := false
	for startup == nil {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if s.opts.TLS == nil || secure {
				if _, err := c.Write([]byte{'N'}); err != nil {
					return
				}
				continue
			}
			if _, err := c.Write([]byte{'S'}); err != nil {
				return
			}
			tc := tls.Server(c, s.opts.TLS)
			if err := tc.Handshake(); err != nil {
				return
			}
			c, secure = tc, true
			be = pgproto3.NewBackend(c, c)
			be.SetMaxBodyLen(s.opts.MaxQueryLen + 64<<10)
		case *pgproto3.GSSEncRequest:
			if _, err := c.Write([]byte{'N'}); err != nil {
				return
			}
		case *pgproto3.CancelRequest:
			// Queries are short and bounded by QueryTimeout; a cancel
			// request is acknowledged by closing, as PostgreSQL does.
			return
		case *pgproto3.StartupMessage:
			startup = m
		}
	}
	fatal := func(code, msg string) {
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
		be.Flush()
	}
	if s.opts.TLS != nil && !secure {
		fatal("28000", "this server requires TLS: connect with sslmode=require")
		return
	}
	user := startup.Parameters["user"]
	if user == "" {
		fatal("28000", "no user name given: connect with user=ANALYST password=TOKEN")
		return
	}
	login, fail := s.scramLogin(be, user)
	loginID := answer.NewRequestID()
	if fail != nil {
		if fail.code != "" {
			s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventLoginFailed, Via: "pg", Address: c.RemoteAddr().String(), Analyst: user, Detail: fail.msg, RequestID: loginID})
			fatal(fail.code, fail.msg)
		}
		return
	}
	s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventLogin, Via: "pg", Address: c.RemoteAddr().String(), Analyst: user, RequestID: loginID})
	a := login.Analyst
	be.SetAuthType(pgproto3.AuthTypeOk)
	// Logged in: the connection stops counting as waiting and takes a
	// session slot, if one is free; one displaced meanwhile ends.
	if !pending.login() {
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		fatal("53300", fmt.Sprintf("sorry, too many clients already: the server allows %d sessions", s.opts.MaxConns))
		return
	}
	if !s.openSession(a.Name) {
		fatal("53300", fmt.Sprintf("too many sessions for analyst %q: at most %d at once; close one first", a.Name, s.opts.MaxSessionsPerAnalyst))
		return
	}
	defer s.closeSession(a.Name)
	ss := &session{
		s: s, conn: c, be: be, user: a, cred: login.Credential,
		epsilon: s.opts.DefaultEpsilon,
		params:  map[string]string{},
		stmts:   map[string]*statement{}, portals: map[string]*portal{},
	}
	ss.txStatus = 'I'
	defer func() { s.catalogs.release(ss.cat) }()
	ss.params["application_name"] = startup.Parameters["application_name"]
	if pe := ss.applyStartup(startup.Parameters); pe != nil {
		fatal(pe.code, pe.msg)
		return
	}
	be.Send(&pgproto3.AuthenticationOk{})
	for _, p := range [][2]string{
		{"server_version", ServerVersion}, {"server_encoding", "UTF8"}, {"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"}, {"IntervalStyle", "postgres"}, {"TimeZone", "UTC"},
		{"integer_datetimes", "on"}, {"standard_conforming_strings", "on"}, {"is_superuser", "off"},
		{"session_authorization", a.Name}, {"application_name", ss.params["application_name"]},
	} {
		be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	var key [8]byte
	rand.Read(key[:])
	be.Send(&pgproto3.BackendKeyData{ProcessID: binary.BigEndian.Uint32(key[:4]) >> 1, SecretKey: key[4:]})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := be.Flush(); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	ss.loop()
}

func (ss *session) loop() {
	for {
		if ss.s.closingNow() {
			ss.sendError(&pgError{code: "57P01", msg: "the server is shutting down", fatal: true})
			ss.be.Flush()
			return
		}
		ss.conn.SetReadDeadline(time.Now().Add(ss.s.opts.IdleTimeout))
		msg, err := ss.be.Receive()
		if err != nil {
			var tooLong *pgproto3.ExceededMaxBodyLenErr
			var ne net.Error
			switch {
			case errors.As(err, &tooLong):
				ss.sendError(&pgError{code: "54000", msg: fmt.Sprintf("message of %d bytes is too long: statements may have at most %d bytes", tooLong.ActualBodyLen, ss.s.opts.MaxQueryLen), fatal: true})
			case errors.As(err, &ne) && ne.Timeout():
				if ss.s.closingNow() {
					ss.sendError(&pgError{code: "57P01", msg: "the server is shutting down", fatal: true})
				} else {
					ss.sendError(&pgError{code: "57P05", msg: fmt.Sprintf("terminating the session after %v idle", ss.s.opts.IdleTimeout), fatal: true})
				}
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
				return
			default:
				ss.sendError(&pgError{code: "08P01", msg: fmt.Sprintf("protocol violation: %v", err), fatal: true})
			}
			ss.be.Flush()
			return
		}
		ss.conn.SetReadDeadline(time.Time{})
		ss.conn.SetWriteDeadline(time.Now().Add(ss.s.opts.QueryTimeout + 30*time.Second))
		if !ss.handle(msg) {
			return
		}
	}
}

// handle serves one message; false ends the session.
func (ss *session) handle(msg pgproto3.FrontendMessage) bool {
	switch m := msg.(type) {
	case *pgproto3.Terminate:
		return false
	case *pgproto3.Sync:
		ss.skipping = false
		ss.ready()
		return ss.be.Flush() == nil
	case *pgproto3.Flush:
		return ss.be.Flush() == nil
	case *pgproto3.Query:
		ss.skipping = false
		ss.simpleQuery(m.String)
		ss.ready()
		return ss.be.Flush() == nil
	}
	if ss.skipping {
		return true
	}
	var err error
	switch m := msg.(type) {
	case *pgproto3.Parse:
		err = ss.parse(m)
	case *pgproto3.Bind:
		err = ss.bind(m)
	case *pgproto3.Describe:
		err = ss.describe(m)
	case *pgproto3.Execute:
		err = ss.execute(m)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(ss.stmts, m.Name)
		} else {
			delete(ss.portals, m.Name)
		}
		ss.be.Send(&pgproto3.CloseComplete{})
	case *pgproto3.FunctionCall:
		err = pgErrorf("0A000", "function calls are not supported")
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		err = pgErrorf("08P01", "unexpected COPY message")
	default:
		err = pgErrorf("08P01", "unexpected message %T", msg)
	}
	if err != nil {
		ss.sendError(err)
		ss.skipping = true
		var pe *pgError
		if errors.As(err, &pe) && pe.fatal {
			ss.be.Flush()
			return false
		}
	}
	return true
}

func (ss *session) ready() { ss.be.Send(&pgproto3.ReadyForQuery{TxStatus: ss.txStatus}) }

func (ss *session) sendError(err error) {
	var pe *pgError
	if !errors.As(err, &pe) {
		e := answer.AsError(err)
		switch e.Kind {
		case answer.KindInternal:
			ss.s.log.Printf("dpstat serve: pg session of %q: internal error: %v", ss.user.Name, err)
		case answer.KindBudgetExceeded:
			ss.s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventRefusedBudget, Via: "pg", Address: ss.conn.RemoteAddr().String(), Analyst: ss.user.Name, Detail: e.Message, RequestID: ss.reqID})
		}
		pe = &pgError{code: sqlState(e.Kind), msg: e.Message}
	}
	sev := "ERROR"
	if pe.fatal {
		sev = "FATAL"
	}
	ss.be.Send(&pgproto3.ErrorResponse{Severity: sev, SeverityUnlocalized: sev, Code: pe.code, Message: pe.msg, Detail: pe.detail, Hint: pe.hint})
}

func (ss *session) notice(msg string) {
	ss.be.Send(&pgproto3.NoticeResponse{Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "00000", Message: msg})
}

// checkUser re-checks, before each statement, that the token the session
// logged in with is still the analyst's and has not been revoked.
func (ss *session) checkUser() error {
	err := ss.s.opts.Analysts.CheckCredential(ss.cred)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, analyst.ErrRotated):
		return &pgError{code: "28P01", msg: fmt.Sprintf("the token of %q was rotated: this session ended; log in again with the new token", ss.user.Name), fatal: true}
	}
	return &pgError{code: "28P01", msg: fmt.Sprintf("the token of %q has been revoked", ss.user.Name), fatal: true}
}

func (ss *session) checkLen(sql string) error {
	if len(sql) > ss.s.opts.MaxQueryLen {
		return pgErrorf("54000", "statement is %d bytes long: at most %d are accepted", len(sql), ss.s.opts.MaxQueryLen)
	}
	return nil
}

// simpleQuery runs each statement of a simple-protocol query string; the
// first error stops the rest.
func (ss *session) simpleQuery(text string) {
	ss.reqID = ""
	if err := ss.checkLen(text); err != nil {
		ss.sendError(err)
		return
	}
	stmts, err := splitStatements(text)
	if err != nil {
		ss.sendError(pgErrorf("42601", "syntax error: %v", err))
		return
	}
	if len(stmts) == 0 {
		ss.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	if len(stmts) > 1 {
		// Check every DP query first with a dry run, which charges
		// nothing, so that a string such as "SELECT ...; DROP ..." is
		// refused as a whole rather than answered in part.
		for _, st := range stmts {
			if classify(st) != kindDP {
				continue
			}
			if _, err := ss.answer(st, true); err != nil {
				ss.sendError(err)
				return
			}
		}
	}
	for _, st := range stmts {
		if err := ss.run(st, nil, true); err != nil {
			ss.sendError(err)
			var pe *pgError
			if errors.As(err, &pe) && pe.fatal {
				ss.be.Flush()
				ss.conn.Close()
			}
			return
		}
	}
}

// run answers one statement: with a row description first when describe
// is set (simple protocol), then the rows and the command tag. formats are
// the result format codes (extended protocol).
func (ss *session) run(sql string, formats []int16, describe bool) error {
	ss.reqID = ""
	if err := ss.checkUser(); err != nil {
		return err
	}
	if l := ss.s.opts.Limits; l != nil {
		done, err := l.Admit(ss.user.Name)
		if err != nil {
			return err
		}
		defer done()
	}
	si, err := readStatement(sql)
	if err != nil {
		return err
	}
	switch si.kind {
	case kindEmpty:
		ss.be.Send(&pgproto3.EmptyQueryResponse{})
		return nil
	case kindTxn:
		tag, status := txnTag(si.node())
		if status != 0 {
			ss.txStatus = status
		}
		ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		return nil
	case kindSet:
		if err := ss.set(si.node()); err != nil {
			return err
		}
		ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(setTag(si.node()))})
		return nil
	case kindShow:
		cols, rows, err := ss.show(si.node())
		if err != nil {
			return err
		}
		return ss.sendRows(cols, rows, formats, describe, "SHOW")
	case kindCatalog:
		cols, rows, err := ss.catalog(sql)
		if err != nil {
			return err
		}
		return ss.sendRows(cols, rows, formats, describe, fmt.Sprintf("SELECT %d", len(rows)))
	}
	return ss.dpQuery(sql, formats, describe)
}

// setTag is the command tag of SET, RESET, DISCARD or DEALLOCATE.
func setTag(n *pg_query.Node) string {
	switch {
	case n.GetDiscardStmt() != nil:
		return "DISCARD ALL"
	case n.GetDeallocateStmt() != nil:
		return "DEALLOCATE"
	case n.GetVariableSetStmt().GetKind() == pg_query.VariableSetKind_VAR_RESET || n.GetVariableSetStmt().GetKind() == pg_query.VariableSetKind_VAR_RESET_ALL:
		return "RESET"
	}
	return "SET"
}
