package synth

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/audit"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
)

func loadExample(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load("../examples/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// table declares a table of one row per person with the given columns.
func table(t *testing.T, yaml string) *catalog.Table {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse([]byte("budget: {epsilon: 10, delta: 1e-5}\ntables:\n  t:\n    source: t.csv\n"+yaml), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cat.Table("t")
}

func TestPlanAdult(t *testing.T) {
	cat := loadExample(t)
	p, err := NewPlan(cat.Table("adult"), Options{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range p.Attrs {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "age,workclass,education_num,marital_status,relationship,race,sex,capital_gain,capital_loss,hours_per_week,income" {
		t.Errorf("columns %s", got)
	}
	if len(p.LeftOut) != 3 || p.LeftOut[0].Column != "education" {
		t.Errorf("left out %v", p.LeftOut)
	}
	// Domains: 16 bins for age, 8 values + NULL for workclass, one bin per
	// value of education_num.
	for _, c := range []struct {
		name string
		size int
	}{{"age", 16}, {"workclass", 9}, {"education_num", 16}, {"sex", 2}} {
		for _, a := range p.Attrs {
			if a.Name == c.name && a.Size() != c.size {
				t.Errorf("%s: %d values, want %d", c.name, a.Size(), c.size)
			}
		}
	}
	// ρ converts back to ε, and the three steps' ρ add up to at most ρ.
	eps, err := accounting.ZCDPToEpsilon(p.Rho, p.Delta)
	if err != nil || eps > 1 || eps < 0.9999 {
		t.Errorf("ρ=%v converts to ε=%v (%v), want just below 1", p.Rho, eps, err)
	}
	k := float64(len(p.Attrs))
	rho1 := k * 1 / (2 * p.One.Sigma() * p.One.Sigma())
	rho2 := (k - 1) / (2 * p.Two.Sigma() * p.Two.Sigma())
	rhoSel := (k - 1) * p.SelectEpsilon * p.SelectEpsilon / 8
	if sum := rho1 + rho2 + rhoSel; sum > p.Rho || sum < p.Rho*(1-1e-5) {
		t.Errorf("steps' ρ add to %v, want at most and close to %v", sum, p.Rho)
	}
	visits, err := NewPlan(cat.Table("visits"), Options{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if visits.RowsPerPerson != 3 || visits.Sensitivity != 3 || visits.LeftOut[0].Column != "visitor_id" {
		t.Errorf("visits: %d rows per person, sensitivity %d, left out %v", visits.RowsPerPerson, visits.Sensitivity, visits.LeftOut)
	}
}

func TestPlanRefusals(t *testing.T) {
	adult := loadExample(t).Table("adult")
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"epsilon zero", Options{Epsilon: 0, Delta: 1e-6}, "--epsilon 0: want a finite number > 0"},
		{"epsilon NaN", Options{Epsilon: math.NaN(), Delta: 1e-6}, "--epsilon NaN"},
		{"epsilon Inf", Options{Epsilon: math.Inf(1), Delta: 1e-6}, "--epsilon +Inf"},
		{"delta zero", Options{Epsilon: 1}, "--delta 0: want a number in (0, 1)"},
		{"delta one", Options{Epsilon: 1, Delta: 1}, "--delta 1"},
		{"bins", Options{Epsilon: 1, Delta: 1e-6, Bins: -2}, "--bins -2: want an integer from 1 to 1000"},
		{"rows", Options{Epsilon: 1, Delta: 1e-6, Rows: -1}, "--rows -1"},
		{"too many rows", Options{Epsilon: 1, Delta: 1e-6, Rows: MaxRows + 1}, "--rows 10000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPlan(adult, tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := newGauss(3e13, 1); err == nil || !strings.Contains(err.Error(), "want a larger epsilon") {
		t.Errorf("σ beyond the sampler's range: %v", err)
	}
	nothing := table(t, "    columns:\n      note: {type: text}\n      x: {type: float}\n")
	_, err := NewPlan(nothing, Options{Epsilon: 1, Delta: 1e-6})
	if err == nil || !strings.Contains(err.Error(), "note: a text column without a public values: list") || !strings.Contains(err.Error(), "declare a values: list") {
		t.Errorf("table without domains: %v", err)
	}
}

func TestBinEdges(t *testing.T) {
	tests := []struct {
		typ    schema.Type
		lo, hi float64
		bins   int
		want   []float64
	}{
		{schema.Int, 1, 4, 16, []float64{1, 2, 3, 4}},
		{schema.Int, 0, 9, 4, []float64{0, 2, 5, 7}},
		{schema.Int, -(1 << 53), 1 << 53, 2, []float64{-(1 << 53), 0}},
		{schema.Float, 0, 1, 4, []float64{0, 0.25, 0.5, 0.75}},
		{schema.Float, -math.MaxFloat64, math.MaxFloat64, 2, []float64{-math.MaxFloat64, 0}},
		{schema.Float, 3, 3, 5, []float64{3}},
	}
	for _, tt := range tests {
		got := binEdges(tt.typ, tt.lo, tt.hi, tt.bins)
		if len(got) != len(tt.want) {
			t.Errorf("binEdges(%s, %v, %v, %d) = %v, want %v", tt.typ, tt.lo, tt.hi, tt.bins, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("binEdges(%s, %v, %v, %d) = %v, want %v", tt.typ, tt.lo, tt.hi, tt.bins, got, tt.want)
				break
			}
		}
	}
}

func TestRhoFor(t *testing.T) {
	// Reference (privacy rules): ρ = 0.02, δ = 1e-5 → ε = 0.7943 (tight);
	// ρ = 0.5 → 4.7284.
	for _, c := range []struct{ eps, delta, rho float64 }{{0.7943, 1e-5, 0.02}, {4.7284, 1e-5, 0.5}} {
		got, err := rhoFor(c.eps, c.delta)
		if err != nil || math.Abs(got-c.rho)/c.rho > 1e-3 {
			t.Errorf("rhoFor(%v, %v) = %v, %v; want about %v", c.eps, c.delta, got, err, c.rho)
		}
	}
}

// TestMeasureNoiseScale checks the measurement's noise: centred on the
// count, with the plan's σ, on the grid. With n = 40000 draws the mean is
// checked to 6 standard errors and the variance to 6 standard deviations
// of its estimate (sqrt(2/n)); each fails by chance with probability
// below 1e-8.
func TestMeasureNoiseScale(t *testing.T) {
	tests := []struct {
		name  string
		sigma float64
		count int64
	}{
		{"small", 0.7, 3},
		{"adult eps 1", 26.03, 1000},
		{"large", 12345.6, 1 << 30},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := newGauss(tt.sigma, 1)
			if err != nil {
				t.Fatal(err)
			}
			if s := g.Sigma(); s < tt.sigma || s > tt.sigma*(1+1e-5) {
				t.Fatalf("σ %v for %v", s, tt.sigma)
			}
			const n = 40000
			counts := make([]int64, n)
			for j := range counts {
				counts[j] = tt.count
			}
			out := g.Measure(counts, random.NewInsecureSeeded(uint64(100+i)))
			sum, sq := 0.0, 0.0
			for _, v := range out {
				d := v - float64(tt.count)
				if math.Ldexp(d, g.Exp) != math.Trunc(math.Ldexp(d, g.Exp)) {
					t.Fatalf("%v is not on the grid 2^-%d", v, g.Exp)
				}
				sum += d
				sq += d * d
			}
			mean := sum / n
			v := sq/n - mean*mean
			s2 := g.Sigma() * g.Sigma()
			if math.Abs(mean) > 6*g.Sigma()/math.Sqrt(n) {
				t.Errorf("mean noise %v, σ %v", mean, g.Sigma())
			}
			if math.Abs(v/s2-1) > 6*math.Sqrt(2.0/n) {
				t.Errorf("variance %v, want σ² = %v", v, s2)
			}
		})
	}
}

// TestAuditMeasurement runs the statistical privacy audit on one cell of
// the 1-way measurement, a count of c against c + Δ (one person added),
// with the σ the plan gives: the audit must not refute the ε that the
// cell's ρ = Δ²/(2σ²) converts to. Its failure probability is
// 1 − Confidence = 1e-6. A measurement with σ eight times too small must be
// refuted (with these seeds it is, by a wide margin).
func TestAuditMeasurement(t *testing.T) {
	tbl := table(t, "    columns:\n      s: {type: text, values: [a, b]}\n")
	p, err := NewPlan(tbl, Options{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := accounting.ZCDPToEpsilon(1/(2*p.One.Sigma()*p.One.Sigma()), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	cell := func(g Gauss, c int64) audit.Sampler[float64] {
		return func(src random.Source) float64 { return g.Measure([]int64{c}, src)[0] }
	}
	res, err := audit.Float(cell(p.One, 40), cell(p.One, 41), audit.Options{Samples: 60000, Delta: 1e-6, Source: random.NewInsecureSeeded(7)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Refutes(claim) {
		t.Errorf("audit refutes ε=%v: %v", claim, res)
	}
	broken := Gauss{Exp: p.One.Exp, Steps: p.One.Steps / 8}
	res, err = audit.Float(cell(broken, 40), cell(broken, 41), audit.Options{Samples: 60000, Delta: 1e-6, Source: random.NewInsecureSeeded(8)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Refutes(claim) {
		t.Errorf("the audit does not refute ε=%v for σ/8: %v", claim, res)
	}
}

// chain builds data of n rows over k binary columns where column 1 copies
// column 0 and column 3 copies column 2, the others independent and
// uniform (exact expected counts).
func chain(n int64) *Data {
	d := &Data{}
	for x := 0; x < 32; x++ {
		c := []int32{int32(x & 1), int32(x & 1), int32(x >> 1 & 1), int32(x >> 1 & 1), int32(x >> 2 & 1)}
		if x>>3 != 0 {
			continue
		}
		d.Cells = append(d.Cells, c)
		d.Counts = append(d.Counts, n/8)
	}
	return d
}

func binaryTable(t *testing.T) *catalog.Table {
	return table(t, "    columns:\n      a: {type: bool}\n      b: {type: bool}\n      c: {type: bool}\n      d: {type: bool}\n      e: {type: bool}\n")
}

// TestSelectTree: columns a=b and c=d are the strongest dependences (score
// about n each, all others about 0), so the tree must hold both pairs. At
// ε = 50 each round's selection ε is about 3.4, and a wrong pick within a
// round has probability below 10·exp(−3.4·8000/2) ≈ 0: the test fails by
// chance with probability far below 1e-100.
func TestSelectTree(t *testing.T) {
	p, err := NewPlan(binaryTable(t), Options{Epsilon: 50, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		m, err := p.Measure(chain(16000), random.NewInsecureSeeded(seed))
		if err != nil {
			t.Fatal(err)
		}
		has := map[[2]int]bool{}
		for _, e := range m.Tree {
			has[e] = true
		}
		if len(m.Tree) != 4 || !has[[2]int{0, 1}] || !has[[2]int{2, 3}] {
			t.Errorf("seed %d: tree %v lacks (0,1) or (2,3)", seed, m.Tree)
		}
	}
}

// TestFitKnownDistribution fits measurements without noise of a known
// chain X0 → X1 → X2 and must recover its marginals and conditionals; with
// noise (negative counts included) the fit must still be a distribution
// with consistent margins.
func TestFitKnownDistribution(t *testing.T) {
	tbl := table(t, "    columns:\n      x: {type: text, values: [a, b, c]}\n      y: {type: text, values: [u, v]}\n      z: {type: text, values: [p, q]}\n")
	p, err := NewPlan(tbl, Options{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	px := []float64{0.5, 0.3, 0.2}
	pyx := [][]float64{{0.9, 0.1}, {0.2, 0.8}, {0.5, 0.5}}
	pzy := [][]float64{{0.7, 0.3}, {0.1, 0.9}}
	const n = 100000.0
	xy := make([]float64, 6)
	yz := make([]float64, 4)
	py := make([]float64, 2)
	for a := range px {
		for b := range 2 {
			xy[a*2+b] = n * px[a] * pyx[a][b]
			py[b] += px[a] * pyx[a][b]
		}
	}
	pz := make([]float64, 2)
	for b := range 2 {
		for c := range 2 {
			yz[b*2+c] = n * py[b] * pzy[b][c]
			pz[c] += py[b] * pzy[b][c]
		}
	}
	scale := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i := range v {
			out[i] = n * v[i]
		}
		return out
	}
	m := &Measurements{One: [][]float64{scale(px), scale(py), scale(pz)}, Tree: [][2]int{{0, 1}, {1, 2}}, Two: [][]float64{xy, yz}}
	md := Fit(p, m)
	if math.Abs(md.N-n) > 1e-6*n {
		t.Errorf("N = %v, want %v", md.N, n)
	}
	near := func(what string, got, want []float64) {
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				t.Errorf("%s = %v, want %v", what, got, want)
				return
			}
		}
	}
	near("P(x)", md.Marg[0], px)
	near("P(y)", md.Marg[1], py)
	near("P(z)", md.Marg[2], pz)
	near("P(y|x)", md.Cond[1], []float64{0.9, 0.1, 0.2, 0.8, 0.5, 0.5})
	near("P(z|y)", md.Cond[2], []float64{0.7, 0.3, 0.1, 0.9})

	// Noisy measurements with negative cells.
	noisy := &Measurements{
		One:  [][]float64{{50, -20, 5}, {-3, 40}, {30, 30}},
		Tree: [][2]int{{0, 1}, {2, 1}},
		Two:  [][]float64{{20, -5, 1, 30, -9, 2}, {10, -4, 25, 12}},
	}
	md = Fit(p, noisy)
	for j, marg := range md.Marg {
		s := 0.0
		for _, v := range marg {
			if v < 0 {
				t.Errorf("column %d: negative probability %v", j, marg)
			}
			s += v
		}
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("column %d sums to %v", j, s)
		}
	}
	for _, c := range []int{1, 2} {
		q := md.Parent[c]
		if q < 0 {
			continue
		}
		dc := p.Attrs[c].Size()
		for b := 0; b < dc; b++ {
			s := 0.0
			for a, pa := range md.Marg[q] {
				s += pa * md.Cond[c][a*dc+b]
			}
			if math.Abs(s-md.Marg[c][b]) > 1e-6 {
				t.Errorf("column %d: margin %v through its parent, %v fitted", c, s, md.Marg[c][b])
			}
		}
	}
}

func TestProjectSimplex(t *testing.T) {
	tests := []struct {
		v     []float64
		total float64
		want  []float64
	}{
		{[]float64{1, 2, 3, 4}, 10, []float64{0.1, 0.2, 0.3, 0.4}},
		{[]float64{-5, 10}, 10, []float64{0, 1}},
		{[]float64{3, 3, -100}, 4, []float64{0.5, 0.5, 0}},
		{[]float64{-1, -1}, 0, []float64{0.5, 0.5}},
	}
	for _, tt := range tests {
		got := projectSimplex(tt.v, tt.total)
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-9 {
				t.Errorf("projectSimplex(%v, %v) = %v, want %v", tt.v, tt.total, got, tt.want)
				break
			}
		}
	}
}

// TestSampleFrequencies: the counts allocated to each value are within one
// row of n·P(value) at the root and within each group of the parent's
// value (deterministic bounds: no false failures).
func TestSampleFrequencies(t *testing.T) {
	tbl := table(t, "    columns:\n      x: {type: text, values: [a, b, c]}\n      y: {type: int, lower: 0, upper: 99}\n")
	p, err := NewPlan(tbl, Options{Epsilon: 1, Delta: 1e-6, Bins: 4})
	if err != nil {
		t.Fatal(err)
	}
	md := &Model{Attrs: p.Attrs, N: 1000, Marg: [][]float64{{0.5, 0.3, 0.2}, {0.25, 0.25, 0.25, 0.25}},
		Parent: []int{-1, 0}, Order: []int{0, 1},
		Cond: [][]float64{nil, {0.1, 0.2, 0.3, 0.4, 1, 0, 0, 0, 0.25, 0.25, 0.25, 0.25}}}
	const n = 10001
	src := random.NewInsecureSeeded(3)
	rows := md.Sample(n, src)
	root := make([]int, 3)
	joint := make([]int, 12)
	for r := 0; r < n; r++ {
		root[rows[0][r]]++
		joint[int(rows[0][r])*4+int(rows[1][r])]++
	}
	for a, c := range root {
		if math.Abs(float64(c)-n*md.Marg[0][a]) >= 1 {
			t.Errorf("value %d: %d rows, want %v", a, c, n*md.Marg[0][a])
		}
		for b := 0; b < 4; b++ {
			want := float64(c) * md.Cond[1][a*4+b]
			if math.Abs(float64(joint[a*4+b])-want) >= 1 {
				t.Errorf("(%d,%d): %d rows, want %v", a, b, joint[a*4+b], want)
			}
		}
	}
	// Values within their bins, integers for an int column.
	y := p.Attrs[1]
	for b := 0; b < 4; b++ {
		lo, hi := y.binRange(b)
		for range 200 {
			v, ok := y.Value(b, src).(int64)
			if !ok || float64(v) < lo || float64(v) > hi {
				t.Fatalf("bin %d [%v, %v]: value %v", b, lo, hi, v)
			}
		}
	}
}

func TestAllocate(t *testing.T) {
	src := random.NewInsecureSeeded(9)
	for _, tt := range []struct {
		n     int
		probs []float64
	}{{10, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}}, {0, []float64{1}}, {7, []float64{0, 0}}, {5, []float64{0.999, 0.001}}} {
		c := allocate(tt.n, tt.probs, src)
		s := 0
		for v, x := range c {
			s += x
			if tt.probs[0]+tt.probs[len(tt.probs)-1] > 0 && math.Abs(float64(x)-float64(tt.n)*tt.probs[v]) >= 1 {
				t.Errorf("allocate(%d, %v) = %v", tt.n, tt.probs, c)
			}
		}
		if s != tt.n {
			t.Errorf("allocate(%d, %v) = %v: sum %d", tt.n, tt.probs, c, s)
		}
	}
}

func TestLongValueListLeftOut(t *testing.T) {
	var vals []string
	for i := 0; i < MaxDomain; i++ {
		vals = append(vals, "v"+strconv.Itoa(i))
	}
	tbl := table(t, "    columns:\n      a: {type: text, values: ["+strings.Join(vals, ", ")+"]}\n      b: {type: bool}\n")
	p, err := NewPlan(tbl, Options{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Attrs) != 1 || len(p.LeftOut) != 1 || !strings.Contains(p.LeftOut[0].Reason, "1001 values, more than the 1000") {
		t.Errorf("attrs %d, left out %v", len(p.Attrs), p.LeftOut)
	}
}

// TestFitSampleRobust fits and samples from arbitrary measurements (all
// negative, zero, huge, mixed): the model is always a distribution and
// sampling never fails.
func TestFitSampleRobust(t *testing.T) {
	p, err := NewPlan(binaryTable(t), Options{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	src := random.NewInsecureSeeded(11)
	fills := []func(i int) float64{
		func(int) float64 { return -5 },
		func(int) float64 { return 0 },
		func(int) float64 { return 1e300 },
		func(i int) float64 { return float64(int64(src.Uint64()%2001) - 1000) },
	}
	for fi, fill := range fills {
		m := &Measurements{Tree: [][2]int{{0, 1}, {1, 2}, {3, 2}, {4, 0}}}
		for range p.Attrs {
			m.One = append(m.One, []float64{fill(0), fill(1)})
		}
		for range m.Tree {
			m.Two = append(m.Two, []float64{fill(0), fill(1), fill(2), fill(3)})
		}
		md := Fit(p, m)
		for j, marg := range md.Marg {
			s := 0.0
			for _, v := range marg {
				if !(v >= 0) {
					t.Fatalf("fill %d: column %d: %v", fi, j, marg)
				}
				s += v
			}
			if math.Abs(s-1) > 1e-9 {
				t.Fatalf("fill %d: column %d sums to %v", fi, j, s)
			}
		}
		rows := md.Sample(100, src)
		for j := range rows {
			if len(rows[j]) != 100 {
				t.Fatalf("fill %d: column %d has %d rows", fi, j, len(rows[j]))
			}
		}
	}
}

// TestExactScoreSensitivity: adding Δ rows to one cell changes the score
// by at most Δ, exactly, whatever the magnitudes (saturation included).
func TestExactScoreSensitivity(t *testing.T) {
	pi, pj := []float64{0.3, 0.7}, []float64{0.5, 0.25, 0.25}
	tests := []struct {
		name  string
		base  int64
		total float64
	}{
		{"small", 7, 40.3},
		{"adult", 16000, 32561.7},
		{"huge", 1 << 45, 1e15},
		{"beyond the cap", math.MaxInt64 - 10, 1e300},
	}
	for _, tt := range tests {
		for _, delta := range []int64{1, 3, 1000} {
			exact := []int64{tt.base, tt.base / 2, 3, 0, tt.base / 3, 1}
			s0 := exactScore(exact, pi, pj, tt.total, 12.5)
			for c := range exact {
				if exact[c] > math.MaxInt64-delta {
					continue
				}
				nb := append([]int64(nil), exact...)
				nb[c] += delta
				s1 := exactScore(nb, pi, pj, tt.total, 12.5)
				if math.Abs(s1-s0) > float64(delta) || math.IsNaN(s1) {
					t.Errorf("%s: cell %d +%d: score %v → %v", tt.name, c, delta, s0, s1)
				}
			}
		}
	}
}
