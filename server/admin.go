package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
	"github.com/dpstat/dpstat/ledger"
)

// AnalystInfo is an analyst with its budgets, as the admin endpoints list
// them.
type AnalystInfo struct {
	analyst.Analyst
	Budgets []BudgetInfo `json:"budgets"`
}

func (s *Server) handleListAnalysts(w http.ResponseWriter, r *http.Request) error {
	all, err := s.budgetsOf("")
	if err != nil {
		return err
	}
	out := []AnalystInfo{}
	for _, a := range s.opts.Analysts.List() {
		info := AnalystInfo{Analyst: a, Budgets: []BudgetInfo{}}
		for _, b := range all {
			if b.Analyst == a.Name {
				info.Budgets = append(info.Budgets, b)
			}
		}
		out = append(out, info)
	}
	writeJSON(w, http.StatusOK, map[string]any{"analysts": out})
	return nil
}

// GrantBody is the body of POST /v1/admin/grants, and one grant in POST
// /v1/admin/analysts. With Total set (and no analyst) it sets the table's
// total budget, every analyst together.
type GrantBody struct {
	Analyst string  `json:"analyst,omitempty"`
	Table   string  `json:"table"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Rule    string  `json:"rule,omitempty"`
	Total   bool    `json:"total,omitempty"`
}

// grantTarget checks a grant's table and rule and returns the ledger
// dataset its budgets are kept under.
func (s *Server) grantTarget(g GrantBody) (string, accounting.Rule, error) {
	if g.Table == "" {
		return "", "", badRequest(`"table" is empty: want a table of the catalog`)
	}
	dataset := ""
	var names []string
	for _, t := range s.opts.Answerer.Tables("") {
		if t.Public {
			if t.Name == g.Table {
				return "", "", badRequest("table %q is public: it is about no one and has no budget (analysts join it to private tables); grant a budget on a private table", g.Table)
			}
			continue
		}
		names = append(names, t.Name)
		if t.Name == g.Table {
			dataset = t.BudgetDataset()
		}
	}
	if dataset == "" {
		return "", "", badRequest("table %q is not in the catalog; its tables are %s", g.Table, strings.Join(names, ", "))
	}
	rule := accounting.Basic
	if g.Rule != "" {
		var err error
		if rule, err = accounting.ParseRule(g.Rule); err != nil {
			return "", "", badRequest("%v", err)
		}
	}
	if err := accounting.ValidateLimit(accounting.EpsDelta{Epsilon: g.Epsilon, Delta: g.Delta}, rule); err != nil {
		return "", "", badRequest("grant refused: %v", err)
	}
	return dataset, rule, nil
}

func (s *Server) grant(g GrantBody) (BudgetInfo, error) {
	if g.Total {
		return BudgetInfo{}, badRequest(`"total": true sets a table's total budget: send it alone to POST /v1/admin/grants, without an analyst`)
	}
	if _, ok := s.opts.Analysts.Get(g.Analyst); !ok {
		return BudgetInfo{}, &httpError{http.StatusNotFound, "not_found", fmt.Sprintf("no analyst %q", g.Analyst)}
	}
	dataset, rule, err := s.grantTarget(g)
	if err != nil {
		return BudgetInfo{}, err
	}
	st, err := s.opts.Ledger.Grant(ledger.Key{Dataset: dataset, Analyst: g.Analyst}, accounting.EpsDelta{Epsilon: g.Epsilon, Delta: g.Delta}, rule)
	if err != nil {
		return BudgetInfo{}, badRequest("grant refused: %v", err)
	}
	return budgetInfo(st), nil
}

func (s *Server) grantTotal(g GrantBody) (*answer.TotalInfo, error) {
	if g.Analyst != "" {
		return nil, badRequest(`a total budget (%q: true) covers every analyst: leave "analyst" out (it is %q)`, "total", g.Analyst)
	}
	dataset, rule, err := s.grantTarget(g)
	if err != nil {
		return nil, err
	}
	st, err := s.opts.Ledger.GrantTotal(dataset, accounting.EpsDelta{Epsilon: g.Epsilon, Delta: g.Delta}, rule)
	if err != nil {
		return nil, badRequest("grant refused: %v", err)
	}
	return answer.TotalInfoOf(&st), nil
}

