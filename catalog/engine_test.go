package catalog

import (
	"strings"
	"testing"
	"time"
)

// TestEngineSection checks the `engine:` section: the default, a server
// engine whose sources are relations, and every refusal with what would be
// accepted.
func TestEngineSection(t *testing.T) {
	const table = `
tables:
  visits:
    source: %s
    columns:
      pid: {type: int}
`
	tests := []struct {
		name, engine, source string
		want                 []string // parts of the error; nil: accepted
		check                func(*Catalog) string
	}{
		{name: "default is duckdb over files", source: "d.csv", check: func(c *Catalog) string {
			if c.Engine.Kind != "duckdb" || c.Remote() || c.Tables[0].Format != "csv" {
				return "want duckdb over a csv file"
			}
			return ""
		}},
		{name: "postgres binds a relation", engine: `{kind: postgres, dsn: "postgres://dpstat_reader@db:5432/clinic?sslmode=require", password_env: DPSTAT_ENGINE_PASSWORD, statement_timeout: 90s, max_connections: 4}`,
			source: "public.visits", check: func(c *Catalog) string {
				e, tb := c.Engine, c.Tables[0]
				if e.Kind != "postgres" || e.PasswordEnv != "DPSTAT_ENGINE_PASSWORD" || e.StatementTimeout != 90*time.Second || e.MaxConnections != 4 {
					return "engine fields not read"
				}
				if !c.Remote() || tb.Format != Relation || tb.Source != "public.visits" || tb.Database != "postgres postgres://dpstat_reader@db:5432/clinic?sslmode=require" {
					return "want the relation public.visits"
				}
				if !strings.Contains(c.Summary(), "public.visits (relation on postgres)") {
					return "summary: " + c.Summary()
				}
				return ""
			}},
		{name: "password in a URL", engine: `{kind: postgres, dsn: "postgres://u:secret@db/clinic"}`, source: "visits",
			want: []string{"dsn holds a password", "password_env"}},
		{name: "password as a key", engine: `{kind: postgres, dsn: "host=db password=secret"}`, source: "visits",
			want: []string{"dsn holds a password"}},
		{name: "server without dsn", engine: `{kind: postgres}`, source: "visits",
			want: []string{"dsn: missing", "postgres://"}},
		{name: "duckdb takes no dsn", engine: `{kind: duckdb, dsn: "postgres://db"}`, source: "d.csv",
			want: []string{"kind duckdb reads the tables' files"}},
		{name: "bad timeout", engine: `{kind: postgres, dsn: "postgres://u@db/c", statement_timeout: soon}`, source: "visits",
			want: []string{`statement_timeout "soon": want a positive duration`}},
		{name: "bad pool size", engine: `{kind: postgres, dsn: "postgres://u@db/c", max_connections: 0}`, source: "visits",
			want: []string{"max_connections = 0: want a whole number from 1 to 1000"}},
		{name: "bad password variable", engine: `{kind: postgres, dsn: "postgres://u@db/c", password_env: "A-B"}`, source: "visits",
			want: []string{`password_env "A-B"`}},
		{name: "bad kind", engine: `{kind: "my engine", dsn: "x"}`, source: "visits",
			want: []string{`kind "my engine"`}},
		{name: "relation with a semicolon", engine: `{kind: postgres, dsn: "postgres://u@db/c"}`, source: `"visits; drop table x"`,
			want: []string{"want a table or view name such as public.visits"}},
		{name: "unknown field", engine: `{kind: postgres, dsn: "postgres://u@db/c", user: x}`, source: "visits",
			want: []string{"user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "budget: {epsilon: 1}\n"
			if tt.engine != "" {
				y += "engine: " + tt.engine + "\n"
			}
			y += strings.Replace(table, "%s", tt.source, 1)
			c, err := Parse([]byte(y), writeSource(t))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if msg := tt.check(c); msg != "" {
					t.Error(msg)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
