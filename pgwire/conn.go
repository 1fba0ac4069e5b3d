package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/server"
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
	params                     map[string]string

	// accuracy is dpstat.accuracy: when set, queries ask for it instead
	// of epsilon (see assign).
	accuracy *server.Accuracy

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

// statement is a prepared statement.
type statement struct {
	sql       string
	info      *statementInfo
	paramOIDs []uint32
	nparams   int
	// desc is the row description found by a dry run, cached.
	desc *description
}

// portal is a bound statement ready to run.
type portal struct {
	stmt    *statement
	sql     string // with its parameters bound (see boundSQL)
	formats []int16
	desc    *description
	done    bool
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
	loginID := server.NewRequestID()
	if fail != nil {
		if fail.code != "" {
			s.opts.Audit.Record(server.AuditEvent{Event: server.EventLoginFailed, Via: "pg", Address: c.RemoteAddr().String(), Analyst: user, Detail: fail.msg, RequestID: loginID})
			fatal(fail.code, fail.msg)
		}
		return
	}
	s.opts.Audit.Record(server.AuditEvent{Event: server.EventLogin, Via: "pg", Address: c.RemoteAddr().String(), Analyst: user, RequestID: loginID})
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
		e := server.AsError(err)
		switch e.Kind {
		case server.KindInternal:
			ss.s.log.Printf("dpstat serve: pg session of %q: internal error: %v", ss.user.Name, err)
		case server.KindBudgetExceeded:
			ss.s.opts.Audit.Record(server.AuditEvent{Event: server.EventRefusedBudget, Via: "pg", Address: ss.conn.RemoteAddr().String(), Analyst: ss.user.Name, Detail: e.Message, RequestID: ss.reqID})
		}
		pe = &pgError{code: e.Kind.SQLState(), msg: e.Message}
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

// request builds the answerer's request for sql with the session settings.
func (ss *session) request(sql string, dry bool) server.Request {
	r := server.Request{Analyst: ss.user.Name, SQL: sql, Epsilon: ss.epsilon, Delta: ss.delta, Confidence: ss.confidence, DryRun: dry}
	if ss.accuracy != nil {
		r.Epsilon, r.Accuracy = 0, ss.accuracy
	}
	return r
}

func (ss *session) answer(sql string, dry bool) (*server.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.opts.QueryTimeout)
	defer cancel()
	if ss.reqID == "" {
		ss.reqID = server.NewRequestID()
	}
	ctx = server.WithRequestID(ctx, ss.reqID)
	start := time.Now()
	resp, err := ss.s.opts.Answerer.Answer(ctx, ss.request(sql, dry))
	// A query is observed when it runs, or when it is refused at its
	// dry run (a Describe, or the check of a multi-statement string):
	// once, however often a driver describes it again.
	if o := ss.s.opts.Observer; o != nil && (!dry || (err != nil && ss.refusedSQL != sql)) {
		o.ObserveQuery(server.NewQueryEvent("pg", ss.reqID, ss.user.Name, resp, err, time.Since(start)))
		if dry {
			ss.refusedSQL = sql
		}
	}
	if err != nil {
		return nil, err
	}
	if len(resp.CI) != 0 && len(resp.CI) != len(resp.Rows) {
		return nil, fmt.Errorf("answer has %d rows but %d interval rows", len(resp.Rows), len(resp.CI))
	}
	return resp, nil
}

// describeDP finds a DP query's result shape with a dry run, which charges
// nothing.
func (ss *session) describeDP(sql string) (*description, error) {
	resp, err := ss.answer(sql, true)
	if err != nil {
		return nil, err
	}
	return ss.shape(resp), nil
}

// noisy reports whether column j of resp carries intervals.
func noisy(resp *server.Response, j int) bool {
	for _, ci := range resp.CI {
		if j < len(ci) && ci[j] != nil {
			return true
		}
	}
	return false
}

