package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dpstat/dpstat/schema"
	"gopkg.in/yaml.v3"
)

// The YAML shape of a catalog. Decoding is strict: unknown fields are errors.
type rawCatalog struct {
	Budget      *rawBudget           `yaml:"budget"`
	TotalBudget *rawBudget           `yaml:"total_budget"`
	Engine      *rawEngine           `yaml:"engine"`
	Tables      map[string]*rawTable `yaml:"tables"`
}

type rawEngine struct {
	Kind             string `yaml:"kind"`
	DSN              string `yaml:"dsn"`
	PasswordEnv      string `yaml:"password_env"`
	StatementTimeout string `yaml:"statement_timeout"`
	MaxConnections   *int   `yaml:"max_connections"`
}

type rawBudget struct {
	Epsilon *float64 `yaml:"epsilon"`
	Delta   *float64 `yaml:"delta"`
}

type rawTable struct {
	Source           string                `yaml:"source"`
	PrivacyUnit      string                `yaml:"privacy_unit"`
	MaxGroupsPerUnit *int64                `yaml:"max_groups_per_unit"`
	MaxRowsPerGroup  *int64                `yaml:"max_rows_per_group"`
	GroupSize        *int64                `yaml:"group_size"`
	Columns          map[string]*rawColumn `yaml:"columns"`
	IDSpace          string                `yaml:"id_space"`
	Public           bool                  `yaml:"public"`
	NaNFree          yaml.Node             `yaml:"nan_free"`
	ReuseReleases    string                `yaml:"reuse_releases"`
	ClusteredByUnit  yaml.Node             `yaml:"clustered_by_unit"`
	Budget           *rawBudget            `yaml:"budget"`
	TotalBudget      *rawBudget            `yaml:"total_budget"`
	Epoch            *rawEpoch             `yaml:"epoch"`
}

type rawColumn struct {
	Type     string    `yaml:"type"`
	Lower    *rawBound `yaml:"lower"`
	Upper    *rawBound `yaml:"upper"`
	Values   yaml.Node `yaml:"values"`
	Nullable bool      `yaml:"nullable"`
	From     string    `yaml:"from"`
}

