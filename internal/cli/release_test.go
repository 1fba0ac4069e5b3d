package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/ledger"
)

func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Execute(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestReleaseExactAtHugeEpsilon(t *testing.T) {
	// ε = 1e20 leaves no noise to speak of: every mechanism returns the
	// true value (or the best candidate) exactly.
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "laplace", args: []string{"laplace", "--value", "3", "--epsilon", "1e20"}, want: "3"},
		{name: "laplace negative fraction", args: []string{"laplace", "--value", "-2.5", "--sensitivity", "10", "--epsilon", "1e20"}, want: "-2.5"},
		{name: "geometric", args: []string{"geometric", "--value", "120", "--epsilon", "1e20"}, want: "120"},
		{name: "geometric sensitivity 3", args: []string{"geometric", "--value", "-7", "--sensitivity", "3", "--epsilon", "1e20"}, want: "-7"},
		{name: "gaussian", args: []string{"gaussian", "--value", "3", "--epsilon", "1e20", "--delta", "1e-5"}, want: "3"},
		{name: "binary randomized response yes", args: []string{"randomized-response", "--value", "yes", "--epsilon", "1e20"}, want: "yes"},
		{name: "binary randomized response no", args: []string{"randomized-response", "--value", "no", "--epsilon", "1e20"}, want: "no"},
		{name: "k-ary randomized response", args: []string{"randomized-response", "--domain", "a,b,c", "--value", "b", "--epsilon", "1e20"}, want: "b"},
		{name: "exponential", args: []string{"exponential", "--candidates", "a,b,c", "--scores", "1,5,2", "--epsilon", "1e20"}, want: "b"},
		{name: "report-noisy-max exponential noise", args: []string{"report-noisy-max", "--candidates", "a,b,c", "--scores", "1,5,2", "--epsilon", "1e20"}, want: "b"},
		{name: "report-noisy-max gumbel noise", args: []string{"report-noisy-max", "--candidates", "a,b,c", "--scores", "1,5,2", "--epsilon", "1e20", "--noise", "gumbel"}, want: "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, seeded := range []bool{false, true} {
				args := append([]string{"release"}, tc.args...)
				if seeded {
					args = append(args, "--insecure-seed", "1")
				}
				out, errOut, code := runCLI(args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				if got := strings.TrimSpace(out); got != tc.want {
					t.Errorf("seeded=%v: output %q, want %q", seeded, got, tc.want)
				}
			}
		})
	}
}

func TestReleaseCount(t *testing.T) {
	// --count N prints N lines, each of which parses as the mechanism's
	// output type.
	tests := []struct {
		name  string
		args  []string
		count int
		parse func(string) error
	}{
		{name: "laplace", args: []string{"laplace", "--value", "3", "--epsilon", "0.5"}, count: 1000, parse: parseFloatLine},
		{name: "geometric", args: []string{"geometric", "--value", "3", "--epsilon", "0.5"}, count: 1000, parse: parseIntLine},
		{name: "gaussian", args: []string{"gaussian", "--value", "3", "--epsilon", "0.5", "--delta", "1e-6"}, count: 1000, parse: parseFloatLine},
		{name: "randomized response", args: []string{"randomized-response", "--value", "yes", "--p", "0.75"}, count: 500, parse: oneOf("yes", "no")},
		{name: "k-ary randomized response", args: []string{"randomized-response", "--domain", "x,y,z", "--value", "z", "--epsilon", "1"}, count: 500, parse: oneOf("x", "y", "z")},
		{name: "exponential", args: []string{"exponential", "--candidates", "a,b,c", "--scores", "1,5,2", "--epsilon", "1"}, count: 500, parse: oneOf("a", "b", "c")},
		{name: "report-noisy-max", args: []string{"report-noisy-max", "--candidates", "a,b,c", "--scores", "1,5,2", "--epsilon", "1"}, count: 500, parse: oneOf("a", "b", "c")},
		{name: "one", args: []string{"laplace", "--value", "3", "--epsilon", "0.5"}, count: 1, parse: parseFloatLine},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"release"}, tc.args...)
			args = append(args, "--count", strconv.Itoa(tc.count))
			out, errOut, code := runCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != tc.count {
				t.Fatalf("%d lines, want %d", len(lines), tc.count)
			}
			for i, l := range lines {
				if err := tc.parse(l); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
			}
		})
	}
}

func parseFloatLine(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
		return strconv.ErrRange
	}
	return err
}

func parseIntLine(s string) error {
	_, err := strconv.ParseInt(s, 10, 64)
	return err
}

func oneOf(vals ...string) func(string) error {
	return func(s string) error {
		for _, v := range vals {
			if s == v {
				return nil
			}
		}
		return strconv.ErrSyntax
	}
}

