package pgwire

import (
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"
)

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