// Load reads and checks the catalog file at path. Sources are resolved
// against the file's directory and must exist.
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c, err := Parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// Parse decodes and checks a catalog; relative sources are resolved against
// dir and must exist. All problems found are reported together, one a line.
func Parse(data []byte, dir string) (*Catalog, error) {
	// The node tree recovers the declaration order of tables and columns,
	// which maps do not keep, and the keys the catalog does not know, all
	// of which are reported (with what is accepted) beside every other
	// problem.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a valid catalog: %w", cleanYAMLError(err))
	}
	order := declarationOrder(&doc)
	errs := unknownKeys(&doc)
	var raw rawCatalog
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(len(errs) == 0)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a valid catalog: %w", errors.Join(append(errs, cleanYAMLError(err))...))
	}

	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := &Catalog{}
	if raw.Budget == nil || raw.Budget.Epsilon == nil {
		add("budget: missing; declare e.g. `budget: {epsilon: 10, delta: 1e-6}`")
	} else {
		c.Budget.Epsilon = *raw.Budget.Epsilon
		if raw.Budget.Delta != nil {
			c.Budget.Delta = *raw.Budget.Delta
		}
		if e := c.Budget.Epsilon; math.IsNaN(e) || math.IsInf(e, 0) || e <= 0 {
			add("budget: epsilon = %v: want a finite number > 0", e)
		}
		if d := c.Budget.Delta; math.IsNaN(d) || d < 0 || d >= 1 {
			add("budget: delta = %v: want a number in [0, 1)", d)
		}
	}
	c.Engine, errs = checkEngine(raw.Engine, errs)
	if len(raw.Tables) == 0 {
		add("tables: none declared")
	}
	names := make([]string, 0, len(raw.Tables))
	for name := range raw.Tables {
		names = append(names, name)
	}
	sortByOrder(names, order.tables)
	for _, name := range names {
		t, terrs := checkTable(name, raw.Tables[name], dir, order.columns[name], c.Remote(), c.Engine.Kind+" "+c.Engine.DSN)
		errs = append(errs, terrs...)
		if t != nil {
			c.Tables = append(c.Tables, t)
		}
	}
	errs = append(errs, checkBudgets(c, &raw)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func checkTable(name string, rt *rawTable, dir string, colOrder []string, remote bool, database string) (*Table, []error) {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("table %s: "+format, append([]any{name}, args...)...))
	}
	if rt == nil {
		add("empty declaration; declare at least `source:` and `columns:`")
		return nil, errs
	}
	if !validName(name) {
		add("name %q: want letters, digits and underscores, starting with a letter or underscore", name)
	} else if schema.Reserved(name) {
		add("name %q: names beginning with %s are dpstat's own (the names its statements give their stages); declare the table under another name", name, schema.ReservedPrefix)
	}
	t := &Table{Name: name, PrivacyUnit: rt.PrivacyUnit, MaxGroupsPerUnit: 1, MaxRowsPerGroup: 1, GroupSize: 1}
	if rt.GroupSize != nil {
		if *rt.GroupSize < 1 || *rt.GroupSize > 1<<20 {
			add("group_size = %d: want a whole number of people from 1 to 1048576", *rt.GroupSize)
		} else {
			t.GroupSize = *rt.GroupSize
		}
	}
	if remote {
		// A table or view of the server engine: the engine resolves the
		// name and checks the columns when it binds the table.
		switch {
		case strings.TrimSpace(rt.Source) == "":
			add("source: missing; give a table or view of the engine, e.g. public.visits")
		case len(rt.Source) > 512 || strings.ContainsAny(rt.Source, "\x00;"):
			add("source %q: want a table or view name such as public.visits (at most 512 characters, no ';')", rt.Source)
		default:
			t.Source, t.Format = strings.TrimSpace(rt.Source), Relation
			t.Database = database
		}
	} else if rt.Source == "" {
		add("source: missing; give a CSV or Parquet file relative to the catalog")
	} else {
		src := rt.Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		t.Source = src
		switch strings.ToLower(filepath.Ext(src)) {
		case ".csv", ".tsv":
			t.Format = "csv"
		case ".parquet":
			t.Format = "parquet"
		default:
			add("source %q: unknown format; want a file ending in .csv or .parquet", rt.Source)
		}
		if st, err := os.Stat(src); err != nil {
			add("source %q: file not found (looked for %s)", rt.Source, src)
		} else if st.IsDir() {
			add("source %q: is a directory, want a file", rt.Source)
		}
	}
	t.Public = rt.Public
	switch rt.ReuseReleases {
	case "", ReuseOwn:
	case ReuseShared:
		t.ReuseReleases = ReuseShared
	default:
		add("reuse_releases = %q: want %s (an analyst's answers are derived only from that analyst's own releases, the default) or %s (from every analyst's releases of the table)", rt.ReuseReleases, ReuseOwn, ReuseShared)
	}
	if n := &rt.NaNFree; n.Kind != 0 {
		var v bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
			text := n.Value
			if n.Kind != yaml.ScalarNode {
				text = "a " + map[yaml.Kind]string{yaml.SequenceNode: "list", yaml.MappingNode: "mapping"}[n.Kind]
			}
			add("nan_free = %s: want true (the owner declares that the float columns hold no NaN) or false", text)
		} else {
			t.NaNFree = v
		}
	}
	if rt.Public && (rt.PrivacyUnit != "" || rt.MaxGroupsPerUnit != nil || rt.MaxRowsPerGroup != nil || rt.GroupSize != nil ||
		rt.IDSpace != "" || rt.Budget != nil || rt.TotalBudget != nil) {
		add("public: true declares a table about no one: it takes no privacy_unit, contribution bounds, group_size, id_space or budget")
	}
	if rt.PrivacyUnit == "" {
		if rt.MaxGroupsPerUnit != nil || rt.MaxRowsPerGroup != nil {
			add("max_groups_per_unit and max_rows_per_group need a privacy_unit column; without one every row is a different person")
		}
	} else {
		if rt.MaxGroupsPerUnit == nil {
			add("max_groups_per_unit: missing; a table with a privacy_unit must declare how many groups one person may contribute to")
		} else if *rt.MaxGroupsPerUnit < 1 {
			add("max_groups_per_unit = %d: want an integer >= 1", *rt.MaxGroupsPerUnit)
		} else {
			t.MaxGroupsPerUnit = *rt.MaxGroupsPerUnit
		}
		if rt.MaxRowsPerGroup == nil {
			add("max_rows_per_group: missing; a table with a privacy_unit must declare how many rows one person may contribute per group")
		} else if *rt.MaxRowsPerGroup < 1 {
			add("max_rows_per_group = %d: want an integer >= 1", *rt.MaxRowsPerGroup)
		} else {
			t.MaxRowsPerGroup = *rt.MaxRowsPerGroup
		}
		if t.MaxGroupsPerUnit > MaxGroupsPerUnit {
			add("max_groups_per_unit = %d: want at most %d", t.MaxGroupsPerUnit, MaxGroupsPerUnit)
		}
		if t.MaxRowsPerGroup > schema.MaxRowsPerGroup {
			add("max_rows_per_group = %d: want at most %d (the most values per person and group the engines can sample)", t.MaxRowsPerGroup, schema.MaxRowsPerGroup)
		}
	}
	if len(rt.Columns) == 0 {
		add("columns: none declared")
	}
	cols := make([]string, 0, len(rt.Columns))
	for cn := range rt.Columns {
		cols = append(cols, cn)
	}
	sortByOrder(cols, colOrder)
	for _, cn := range cols {
		col, cerrs := checkColumn(cn, rt.Columns[cn])
		for _, e := range cerrs {
			add("column %s: %v", cn, e)
		}
		if col != nil {
			t.Columns = append(t.Columns, col)
		}
	}
	if rt.PrivacyUnit != "" && rt.Columns != nil {
		if _, ok := rt.Columns[rt.PrivacyUnit]; !ok {
			add("privacy_unit %q is not a declared column; declared: %s", rt.PrivacyUnit, strings.Join(cols, ", "))
		}
	}
	if rt.Epoch != nil {
		var eerrs []error
		t.Epoch, eerrs = checkEpoch(t, rt)
		for _, e := range eerrs {
			add("%v", e)
		}
	}
	if msg := checkClustered(t, &rt.ClusteredByUnit, rt.PrivacyUnit); msg != "" {
		add("%s", msg)
	}
	return t, errs
}