func TestReleaseSeededIsReproducible(t *testing.T) {
	args := []string{"release", "laplace", "--value", "10", "--epsilon", "1", "--count", "20", "--insecure-seed", "42"}
	a, _, _ := runCLI(args...)
	b, _, _ := runCLI(args...)
	if a != b || a == "" {
		t.Errorf("two runs with the same insecure seed differ:\n%s\n%s", a, b)
	}
	c, _, _ := runCLI("release", "laplace", "--value", "10", "--epsilon", "1", "--count", "20")
	d, _, _ := runCLI("release", "laplace", "--value", "10", "--epsilon", "1", "--count", "20")
	// Twenty draws from the secure source coincide with probability far
	// below 1e-12.
	if c == d {
		t.Error("two secure runs printed the same twenty releases")
	}
}

func TestReleaseJSON(t *testing.T) {
	type report struct {
		Mechanism         string          `json:"mechanism"`
		Value             json.RawMessage `json:"value"`
		Values            []any           `json:"values"`
		Scale             *float64        `json:"scale"`
		Granularity       *float64        `json:"granularity"`
		Sigma             *float64        `json:"sigma"`
		P                 *float64        `json:"p"`
		Cost              struct{ Epsilon, Delta, Rho float64 }
		Confidence        float64     `json:"confidence"`
		IntervalHalfWidth *float64    `json:"interval_half_width"`
		Interval          *[2]float64 `json:"interval"`
		UtilityBound      *float64    `json:"utility_bound"`
	}
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, r report)
	}{
		{
			name: "laplace",
			args: []string{"laplace", "--value", "3", "--epsilon", "0.5", "--sensitivity", "1", "--confidence", "0.9"},
			check: func(t *testing.T, r report) {
				if r.Scale == nil || *r.Scale < 2 || r.Granularity == nil || *r.Granularity <= 0 {
					t.Errorf("scale %v granularity %v: want b ≥ Δ/ε = 2 and a positive grid", r.Scale, r.Granularity)
				}
				if r.Cost.Epsilon != 0.5 || r.Cost.Delta != 0 {
					t.Errorf("cost %+v, want ε = 0.5, δ = 0", r.Cost)
				}
				if r.Confidence != 0.9 || r.IntervalHalfWidth == nil || *r.IntervalHalfWidth < 2*math.Log(10) {
					t.Errorf("confidence %v half-width %v: want 0.9 and ≥ b·ln 10", r.Confidence, r.IntervalHalfWidth)
				}
				var v float64
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatalf("value %s: %v", r.Value, err)
				}
				if r.Interval == nil || r.Interval[0] > v || r.Interval[1] < v {
					t.Errorf("interval %v does not surround the value %v", r.Interval, v)
				}
			},
		},
		{
			name: "gaussian",
			args: []string{"gaussian", "--value", "3", "--epsilon", "1", "--delta", "1e-5"},
			check: func(t *testing.T, r report) {
				// Analytic Gaussian σ for Δ₂ = 1, ε = 1, δ = 1e-5 is 3.7306.
				if r.Sigma == nil || *r.Sigma < 3.73 || *r.Sigma > 3.9 {
					t.Errorf("sigma %v, want about 3.73", r.Sigma)
				}
				if r.Cost.Delta != 1e-5 || r.Cost.Rho <= 0 {
					t.Errorf("cost %+v, want δ = 1e-5 and ρ > 0", r.Cost)
				}
			},
		},
		{
			name: "geometric values",
			args: []string{"geometric", "--value", "3", "--epsilon", "1", "--count", "5"},
			check: func(t *testing.T, r report) {
				if len(r.Values) != 5 {
					t.Errorf("%d values, want 5", len(r.Values))
				}
				if r.IntervalHalfWidth == nil || r.Interval != nil {
					t.Errorf("half-width %v interval %v: want a half-width and no single interval", r.IntervalHalfWidth, r.Interval)
				}
			},
		},
		{
			name: "randomized response",
			args: []string{"randomized-response", "--value", "no", "--p", "0.75"},
			check: func(t *testing.T, r report) {
				if r.P == nil || *r.P != 0.75 || math.Abs(r.Cost.Epsilon-math.Log(3)) > 1e-9 {
					t.Errorf("p %v cost %+v: want p = 0.75 and ε = ln 3", r.P, r.Cost)
				}
				if s := string(r.Value); s != `"yes"` && s != `"no"` {
					t.Errorf("value %s, want \"yes\" or \"no\"", s)
				}
			},
		},
		{
			name: "exponential",
			args: []string{"exponential", "--candidates", "a,b,c", "--scores", "1,5,2", "--epsilon", "2"},
			check: func(t *testing.T, r report) {
				if r.UtilityBound == nil || *r.UtilityBound <= 0 {
					t.Errorf("utility bound %v, want a positive number", r.UtilityBound)
				}
				if r.Cost.Epsilon != 2 {
					t.Errorf("cost %+v, want ε = 2", r.Cost)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"release"}, tc.args...)
			args = append(args, "--json")
			out, errOut, code := runCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if r.Mechanism != tc.args[0] {
				t.Errorf("mechanism %q, want %q", r.Mechanism, tc.args[0])
			}
			tc.check(t, r)
		})
	}
}