// shape is the result description of resp, typed as the answer types its
// columns (server.Response.Types): group keys
// typed by their declared type, counts as int8, other noisy values as
// float8, and with dpstat.intervals on, a _low and a _high column (float8)
// after each noisy one.
func (ss *session) shape(resp *server.Response) *description {
	typed := len(resp.Types) == len(resp.Columns)
	types := map[string]string{}
	// Declared types do not depend on who asks: list every table, which
	// needs no budget lookups.
	for _, t := range ss.s.opts.Answerer.Tables("") {
		if t.Name == resp.Table || resp.Table == "" {
			for _, c := range t.Columns {
				types[c.Name] = c.Type
			}
		}
	}
	d := &description{kind: kindDP, intervals: ss.intervals}
	for j, name := range resp.Columns {
		if noisy(resp, j) {
			// Counts are whole numbers; MIN, MAX and quantiles of dates
			// and timestamps are released as such (their intervals stay
			// numbers: days or microseconds since 1970-01-01); the rest
			// are doubles. The answer types every column.
			oid := uint32(oidFloat8)
			if typed {
				switch resp.Types[j] {
				case "int":
					oid = oidInt8
				case "date":
					oid = oidDate
				case "timestamp":
					oid = oidTimestamp
				}
			}
			d.cols = append(d.cols, column{name, oid})
			if ss.intervals {
				d.cols = append(d.cols, column{name + "_low", oidFloat8}, column{name + "_high", oidFloat8})
			}
			continue
		}
		oid := uint32(oidText)
		declared := types[name]
		if typed && resp.Types[j] != "" {
			// The key's type from the plan: a computed key (date_trunc,
			// lower(…)) or a column under an alias.
			declared = resp.Types[j]
		}
		switch declared {
		case "int", "integer", "bigint":
			oid = oidInt8
		case "float", "double", "real":
			oid = oidFloat8
		case "bool", "boolean":
			oid = oidBool
		case "date":
			oid = oidDate
		case "timestamp":
			oid = oidTimestamp
		case "":
			// A computed column without an interval (an expression over
			// released values): typed by its values.
			oid = valueType(resp, j)
		}
		d.cols = append(d.cols, column{name, oid})
	}
	return d
}

func (ss *session) dpQuery(sql string, formats []int16, describe bool) error {
	ss.reqID, ss.refusedSQL = server.NewRequestID(), ""
	resp, err := ss.answer(sql, false)
	if err != nil {
		return err
	}
	d := ss.shape(resp)
	if !describe && ss.expect != nil && !sameShape(ss.expect.cols, d.cols) {
		// The answer was charged, but its columns no longer match what the
		// client was told (e.g. dpstat.intervals changed since the
		// statement was described). PostgreSQL's message for this case
		// makes drivers such as pgx prepare the statement again.
		return pgErrorf("0A000", "cached plan must not change result type")
	}
	rows := make([][]any, len(resp.Rows))
	for i, r := range resp.Rows {
		for j, v := range r {
			rows[i] = append(rows[i], v)
			if ss.intervals && noisy(resp, j) {
				var lo, hi any
				if i < len(resp.CI) && j < len(resp.CI[i]) && resp.CI[i][j] != nil {
					lo, hi = resp.CI[i][j][0], resp.CI[i][j][1]
				}
				rows[i] = append(rows[i], lo, hi)
			}
		}
	}
	for _, n := range dpNotices(resp) {
		ss.notice(n)
	}
	return ss.sendRows(d.cols, rows, formats, describe, fmt.Sprintf("SELECT %d", len(rows)))
}