func checkColumn(name string, rc *rawColumn) (*Column, []error) {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if rc == nil {
		add("empty declaration; declare at least `type:` (int, float, text, bool, date or timestamp)")
		return nil, errs
	}
	if !validName(name) {
		add("name %q: want letters, digits and underscores, starting with a letter or underscore", name)
	} else if schema.Reserved(name) {
		add("name %q: names beginning with %s are dpstat's own (the names its statements give their columns); declare the column under another name and read it with from:, e.g. %s: {from: %s, type: ...}", name, schema.ReservedPrefix, strings.TrimLeft(name[len(schema.ReservedPrefix):], "_")+"_col", name)
	}
	col := &Column{Name: name, Type: schema.Type(rc.Type), Nullable: rc.Nullable, From: rc.From}
	lower, upper, berrs := rc.bounds(col.Type)
	errs = append(errs, berrs...)
	rcLower, rcUpper := lower, upper
	col.Lower, col.Upper = lower, upper
	if strings.ContainsRune(rc.From, 0) || len(rc.From) > 1024 {
		add("from = %q: want the column's header in the source file (at most 1024 bytes, no NUL)", rc.From)
	}
	switch col.Type {
	case schema.Int, schema.Float, schema.Text, schema.Bool, schema.Date, schema.Timestamp:
	case "":
		add("type: missing; want int, float, text, bool, date or timestamp")
	default:
		add("type %q: unknown; want int, float, text, bool, date or timestamp", rc.Type)
	}
	numeric := col.Type == schema.Int || col.Type == schema.Float
	if (rc.Lower != nil || rc.Upper != nil) && !numeric && !col.Type.Temporal() && col.Type != "" {
		add("lower/upper declared on a %s column; bounds apply only to int, float, date and timestamp columns", col.Type)
	}
	if col.Type.Temporal() {
		if (rc.Lower == nil) != (rc.Upper == nil) {
			add("declares only one of lower and upper; declare both or neither")
		}
		if rcLower != nil && rcUpper != nil && *rcLower > *rcUpper {
			add("lower = %s is after upper = %s; want lower <= upper", schema.FormatValue(col.Type, int64(*rcLower)), schema.FormatValue(col.Type, int64(*rcUpper)))
		}
	}
	if numeric {
		if (rc.Lower == nil) != (rc.Upper == nil) {
			add("declares only one of lower and upper; declare both or neither")
		}
		for _, b := range []struct {
			name string
			v    *float64
		}{{"lower", rcLower}, {"upper", rcUpper}} {
			if b.v == nil {
				continue
			}
			v := *b.v
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				add("%s = %v: want a finite number", b.name, v)
			case col.Type == schema.Int && v != math.Trunc(v):
				add("%s = %v: an int column wants an integer bound", b.name, v)
			case math.Abs(v) > schema.MaxIntBound:
				add("%s = %v: want a magnitude of at most 2^53 = %d", b.name, v, int64(schema.MaxIntBound))
			}
		}
		if rcLower != nil && rcUpper != nil && *rcLower > *rcUpper {
			add("lower = %v is above upper = %v; want lower <= upper", *rcLower, *rcUpper)
		}
	}
	if rc.Values.Kind != 0 {
		vals, verrs := decodeValues(&rc.Values, col.Type)
		errs = append(errs, verrs...)
		col.Values = vals
	} else if col.Type == schema.Bool {
		// A bool column's values are public by its type.
		col.Values = []any{true, false}
	}
	return col, errs
}