func (s *Server) handleGrant(w http.ResponseWriter, r *http.Request) error {
	var g GrantBody
	if err := s.decodeBody(w, r, &g); err != nil {
		return err
	}
	if g.Total {
		t, err := s.grantTotal(g)
		if err != nil {
			return err
		}
		s.auditGrant(r, g)
		writeJSON(w, http.StatusOK, t)
		return nil
	}
	b, err := s.grant(g)
	if err != nil {
		return err
	}
	s.auditGrant(r, g)
	writeJSON(w, http.StatusOK, b)
	return nil
}

// auditGrant records a grant made through the admin API.
func (s *Server) auditGrant(r *http.Request, g GrantBody) {
	s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventGrant, Via: "http", Address: r.RemoteAddr, Actor: analystOf(r).Name,
		Analyst: g.Analyst, Table: g.Table, Total: g.Total, Limit: &answer.Pair{Epsilon: g.Epsilon, Delta: g.Delta}, RequestID: answer.RequestIDOf(r.Context())})
}

// auditAdmin records an admin action on an analyst.
func (s *Server) auditAdmin(r *http.Request, action, name string) {
	s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventAdmin, Via: "http", Address: r.RemoteAddr, Actor: analystOf(r).Name, Action: action, Analyst: name, RequestID: answer.RequestIDOf(r.Context())})
}

type addAnalystBody struct {
	Name   string      `json:"name"`
	Role   string      `json:"role"`
	Grants []GrantBody `json:"grants"`
}

func (s *Server) handleAddAnalyst(w http.ResponseWriter, r *http.Request) error {
	var b addAnalystBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	role := analyst.RoleAnalyst
	if b.Role != "" {
		var err error
		if role, err = analyst.ParseRole(b.Role); err != nil {
			return badRequest("%v", err)
		}
	}
	// Every grant is checked before the analyst is created, so that a
	// request with a bad grant creates nothing.
	for i, g := range b.Grants {
		if g.Total || (g.Analyst != "" && g.Analyst != b.Name) {
			return badRequest("grants[%d]: a grant in a new analyst's request is for that analyst: leave out \"analyst\" and \"total\"", i)
		}
		if _, _, err := s.grantTarget(g); err != nil {
			return badRequest("grants[%d]: %v; nothing was created", i, err)
		}
	}
	a, tok, err := s.opts.Analysts.Add(b.Name, role)
	if errors.Is(err, analyst.ErrExists) {
		return &httpError{http.StatusConflict, "exists", err.Error()}
	}
	if err != nil {
		return badRequest("%v", err)
	}
	s.auditAdmin(r, "add", a.Name)
	info := AnalystInfo{Analyst: a, Budgets: []BudgetInfo{}}
	for _, g := range b.Grants {
		g.Analyst = a.Name
		bi, err := s.grant(g)
		if err != nil {
			return err
		}
		s.auditGrant(r, g)
		info.Budgets = append(info.Budgets, bi)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"analyst": info, "token": tok})
	return nil
}

func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) error {
	a, err := s.opts.Analysts.Revoke(r.PathValue("name"))
	if errors.Is(err, analyst.ErrUnknown) {
		return &httpError{http.StatusNotFound, "not_found", err.Error()}
	}
	if err != nil {
		return err
	}
	s.auditAdmin(r, "revoke", a.Name)
	writeJSON(w, http.StatusOK, map[string]any{"analyst": a})
	return nil
}

func (s *Server) handleRotate(w http.ResponseWriter, r *http.Request) error {
	a, tok, err := s.opts.Analysts.Rotate(r.PathValue("name"))
	if errors.Is(err, analyst.ErrUnknown) {
		return &httpError{http.StatusNotFound, "not_found", err.Error()}
	}
	if err != nil {
		return err
	}
	s.auditAdmin(r, "rotate", a.Name)
	writeJSON(w, http.StatusOK, map[string]any{"analyst": a, "token": tok})
	return nil
}