func TestReleaseBadParameters(t *testing.T) {
	// Every case exits non-zero, prints nothing on stdout, and names the
	// offending flag and value on stderr.
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "no mechanism", args: nil, want: []string{"one of", "laplace"}},
		{name: "unknown mechanism", args: []string{"laplase", "--value", "1", "--epsilon", "1"}, want: []string{`"laplase"`, "laplace"}},
		{name: "epsilon zero", args: []string{"laplace", "--value", "1", "--epsilon", "0"}, want: []string{"--epsilon", "0"}},
		{name: "epsilon negative", args: []string{"laplace", "--value", "1", "--epsilon", "-1"}, want: []string{"--epsilon", "-1"}},
		{name: "epsilon NaN", args: []string{"laplace", "--value", "1", "--epsilon", "NaN"}, want: []string{"--epsilon", "NaN"}},
		{name: "epsilon Inf", args: []string{"laplace", "--value", "1", "--epsilon", "Inf"}, want: []string{"--epsilon", "+Inf"}},
		{name: "epsilon -Inf", args: []string{"geometric", "--value", "1", "--epsilon", "-Inf"}, want: []string{"--epsilon", "-Inf"}},
		{name: "epsilon missing", args: []string{"laplace", "--value", "1"}, want: []string{"--epsilon", "required"}},
		{name: "epsilon not a number", args: []string{"laplace", "--value", "1", "--epsilon", "lots"}, want: []string{"epsilon", "lots"}},
		{name: "value missing", args: []string{"laplace", "--epsilon", "1"}, want: []string{"--value", "required"}},
		{name: "value NaN", args: []string{"laplace", "--value", "NaN", "--epsilon", "1"}, want: []string{"--value", "NaN"}},
		{name: "value Inf", args: []string{"gaussian", "--value", "Inf", "--epsilon", "1", "--delta", "1e-5"}, want: []string{"--value", "Inf"}},
		{name: "value not a number", args: []string{"laplace", "--value", "three", "--epsilon", "1"}, want: []string{"--value", "three"}},
		{name: "sensitivity zero", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--sensitivity", "0"}, want: []string{"--sensitivity", "0"}},
		{name: "sensitivity negative", args: []string{"gaussian", "--value", "1", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "-2"}, want: []string{"--sensitivity", "-2"}},
		{name: "sensitivity NaN", args: []string{"exponential", "--candidates", "a,b", "--scores", "1,2", "--epsilon", "1", "--sensitivity", "NaN"}, want: []string{"--sensitivity", "NaN"}},
		{name: "sensitivity Inf", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--sensitivity", "Inf"}, want: []string{"--sensitivity", "+Inf"}},
		{name: "geometric fractional value", args: []string{"geometric", "--value", "3.5", "--epsilon", "1"}, want: []string{"--value", "3.5", "integer"}},
		{name: "geometric fractional sensitivity", args: []string{"geometric", "--value", "3", "--epsilon", "1", "--sensitivity", "1.5"}, want: []string{"--sensitivity", "1.5"}},
		{name: "gaussian delta missing", args: []string{"gaussian", "--value", "1", "--epsilon", "1"}, want: []string{"--delta", "required"}},
		{name: "gaussian delta zero", args: []string{"gaussian", "--value", "1", "--epsilon", "1", "--delta", "0"}, want: []string{"--delta", "0"}},
		{name: "gaussian delta one", args: []string{"gaussian", "--value", "1", "--epsilon", "1", "--delta", "1"}, want: []string{"--delta", "1"}},
		{name: "gaussian delta NaN", args: []string{"gaussian", "--value", "1", "--epsilon", "1", "--delta", "NaN"}, want: []string{"--delta", "NaN"}},
		{name: "delta on laplace", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--delta", "1e-5"}, want: []string{"--delta", "laplace"}},
		{name: "rr bad answer", args: []string{"randomized-response", "--value", "maybe", "--epsilon", "1"}, want: []string{"--value", "maybe"}},
		{name: "rr p too small", args: []string{"randomized-response", "--value", "yes", "--p", "0.4"}, want: []string{"--p", "0.4"}},
		{name: "rr p one", args: []string{"randomized-response", "--value", "yes", "--p", "1"}, want: []string{"--p", "1"}},
		{name: "rr both p and epsilon", args: []string{"randomized-response", "--value", "yes", "--p", "0.7", "--epsilon", "1"}, want: []string{"--epsilon", "--p"}},
		{name: "rr neither p nor epsilon", args: []string{"randomized-response", "--value", "yes"}, want: []string{"--epsilon", "--p"}},
		{name: "k-ary value outside domain", args: []string{"randomized-response", "--domain", "a,b", "--value", "c", "--epsilon", "1"}, want: []string{"--value", `"c"`}},
		{name: "k-ary duplicate domain", args: []string{"randomized-response", "--domain", "a,a", "--value", "a", "--epsilon", "1"}, want: []string{"--domain", `"a"`}},
		{name: "k-ary one value", args: []string{"randomized-response", "--domain", "a", "--value", "a", "--epsilon", "1"}, want: []string{"--domain", "two"}},
		{name: "empty candidates", args: []string{"exponential", "--candidates", "", "--scores", "", "--epsilon", "1"}, want: []string{"--candidates", "empty"}},
		{name: "missing candidates", args: []string{"report-noisy-max", "--epsilon", "1"}, want: []string{"--candidates"}},
		{name: "mismatched scores", args: []string{"exponential", "--candidates", "a,b,c", "--scores", "1,2", "--epsilon", "1"}, want: []string{"--scores", "2 scores", "3"}},
		{name: "NaN score", args: []string{"report-noisy-max", "--candidates", "a,b", "--scores", "1,NaN", "--epsilon", "1"}, want: []string{"--scores", "NaN"}},
		{name: "Inf score", args: []string{"exponential", "--candidates", "a,b", "--scores", "Inf,1", "--epsilon", "1"}, want: []string{"--scores", "Inf"}},
		{name: "bad noise", args: []string{"report-noisy-max", "--candidates", "a,b", "--scores", "1,2", "--epsilon", "1", "--noise", "laplace"}, want: []string{"--noise", "laplace"}},
		{name: "count zero", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--count", "0"}, want: []string{"--count", "0"}},
		{name: "count too large for JSON", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--count", "20000000", "--json"}, want: []string{"--count", "20000000", "--json"}},
		{name: "confidence one", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--confidence", "1"}, want: []string{"--confidence", "1"}},
		{name: "confidence NaN", args: []string{"laplace", "--value", "1", "--epsilon", "1", "--confidence", "NaN"}, want: []string{"--confidence", "NaN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"release"}, tc.args...)
			out, errOut, code := runCLI(args...)
			if code == 0 {
				t.Fatalf("exit 0, output %q; want an error", out)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error %q does not mention %q", strings.TrimSpace(errOut), w)
				}
			}
		})
	}
}

// TestReleaseChargesTheLedger: with --dataset, the cost of all --count
// releases is charged before anything is printed; without a grant, over
// the budget, or with the insecure seed, nothing is printed or charged.
func TestReleaseChargesTheLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if _, errOut, code := runCLI("budget", "grant", "--ledger", path, "--dataset", "clinic", "--analyst", "alice", "--epsilon", "1"); code != 0 {
		t.Fatalf("grant: %s", errOut)
	}
	base := []string{"release", "laplace", "--value", "3", "--ledger", path, "--dataset", "clinic", "--analyst", "alice"}
	tests := []struct {
		name       string
		extra      []string
		wantCode   int
		wantLines  int
		wantErr    string
		wantSpentε float64
	}{
		{"four releases of 0.125", []string{"--epsilon", "0.125", "--count", "4"}, 0, 4, "charged", 0.5},
		{"over the budget", []string{"--epsilon", "0.25", "--count", "3"}, 1, 0, "nothing was released", 0.5},
		{"fits exactly", []string{"--epsilon", "0.5"}, 0, 1, "charged", 1},
		{"insecure seed", []string{"--epsilon", "0.001", "--insecure-seed", "3"}, 1, 0, "--insecure-seed provides no privacy", 1},
		{"no grant", []string{"--epsilon", "0.001", "--analyst", "bob"}, 1, 0, "no budget for analyst \"bob\"", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(append(append([]string{}, base...), tt.extra...)...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.wantCode, tt.wantErr)
			}
			if n := len(strings.Fields(out)); n != tt.wantLines {
				t.Errorf("%d values printed, want %d", n, tt.wantLines)
			}
			l, err := ledger.Open(path, ledger.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			st, err := l.Status(ledger.Key{Dataset: "clinic", Analyst: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if st.Spent.Epsilon != tt.wantSpentε {
				t.Errorf("spent ε = %v, want %v", st.Spent.Epsilon, tt.wantSpentε)
			}
		})
	}
}