// decodeValues checks a public value list against the column type.
func decodeValues(n *yaml.Node, typ schema.Type) ([]any, []error) {
	var errs []error
	if n.Kind != yaml.SequenceNode {
		return nil, []error{fmt.Errorf("values: want a list, e.g. [a, b, c]")}
	}
	if len(n.Content) == 0 {
		return nil, []error{fmt.Errorf("values: empty list; declare at least one value or leave values out")}
	}
	out := make([]any, 0, len(n.Content))
	seen := map[any]bool{}
	for i, item := range n.Content {
		if item.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("values[%d]: want a single value", i))
			continue
		}
		v, err := scalarValue(item, typ)
		if err != nil {
			errs = append(errs, fmt.Errorf("values[%d] = %q: %v", i, item.Value, err))
			continue
		}
		if seen[v] {
			errs = append(errs, fmt.Errorf("values[%d] = %q: listed twice", i, item.Value))
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out, errs
}

func scalarValue(item *yaml.Node, typ schema.Type) (any, error) {
	switch typ {
	case schema.Int:
		var v int64
		if item.Tag != "!!int" || item.Decode(&v) != nil {
			return nil, errors.New("want an integer for an int column")
		}
		if v > schema.MaxIntBound || v < -schema.MaxIntBound {
			return nil, errors.New("want a magnitude of at most 2^53")
		}
		return v, nil
	case schema.Float:
		var v float64
		if (item.Tag != "!!int" && item.Tag != "!!float") || item.Decode(&v) != nil {
			return nil, errors.New("want a number for a float column")
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("want a finite number")
		}
		if v == 0 {
			v = 0 // -0 and 0 are one value, spelled 0
		}
		return v, nil
	case schema.Bool:
		var v bool
		if item.Tag != "!!bool" || item.Decode(&v) != nil {
			return nil, errors.New("want true or false for a bool column")
		}
		return v, nil
	case schema.Date, schema.Timestamp:
		if item.Tag != "!!str" && item.Tag != "!!timestamp" {
			return nil, fmt.Errorf("want a %s such as %s", typ, map[schema.Type]string{schema.Date: "2024-03-01", schema.Timestamp: "2024-03-01 13:45:00"}[typ])
		}
		return parseTemporal(typ, item.Value)
	case schema.Text:
		if item.Tag == "!!null" {
			return nil, errors.New("want a text value; missing values are never group keys")
		}
		if strings.ContainsRune(item.Value, 0) {
			return nil, errors.New("text values may not contain NUL characters")
		}
		return item.Value, nil
	default:
		return nil, errors.New("the column has no valid type")
	}
}

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