// dpNotices are the NOTICE messages of an answer: intervals, cost and
// budget left.
func dpNotices(resp *server.Response) []string {
	var out []string
	conf := "intervals"
	var parts []string
	for i, r := range resp.CI {
		var keys, ivs []string
		for j, ci := range r {
			if j >= len(resp.Columns) {
				break
			}
			if ci == nil {
				if i < len(resp.Rows) && j < len(resp.Rows[i]) {
					keys = append(keys, fmt.Sprint(resp.Rows[i][j]))
				}
				continue
			}
			ivs = append(ivs, fmt.Sprintf("%s [%s, %s]", resp.Columns[j], fmtNum(ci[0]), fmtNum(ci[1])))
		}
		if len(ivs) == 0 {
			continue
		}
		p := strings.Join(ivs, ", ")
		if len(keys) > 0 {
			p = strings.Join(keys, ", ") + ": " + p
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		out = append(out, conf+": "+strings.Join(parts, "; "))
	}
	out = append(out, fmt.Sprintf("cost: epsilon=%s delta=%s; budget on %s: spent epsilon=%s delta=%s, remaining epsilon=%s delta=%s",
		fmtNum(resp.Cost.Epsilon), fmtNum(resp.Cost.Delta), resp.Table,
		fmtNum(resp.Budget.Spent.Epsilon), fmtNum(resp.Budget.Spent.Delta),
		fmtNum(resp.Budget.Remaining.Epsilon), fmtNum(resp.Budget.Remaining.Delta)))
	out = append(out, resp.Notes...)
	return out
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// sendRows sends an optional RowDescription, the rows and CommandComplete.
func (ss *session) sendRows(cols []column, rows [][]any, formats []int16, describe bool, tag string) error {
	fmts := make([]int16, len(cols))
	switch len(formats) {
	case 0:
	case 1:
		for i := range fmts {
			fmts[i] = formats[0]
		}
	default:
		if len(formats) != len(cols) {
			return pgErrorf("08P01", "bind gave %d result formats for %d columns", len(formats), len(cols))
		}
		copy(fmts, formats)
	}
	if describe {
		ss.be.Send(rowDescription(cols, fmts))
	}
	for _, r := range rows {
		if len(r) != len(cols) {
			return fmt.Errorf("row of %d values for %d columns", len(r), len(cols))
		}
		vals := make([][]byte, len(r))
		for j, v := range r {
			b, err := encode(v, cols[j].oid, fmts[j])
			if err != nil {
				return err
			}
			vals[j] = b
		}
		ss.be.Send(&pgproto3.DataRow{Values: vals})
	}
	ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	return nil
}

func rowDescription(cols []column, fmts []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{}
	for i, c := range cols {
		size := int16(-1)
		switch c.oid {
		case oidInt8, oidFloat8:
			size = 8
		case oidInt4:
			size = 4
		case oidInt2:
			size = 2
		case oidBool:
			size = 1
		case oidDate:
			size = 4
		case oidTimestamp:
			size = 8
		}
		var f int16
		if fmts != nil {
			f = fmts[i]
		}
		rd.Fields = append(rd.Fields, pgproto3.FieldDescription{Name: []byte(c.name), DataTypeOID: c.oid, DataTypeSize: size, TypeModifier: -1, Format: f})
	}
	return rd
}

// encode writes v as a value of type oid in format (0 text, 1 binary).
func encode(v any, oid uint32, format int16) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if format != 0 && format != 1 {
		return nil, pgErrorf("08P01", "result format %d: want 0 (text) or 1 (binary)", format)
	}
	switch oid {
	case oidFloat8, oidInt8:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		default:
			n, err := strconv.ParseFloat(fmt.Sprint(v), 64)
			if err != nil {
				return nil, fmt.Errorf("value %v is not a number", v)
			}
			f = n
		}
		if oid == oidInt8 {
			if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
				return nil, fmt.Errorf("value %v is not an integer", v)
			}
			if format == 1 {
				return binary.BigEndian.AppendUint64(nil, uint64(int64(f))), nil
			}
			return []byte(strconv.FormatInt(int64(f), 10)), nil
		}
		if format == 1 {
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
		}
		return []byte(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case oidInt4, oidInt2:
		n, err := strconv.ParseInt(fmt.Sprint(v), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("value %v is not a 32-bit integer", v)
		}
		if format == 1 && oid == oidInt2 {
			return binary.BigEndian.AppendUint16(nil, uint16(int16(n))), nil
		}
		if format == 1 {
			return binary.BigEndian.AppendUint32(nil, uint32(int32(n))), nil
		}
		return []byte(strconv.FormatInt(n, 10)), nil
	case oidDate, oidTimestamp:
		return encodeTemporal(v, oid, format)
	case oidBool:
		b, _ := v.(bool)
		if format == 1 {
			if b {
				return []byte{1}, nil
			}
			return []byte{0}, nil
		}
		if b {
			return []byte("t"), nil
		}
		return []byte("f"), nil
	}
	return []byte(fmt.Sprint(v)), nil
}

