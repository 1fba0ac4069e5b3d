package reuse

import (
	"math"
	"sync"

	"github.com/dpstat/dpstat/query/dpplan"
)

// Record is what one release measured: per released cell (every group of
// the plan, whatever HAVING or LIMIT later showed), the noisy value of
// each reusable statistic, with the law of its noise. It is kept durably
// with the release's stored answer in the ledger.
type Record struct {
	// ReleaseID is the ledger's release the measurements were charged as.
	ReleaseID uint64 `json:"release"`
	// Analyst is who was charged.
	Analyst string `json:"analyst"`
	// Context, Where, Restrict, GroupBy and Keys are the release's Shape.
	Context  string           `json:"context"`
	Where    string           `json:"where,omitempty"`
	Restrict map[string][]int `json:"restrict,omitempty"`
	GroupBy  []string         `json:"group_by,omitempty"`
	Keys     [][]int          `json:"keys"`
	// Bins maps a column grouped by bins to each bin's value indices
	// (Shape.Bins).
	Bins map[string][][]int `json:"bins,omitempty"`
	// Rest maps each grouped column whose rows outside its list were
	// measured too (Shape.Rest) to the index their cells' keys hold for
	// it: the list's length. With it, the record's cells cover every row
	// of its context and filter whatever the column holds.
	Rest map[string]int `json:"rest,omitempty"`
	// Stats holds one entry per statistic measured.
	Stats []Measured `json:"stats"`

	cells map[string]int // key indices → cell, built on first use
	once  sync.Once
}

// Measured is one statistic's noisy values, one per cell (Record.Keys).
type Measured struct {
	ID     string          `json:"id"`
	Law    dpplan.NoiseLaw `json:"law"`
	Values []float64       `json:"values"`
}

// NewRecord returns the record of a release of a plan of the given shape,
// from the noisy values of every release for every group
// (dpplan.Noise.ApplyMeasured); nil when nothing in it can be reused.
func NewRecord(s *Shape, nz *dpplan.Noise, measured [][]float64, releaseID uint64, analyst string) *Record {
	if s == nil || len(measured) != len(s.Keys) {
		return nil
	}
	r := &Record{ReleaseID: releaseID, Analyst: analyst, Context: s.Context, Where: s.Where,
		Restrict: s.Restrict, GroupBy: s.GroupBy, Keys: s.Keys, Bins: s.Bins, Rest: s.Rest}
	seen := map[string]bool{}
	for i, id := range s.Stats {
		law, ok := nz.Law(i)
		if id == "" || !ok || seen[id] {
			continue
		}
		m := Measured{ID: id, Law: law, Values: make([]float64, len(measured))}
		finite := true
		for g, row := range measured {
			if i >= len(row) || math.IsNaN(row[i]) || math.IsInf(row[i], 0) {
				finite = false
				break
			}
			m.Values[g] = row[i]
		}
		if finite {
			seen[id] = true
			r.Stats = append(r.Stats, m)
		}
	}
	if len(r.Stats) == 0 {
		return nil
	}
	return r
}

// restIndex is the index of column c's rest in r's cell keys (Rest), or
// −1 when r did not measure it.
func (r *Record) restIndex(c string) int {
	if n, ok := r.Rest[c]; ok {
		return n
	}
	return -1
}

// stat returns the record's measurement with ID id.
func (r *Record) stat(id string) *Measured {
	for i := range r.Stats {
		if r.Stats[i].ID == id {
			return &r.Stats[i]
		}
	}
	return nil
}

func keyString(k []int) string {
	b := make([]byte, 0, 4*len(k))
	for _, v := range k {
		b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return string(b)
}

// cell returns the index of the cell with key indices k.
func (r *Record) cell(k []int) (int, bool) {
	r.once.Do(func() {
		r.cells = make(map[string]int, len(r.Keys))
		for i, key := range r.Keys {
			r.cells[keyString(key)] = i
		}
	})
	i, ok := r.cells[keyString(k)]
	return i, ok
}

// match returns the cells of r whose union is exactly the box (a cell of
// the new query), or false. complete gives the length of each complete
// value list. The box is a union of r's cells when, for every column r
// groups by, the box holds a set of that column's values within r's
// restriction (a complete column unrestricted by the box holds its whole
// list), and for every other column the box restricts it exactly as r's
// filter does.
func (r *Record) match(box map[string][]int, complete map[string]int) ([]int, bool) {
	if len(r.Bins) > 0 {
		return nil, false // bins are derived by reconcile only
	}
	grouped := map[string]bool{}
	sets := make([][]int, len(r.GroupBy))
	for i, c := range r.GroupBy {
		grouped[c] = true
		t, ok := box[c]
		if !ok {
			n, full := complete[c]
			if rn, rest := r.Rest[c]; rest && !full {
				n, full = rn+1, true // the listed values and the rest
			}
			if !full {
				return nil, false // the box holds rows r excluded (NULL)
			}
			t = make([]int, n)
			for v := range t {
				t[v] = v
			}
		}
		if len(t) == 0 {
			return nil, false
		}
		if rr, ok := r.Restrict[c]; ok && len(intersect(rr, t)) != len(t) {
			return nil, false
		}
		sets[i] = t
	}
	for c, t := range box {
		if !grouped[c] && !equalInts(t, r.Restrict[c]) {
			return nil, false
		}
	}
	for c := range r.Restrict {
		if _, ok := box[c]; !ok && !grouped[c] {
			return nil, false
		}
	}
	var cells []int
	key := make([]int, len(sets))
	var walk func(d int) bool
	walk = func(d int) bool {
		if d == len(sets) {
			i, ok := r.cell(key)
			cells = append(cells, i)
			return ok
		}
		for _, v := range sets[d] {
			key[d] = v
			if !walk(d + 1) {
				return false
			}
		}
		return true
	}
	if !walk(0) {
		return nil, false
	}
	return cells, true
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Index holds the records of released measurements in memory, by dataset
// (the ledger's budget dataset) and context. It is safe for concurrent use.
type Index struct {
	mu     sync.Mutex
	loaded map[string]bool
	recs   map[string][]*Record
}

// Load calls read once per dataset (the first time it is asked for) to
// read the records kept in the ledger, and adds them.
func (x *Index) Load(dataset string, read func() ([]*Record, error)) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.loaded[dataset] {
		return nil
	}
	rs, err := read()
	if err != nil {
		return err
	}
	if x.loaded == nil {
		x.loaded = map[string]bool{}
	}
	x.loaded[dataset] = true
	for _, r := range rs {
		x.addLocked(dataset, r)
	}
	return nil
}

// Add adds a record of dataset.
func (x *Index) Add(dataset string, r *Record) {
	if r == nil {
		return
	}
	x.mu.Lock()
	x.addLocked(dataset, r)
	x.mu.Unlock()
}

func (x *Index) addLocked(dataset string, r *Record) {
	if x.recs == nil {
		x.recs = map[string][]*Record{}
	}
	k := dataset + "\x00" + r.Context
	for _, o := range x.recs[k] {
		if o.ReleaseID == r.ReleaseID {
			return
		}
	}
	x.recs[k] = append(x.recs[k], r)
}

// Records returns the records of dataset in context.
func (x *Index) Records(dataset, context string) []*Record {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]*Record(nil), x.recs[dataset+"\x00"+context]...)
}
