package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine"
)

// plain is a dialect without StrictUnderflow; strict has it.
type plain struct{ engine.ANSI }

func (plain) Name() string                       { return "plain" }
func (plain) TypeName(engine.Type) string        { return "DOUBLE" }
func (plain) ExactSum(e string) string           { return "sum(" + e + ")" }
func (plain) GridSum(e string) string            { return "sum(" + e + ")" }
func (plain) RoundToGrid(e string, _ int) string { return e }
func (plain) Random() string                     { return "random()" }
func (plain) SupportsQualify() bool              { return true }

type strict struct{ plain }

func (strict) StrictUnderflow() {}

// TestArithmeticSpelling: on an ordinary dialect the helpers are plain
// operators; on a StrictUnderflow dialect a product or quotient that could
// underflow is guarded, and one that cannot is not.
func TestArithmeticSpelling(t *testing.T) {
	scale := func(d engine.Dialect, c float64) string {
		s, err := engine.Scale(d, "x", c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	divide := func(d engine.Dialect, c float64) string {
		s, err := engine.Divide(d, "x", c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name, got, want string
	}{
		{"plain scale", scale(plain{}, 0.25), "x * CAST(0.25 AS DOUBLE)"},
		{"plain divide", divide(plain{}, 8), "x / CAST(8.0 AS DOUBLE)"},
		{"plain square", engine.Square(plain{}, "x"), "x * x"},
		{"strict scale up cannot underflow", scale(strict{}, 4), "x * CAST(4.0 AS DOUBLE)"},
		{"strict scale down is guarded", scale(strict{}, 0.25),
			"CASE WHEN abs(x) < CAST(8.900295434028806e-308 AS DOUBLE) THEN CAST(0 AS DOUBLE) ELSE x * CAST(0.25 AS DOUBLE) END"},
		{"strict divide by a small number cannot underflow", divide(strict{}, 0.5), "x / CAST(0.5 AS DOUBLE)"},
		{"strict divide is guarded", divide(strict{}, 8),
			"CASE WHEN abs(x) < CAST(1.7800590868057611e-307 AS DOUBLE) THEN CAST(0 AS DOUBLE) ELSE x / CAST(8.0 AS DOUBLE) END"},
		{"strict square is guarded", engine.Square(strict{}, "x"),
			"CASE WHEN abs(x) < CAST(1.4916681462400413e-154 AS DOUBLE) THEN CAST(0 AS DOUBLE) ELSE x * x END"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got  %s\nwant %s", tt.got, tt.want)
			}
		})
	}
	if _, err := engine.Divide(plain{}, "x", 0); err == nil || !strings.Contains(err.Error(), "want a finite nonzero constant") {
		t.Errorf("divide by zero: %v", err)
	}
}

// TestRegistry: kinds are chosen by name, the default is DuckDB's, and an
// unknown kind is refused with the known ones.
func TestRegistry(t *testing.T) {
	engine.Register("test-plain", engine.Driver{Dialect: plain{}, Open: func(context.Context, engine.Spec) (engine.Engine, error) {
		return nil, nil
	}})
	d, err := engine.DialectFor(engine.Spec{Kind: "TEST-PLAIN"})
	if err != nil || d.Name() != "plain" {
		t.Fatalf("DialectFor: %v, %v", d, err)
	}
	if !engine.Registered("test-plain") {
		t.Error("test-plain is not registered")
	}
	_, err = engine.Open(context.Background(), engine.Spec{Kind: "nosuch"})
	if err == nil || !strings.Contains(err.Error(), `kind "nosuch" is not known; want one of`) || !strings.Contains(err.Error(), "test-plain") {
		t.Errorf("unknown kind: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("registering a kind twice did not panic")
			}
		}()
		engine.Register("test-plain", engine.Driver{Dialect: plain{}, Open: func(context.Context, engine.Spec) (engine.Engine, error) { return nil, nil }})
	}()
}

// TestServerLimits checks the statement timeout and pool size every server
// engine's Open accepts: negative values are refused with the value, zero
// gives the default, the pool is capped.
func TestServerLimits(t *testing.T) {
	for _, tc := range []struct {
		opts    engine.ServerOptions
		timeout time.Duration
		conns   int
		err     string
	}{
		{engine.ServerOptions{}, engine.DefaultStatementTimeout, engine.DefaultMaxConns, ""},
		{engine.ServerOptions{StatementTimeout: time.Second, MaxConns: 3}, time.Second, 3, ""},
		{engine.ServerOptions{MaxConns: 1 << 30}, engine.DefaultStatementTimeout, 100, ""},
		{engine.ServerOptions{StatementTimeout: -time.Second}, 0, 0, "x: statement timeout -1s: want a positive duration"},
		{engine.ServerOptions{MaxConns: -2}, 0, 0, "x: MaxConns = -2: want a positive number"},
	} {
		timeout, conns, err := tc.opts.Limits("x", 100)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%+v: %v, want %s", tc.opts, err, tc.err)
			}
			continue
		}
		if err != nil || timeout != tc.timeout || conns != tc.conns {
			t.Errorf("%+v: %v %v %v, want %v %v", tc.opts, timeout, conns, err, tc.timeout, tc.conns)
		}
	}
}
