package synth

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
)

// Result is a synthetic table with what it was made from.
type Result struct {
	// Plan is the release's plan.
	Plan *Plan
	// Measurements are the noisy marginals.
	Measurements *Measurements
	// Model is the fitted model.
	Model *Model
	// Rows holds the sampled value indices by column (Sample's layout).
	Rows [][]int32
	// N is the number of rows sampled.
	N int
	// EstimatedRows is the DP estimate of the table's size, rounded, at
	// most MaxRows.
	EstimatedRows int64
	// Capped is true when the estimate exceeded MaxRows and was cut to it.
	Capped bool
}

// Synthesize measures the bounded data, fits the model and samples the
// rows: Plan.Rows of them, or the DP estimate of the table's size. src
// must be a secure source outside tests.
func (p *Plan) Synthesize(data *Data, src random.Source) (*Result, error) {
	m, err := p.Measure(data, src)
	if err != nil {
		return nil, err
	}
	return p.finish(m, src), nil
}

// finish fits the model to the measurements and samples the rows.
func (p *Plan) finish(m *Measurements, src random.Source) *Result {
	md := Fit(p, m)
	est, capped := int64(0), false
	if md.N > 0 {
		est = int64(math.Min(math.Round(md.N), MaxRows))
		capped = md.N > MaxRows
	}
	n := p.Rows
	if n == 0 {
		n = est
	}
	return &Result{Plan: p, Measurements: m, Model: md, Rows: md.Sample(int(n), src), N: int(n), EstimatedRows: est, Capped: capped && p.Rows == 0}
}