// parse handles Parse: the statement is read with the PostgreSQL grammar
// for its kind and its placeholders; dpstat's parser sees a DP query once
// its parameters are bound.
func (ss *session) parse(m *pgproto3.Parse) error {
	if err := ss.checkLen(m.Query); err != nil {
		return err
	}
	stmts, err := splitStatements(m.Query)
	if err != nil {
		return pgErrorf("42601", "syntax error: %v", err)
	}
	if len(stmts) > 1 {
		return pgErrorf("42601", "cannot insert multiple commands into a prepared statement")
	}
	si, err := readStatement(m.Query)
	if err != nil {
		return err
	}
	n := max(si.nparams, len(m.ParameterOIDs))
	st := &statement{sql: m.Query, info: si, paramOIDs: make([]uint32, n), nparams: n}
	copy(st.paramOIDs, m.ParameterOIDs)
	if len(ss.stmts) >= 1000 && ss.stmts[m.Name] == nil {
		return pgErrorf("53400", "too many prepared statements in this session (1000): close some")
	}
	ss.stmts[m.Name] = st
	ss.be.Send(&pgproto3.ParseComplete{})
	return nil
}

func (ss *session) bind(m *pgproto3.Bind) error {
	st, ok := ss.stmts[m.PreparedStatement]
	if !ok {
		return pgErrorf("26000", "prepared statement %q does not exist", m.PreparedStatement)
	}
	if len(m.Parameters) != st.nparams {
		return pgErrorf("08P01", "bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), m.PreparedStatement, st.nparams)
	}
	if nf := len(m.ParameterFormatCodes); nf > 1 && nf != len(m.Parameters) {
		return pgErrorf("08P01", "bind message has %d parameter formats but %d parameters", nf, len(m.Parameters))
	}
	consts := make([]*pg_query.Node, len(m.Parameters))
	for i, p := range m.Parameters {
		var f int16
		switch len(m.ParameterFormatCodes) {
		case 0:
		case 1:
			f = m.ParameterFormatCodes[0]
		default:
			f = m.ParameterFormatCodes[i]
		}
		c, err := constant(p, st.paramOIDs[i], f)
		if err != nil {
			var pe *pgError
			if errors.As(err, &pe) {
				return pe
			}
			return pgErrorf("22023", "parameter $%d: %v", i+1, err)
		}
		consts[i] = c
	}
	sql, err := boundSQL(st.sql, st.info, consts)
	if err != nil {
		return pgErrorf("08P01", "%v", err)
	}
	if err := ss.checkLen(sql); err != nil {
		return err
	}
	if len(ss.portals) >= 1000 && ss.portals[m.DestinationPortal] == nil {
		return pgErrorf("53400", "too many open portals in this session (1000): close some")
	}
	ss.portals[m.DestinationPortal] = &portal{stmt: st, sql: sql, formats: append([]int16(nil), m.ResultFormatCodes...)}
	ss.be.Send(&pgproto3.BindComplete{})
	return nil
}

// describeSQL finds the result columns of sql without running it: fixed
// for session commands, by a dry run for DP queries.
func (ss *session) describeSQL(sql string) (*description, error) {
	si, err := readStatement(sql)
	if err != nil {
		return nil, err
	}
	switch si.kind {
	case kindEmpty, kindTxn, kindSet:
		return &description{kind: si.kind}, nil
	case kindShow:
		cols, _, err := ss.show(si.node())
		return &description{kind: si.kind, cols: cols}, err
	case kindCatalog:
		cols, _, err := ss.catalog(sql)
		return &description{kind: si.kind, cols: cols}, err
	}
	return ss.describeDP(sql)
}

func (ss *session) describe(m *pgproto3.Describe) error {
	if err := ss.checkUser(); err != nil {
		return err
	}
	if m.ObjectType == 'S' {
		st, ok := ss.stmts[m.Name]
		if !ok {
			return pgErrorf("26000", "prepared statement %q does not exist", m.Name)
		}
		if st.desc == nil {
			// Parameters are not bound yet: describe with placeholder
			// constants, trying NULL, then 0, then ''.
			var first error
			for _, ph := range []*pg_query.Node{{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, intConst(0), stringConst("")} {
				consts := make([]*pg_query.Node, st.nparams)
				for i := range consts {
					consts[i] = ph
				}
				sql, err := boundSQL(st.sql, st.info, consts)
				if err != nil {
					return pgErrorf("08P01", "%v", err)
				}
				d, err := ss.describeSQL(sql)
				if err == nil {
					st.desc = d
					break
				}
				if first == nil {
					first = err
				}
			}
			if st.desc == nil {
				return first
			}
		}
		oids := make([]uint32, st.nparams)
		copy(oids, st.paramOIDs)
		ss.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		ss.sendDescription(st.desc, nil)
		return nil
	}
	p, ok := ss.portals[m.Name]
	if !ok {
		return pgErrorf("34000", "portal %q does not exist", m.Name)
	}
	if p.desc == nil {
		d, err := ss.describeSQL(p.sql)
		if err != nil {
			return err
		}
		p.desc = d
	}
	ss.sendDescription(p.desc, p.formats)
	return nil
}

func (ss *session) sendDescription(d *description, formats []int16) {
	if len(d.cols) == 0 {
		ss.be.Send(&pgproto3.NoData{})
		return
	}
	fmts := make([]int16, len(d.cols))
	if len(formats) == 1 {
		for i := range fmts {
			fmts[i] = formats[0]
		}
	} else if len(formats) == len(fmts) {
		copy(fmts, formats)
	}
	ss.be.Send(rowDescription(d.cols, fmts))
}

func (ss *session) execute(m *pgproto3.Execute) error {
	p, ok := ss.portals[m.Portal]
	if !ok {
		return pgErrorf("34000", "portal %q does not exist", m.Portal)
	}
	if p.done {
		// A portal's rows are released once; re-executing would charge
		// again.
		ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")})
		return nil
	}
	p.done = true
	if m.Portal == "" {
		defer delete(ss.portals, "")
	}
	ss.expect = p.desc
	if ss.expect == nil {
		ss.expect = p.stmt.desc
	}
	defer func() { ss.expect = nil }()
	if ss.expect != nil && ss.expect.kind == kindDP && ss.expect.intervals != ss.intervals {
		// Checked before running, so that nothing is charged.
		return pgErrorf("0A000", "cached plan must not change result type")
	}
	return ss.run(p.sql, p.formats, false)
}

// sameShape reports whether two result descriptions have the same columns.
func sameShape(a, b []column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].oid != b[i].oid {
			return false
		}
	}
	return true
}

// valueType is the type of column j's values: int8 or float8 when they are
// numbers, text otherwise.
func valueType(resp *server.Response, j int) uint32 {
	for _, row := range resp.Rows {
		if j >= len(row) {
			continue
		}
		switch row[j].(type) {
		case int64:
			return oidInt8
		case float64:
			return oidFloat8
		}
	}
	return oidText
}