type orders struct {
	tables  []string
	columns map[string][]string
}

func declarationOrder(doc *yaml.Node) orders {
	o := orders{columns: map[string][]string{}}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return o
	}
	tables := mappingValue(doc.Content[0], "tables")
	if tables == nil || tables.Kind != yaml.MappingNode {
		return o
	}
	for i := 0; i+1 < len(tables.Content); i += 2 {
		name := tables.Content[i].Value
		o.tables = append(o.tables, name)
		if cols := mappingValue(tables.Content[i+1], "columns"); cols != nil && cols.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(cols.Content); j += 2 {
				o.columns[name] = append(o.columns[name], cols.Content[j].Value)
			}
		}
	}
	return o
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func sortByOrder(names []string, order []string) {
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	sort.SliceStable(names, func(i, j int) bool {
		pi, oki := pos[names[i]]
		pj, okj := pos[names[j]]
		if oki && okj {
			return pi < pj
		}
		if oki != okj {
			return oki
		}
		return names[i] < names[j]
	})
}

func cleanYAMLError(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}

// checkClustered reads the clustered_by_unit declaration n into t and
// returns what is wrong with it, or "": a boolean, on a table with a
// privacy unit declared as an int column with both bounds (the ranges a
// clustered table is read in are cut from those bounds, never from the
// data).
func checkClustered(t *Table, n *yaml.Node, unit string) string {
	if n.Kind == 0 {
		return ""
	}
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		text := n.Value
		if n.Kind != yaml.ScalarNode {
			text = "a " + map[yaml.Kind]string{yaml.SequenceNode: "list", yaml.MappingNode: "mapping"}[n.Kind]
		}
		return fmt.Sprintf("clustered_by_unit = %s: want true (the owner declares that the rows are stored sorted or clustered by the privacy unit) or false", text)
	}
	if !v {
		return ""
	}
	if unit == "" {
		return "clustered_by_unit: true needs a privacy_unit column (the rows are clustered by it); without one, leave it out"
	}
	var col *Column
	for _, c := range t.Columns {
		if c.Name == unit {
			col = c
		}
	}
	if col == nil {
		return "" // reported as an undeclared privacy_unit
	}
	if col.Type != schema.Int || !col.Bounded() {
		return fmt.Sprintf("clustered_by_unit: true needs the privacy_unit column %s declared as {type: int, lower: L, upper: U} (got type %s%s): the ranges the table is read in are cut from the declared bounds, never from the data", unit, col.Type, map[bool]string{true: " with bounds", false: " without both bounds"}[col.Bounded()])
	}
	t.ClusteredByUnit = true
	return ""
}