// WriteCSV writes the synthetic rows as CSV with the declared column
// names; NULL is an empty field. src draws the numbers within their bins.
func (r *Result) WriteCSV(w io.Writer, src random.Source) error {
	cw := csv.NewWriter(w)
	header := make([]string, len(r.Plan.Attrs))
	for j, a := range r.Plan.Attrs {
		header[j] = a.Name
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(r.Plan.Attrs))
	for i := 0; i < r.N; i++ {
		for j, a := range r.Plan.Attrs {
			rec[j] = formatValue(a.Value(int(r.Rows[j][i]), src))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// SidecarFormat names the version of the sidecar file's layout.
const SidecarFormat = "dpstat-synth/1"

// Sidecar is what the file <out>.dpstat.json beside a synthetic table
// records: what was released, what it cost, to whose budget, and how.
type Sidecar struct {
	// Format is SidecarFormat.
	Format string `json:"format"`
	// Mechanism names the mechanism and its accounting.
	Mechanism string `json:"mechanism"`
	// Table is the declared table copied.
	Table string `json:"table"`
	// Created is the time of the release.
	Created time.Time `json:"created"`
	// Cost is what the ledger was charged.
	Cost struct {
		Epsilon float64 `json:"epsilon"`
		Delta   float64 `json:"delta"`
		Rho     float64 `json:"rho"`
	} `json:"cost"`
	// Ledger names the budget charged and the release's id in it.
	Ledger struct {
		Dataset   string `json:"dataset"`
		Analyst   string `json:"analyst"`
		ReleaseID uint64 `json:"release_id"`
	} `json:"ledger"`
	// Rows is the number of rows written.
	Rows int `json:"rows"`
	// RowsEstimated is true when Rows is the DP estimate of the table's
	// size (no --rows).
	RowsEstimated bool `json:"rows_estimated"`
	// RowsPerPerson is the contribution bound applied.
	RowsPerPerson int64 `json:"rows_per_person"`
	// Columns describes the output's columns and their domains.
	Columns []SidecarAttr `json:"columns"`
	// LeftOut lists the declared columns not in the output, with why.
	LeftOut []LeftOut `json:"left_out"`
	// Marginals lists what was measured, with the noise.
	Marginals SidecarMargins `json:"marginals"`
}

// SidecarAttr describes one column of the synthetic table.
type SidecarAttr struct {
	// Name is the declared column name.
	Name string `json:"name"`
	// Type is the declared type.
	Type string `json:"type"`
	// Kind says how the column was discretized.
	Kind Kind `json:"kind"`
	// Nullable is true when NULL is a value of the domain.
	Nullable bool `json:"nullable"`
	// Domain labels each value or bin, NULL last.
	Domain []string `json:"domain"`
}

// SidecarMargins lists the measured marginals and their noise.
type SidecarMargins struct {
	// OneWay lists the columns whose 1-way marginals were measured.
	OneWay []string `json:"one_way"`
	// SigmaOneWay is their discrete Gaussian's σ, in counts.
	SigmaOneWay float64 `json:"sigma_one_way"`
	// TwoWay lists the tree's pairs of columns.
	TwoWay [][]string `json:"two_way"`
	// SigmaTwoWay is the σ of their 2-way marginals.
	SigmaTwoWay float64 `json:"sigma_two_way,omitempty"`
	// SelectEpsilon is the ε of each round of the tree's selection.
	SelectEpsilon float64 `json:"select_epsilon,omitempty"`
}

// Sidecar returns the sidecar record of the result.
func (r *Result) Sidecar(dataset, analyst string, releaseID uint64, now time.Time) *Sidecar {
	p := r.Plan
	s := &Sidecar{Format: SidecarFormat, Mechanism: "MST (McKenna, Miklau & Sheldon 2021), zCDP, discrete Gaussian", Table: p.Table.Name, Created: now.UTC(),
		Rows: r.N, RowsEstimated: p.Rows == 0, RowsPerPerson: p.RowsPerPerson, LeftOut: p.LeftOut}
	if s.LeftOut == nil {
		s.LeftOut = []LeftOut{}
	}
	s.Cost.Epsilon, s.Cost.Delta, s.Cost.Rho = p.Epsilon, p.Delta, p.Rho
	s.Ledger.Dataset, s.Ledger.Analyst, s.Ledger.ReleaseID = dataset, analyst, releaseID
	for _, a := range p.Attrs {
		sa := SidecarAttr{Name: a.Name, Type: string(a.Type), Kind: a.Kind, Nullable: a.Nullable}
		for i := 0; i < a.Size(); i++ {
			sa.Domain = append(sa.Domain, a.Label(i))
		}
		s.Columns = append(s.Columns, sa)
		s.Marginals.OneWay = append(s.Marginals.OneWay, a.Name)
	}
	s.Marginals.SigmaOneWay = p.One.Sigma()
	s.Marginals.TwoWay = [][]string{}
	if r.Measurements != nil {
		for _, e := range r.Measurements.Tree {
			s.Marginals.TwoWay = append(s.Marginals.TwoWay, []string{p.Attrs[e[0]].Name, p.Attrs[e[1]].Name})
		}
	}
	if p.Edges() > 0 {
		s.Marginals.SigmaTwoWay = p.Two.Sigma()
		s.Marginals.SelectEpsilon = p.SelectEpsilon
	}
	return s
}

// Describe returns the plan for people, one line each: the cost, the
// columns with their domains, what is left out, and each step's noise.
func (p *Plan) Describe() []string {
	var out []string
	out = append(out, fmt.Sprintf("synthetic copy of table %s by MST: cost ε=%g δ=%g (ρ=%.6g zCDP)", p.Table.Name, p.Epsilon, p.Delta, p.Rho))
	if p.Table.HasPrivacyUnit() {
		out = append(out, fmt.Sprintf("contribution bound: at most %d rows per %s (max_groups_per_unit × max_rows_per_group), chosen at random; sensitivity %d", p.RowsPerPerson, p.Table.PrivacyUnit, p.Sensitivity))
	} else {
		out = append(out, fmt.Sprintf("one row per person; sensitivity %d", p.Sensitivity))
	}
	for _, a := range p.Attrs {
		var dom []string
		for i := 0; i < a.Size(); i++ {
			dom = append(dom, a.Label(i))
		}
		what := "public values"
		switch a.Kind {
		case Binned:
			what = fmt.Sprintf("%d bins over [%g, %g]", len(a.Edges), a.Lower, a.Upper)
			if a.Type.Temporal() {
				unit := a.Calendar
				if unit == "" {
					unit = "equal"
				}
				what = fmt.Sprintf("%d %s bins over [%s, %s]", len(a.Edges), unit,
					schema.FormatValue(a.Type, int64(a.Lower)), schema.FormatValue(a.Type, int64(a.Upper)))
			}
		case Boolean:
			what = "bool"
		}
		if a.Nullable {
			what += ", NULL its own value"
		}
		out = append(out, fmt.Sprintf("column %s: %d values (%s): %s", a.Name, a.Size(), what, abbreviate(dom, 12)))
	}
	for _, l := range p.LeftOut {
		out = append(out, fmt.Sprintf("left out: %s (%s)", l.Column, l.Reason))
	}
	if p.Edges() == 0 {
		out = append(out, fmt.Sprintf("step 1: the 1-way marginal of the one column, discrete Gaussian σ=%.4g (all of ρ)", p.One.Sigma()))
	} else {
		part := p.Rho / 3
		out = append(out,
			fmt.Sprintf("step 1 (ρ=%.4g): %d 1-way marginals, discrete Gaussian σ=%.4g each", part, len(p.Attrs), p.One.Sigma()),
			fmt.Sprintf("step 2 (ρ=%.4g): a spanning tree of %d edges chosen by %d rounds of the exponential mechanism, ε=%.4g each (score: L1 error of independence minus the expected L1 noise of measuring the pair; sensitivity %d)", part, p.Edges(), p.Edges(), p.SelectEpsilon, p.Sensitivity),
			fmt.Sprintf("step 3 (ρ=%.4g): the %d 2-way marginals of the tree's edges (chosen from the data in step 2), discrete Gaussian σ=%.4g each", part, p.Edges(), p.Two.Sigma()))
	}
	rows := "the DP estimate of the table's size, from the noisy marginals"
	if p.Rows > 0 {
		rows = strconv.FormatInt(p.Rows, 10)
	}
	out = append(out, "rows: "+rows+"; numbers drawn uniformly within their bins")
	return out
}

func abbreviate(vs []string, n int) string {
	if len(vs) <= n {
		return strings.Join(vs, ", ")
	}
	return strings.Join(vs[:n-1], ", ") + fmt.Sprintf(", … (%d more), ", len(vs)-n) + vs[len(vs)-1]
}

// Independent is the baseline that treats columns as independent, at the
// same cost: every 1-way marginal measured with all of ρ (no tree), the
// same fit (each column's distribution projected onto the simplex), and
// rows sampled column by column. Quality figures compare MST against it.
func (p *Plan) Independent(data *Data, src random.Source) (*Result, error) {
	q := *p
	g, err := newGauss(float64(p.Sensitivity)*math.Sqrt(float64(len(p.Attrs))/(2*p.Rho)), p.Sensitivity)
	if err != nil {
		return nil, err
	}
	q.One, q.Two, q.SelectEpsilon = g, Gauss{}, 0
	m := &Measurements{}
	for j := range q.Attrs {
		m.One = append(m.One, q.One.Measure(marginal(&q, data, j), src))
	}
	return q.finish(m, src), nil
}
