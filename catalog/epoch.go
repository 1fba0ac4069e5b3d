package catalog

import (
	"fmt"
	"strings"

	epochs "github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/schema"
)

// Epoch is a table's declared epoch: `epoch: {column: visit_date, every:
// month}`. Each person's rows of one epoch are protected on their own and
// have budgets of their own (each analyst's and the total); the epochs a
// query reads follow from its conditions on Column and from the column's
// declared bounds, never from the data.
type Epoch struct {
	// Column is a bounded date or timestamp column of the table.
	Column string
	// Every is the kind of epoch: day, week (ISO, from Monday), month,
	// quarter or year.
	Every string
}

type rawEpoch struct {
	Column string `yaml:"column"`
	Every  string `yaml:"every"`
}

// Epochs is the range of every epoch the table declares: those holding
// the epoch column's declared bounds. ok is false when the table declares
// no epoch.
func (t *Table) Epochs() (epochs.Range, bool) {
	if t.Epoch == nil {
		return epochs.Range{}, false
	}
	c := t.Column(t.Epoch.Column)
	if c == nil || !c.Bounded() {
		return epochs.Range{}, false
	}
	return epochs.Within(t.Epoch.Every, schema.Day(c.Type, int64(*c.Lower)), schema.Day(c.Type, int64(*c.Upper))), true
}

// checkEpoch checks a table's epoch declaration: a bounded date or
// timestamp column, a known kind, a table with people in it, and a range
// of at most epochs.MaxRange epochs.
func checkEpoch(t *Table, rt *rawTable) (*Epoch, []error) {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("epoch: "+format, args...)) }
	re := rt.Epoch
	if rt.Public {
		add("a public table is about no one and has no epochs; remove epoch: or public:")
	}
	if !epochs.Valid(re.Every) {
		add("every = %q: want one of %s", re.Every, strings.Join(epochs.Kinds, ", "))
	}
	var dated []string
	for _, c := range t.Columns {
		if c.Type.Temporal() && c.Bounded() {
			dated = append(dated, c.Name)
		}
	}
	c := t.Column(re.Column)
	switch {
	case re.Column == "":
		add("column: missing; name the date or timestamp column that places each row in its epoch (bounded columns of this kind: %s)", listOrNone(dated))
	case c == nil || c.Name != re.Column:
		add("column %q is not a declared column; bounded date or timestamp columns: %s", re.Column, listOrNone(dated))
	case !c.Type.Temporal():
		add("column %s is %s: want a date or timestamp column (bounded ones: %s)", re.Column, c.Type, listOrNone(dated))
	case !c.Bounded():
		add("column %s declares no lower and upper: an epoch column needs both, which say the epochs the table holds (e.g. lower: 2024-01-01, upper: 2024-12-31)", re.Column)
	case re.Column == t.PrivacyUnit:
		add("column %s is the privacy unit: want the column that dates each row", re.Column)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	e := &Epoch{Column: re.Column, Every: re.Every}
	t.Epoch = e
	r, _ := t.Epochs()
	if err := r.Validate(); err != nil {
		add("column %s's bounds span %d %ss: want at most %d", re.Column, r.Len(), re.Every, epochs.MaxRange)
		t.Epoch = nil
		return nil, errs
	}
	return e, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkEpochSpace refuses an id space whose tables declare different
// epochs: their budgets are one, so their epochs must be one calendar.
func checkEpochSpace(s string, first, t *Table) error {
	fe, te := "none", "none"
	if first.Epoch != nil {
		fe = "every " + first.Epoch.Every
	}
	if t.Epoch != nil {
		te = "every " + t.Epoch.Every
	}
	if fe == te {
		return nil
	}
	return fmt.Errorf("id_space %s: tables %s and %s share budgets but declare different epochs (%s and %s): declare the same epoch kind on every table of the id space, or on none",
		s, first.Name, t.Name, fe, te)
}
