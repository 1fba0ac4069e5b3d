package catalog

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// The keys each level of a catalog accepts, read from the yaml tags of the
// types the catalog is decoded into, so that a new key cannot be forgotten
// here.
var (
	catalogKeys = yamlKeys(rawCatalog{})
	budgetKeys  = yamlKeys(rawBudget{})
	tableKeys   = yamlKeys(rawTable{})
	columnKeys  = yamlKeys(rawColumn{})
	epochKeys   = yamlKeys(rawEpoch{})
)

// yamlKeys lists the yaml keys of a struct's fields.
func yamlKeys(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// unknownKeys lists every key of the catalog document that no level
// accepts, with its line, where it is, what is accepted and the accepted key
// it most resembles.
func unknownKeys(doc *yaml.Node) []error {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	var errs []error
	check := func(m *yaml.Node, where string, accepted []string) {
		if m == nil || m.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if contains(accepted, k.Value) {
				continue
			}
			msg := fmt.Sprintf("line %d: %sunknown key %q; accepted: %s", k.Line, where, k.Value, strings.Join(accepted, ", "))
			if near := nearestKey(k.Value, accepted); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			errs = append(errs, fmt.Errorf("%s", msg))
		}
	}
	root := doc.Content[0]
	check(root, "", catalogKeys)
	check(mappingValue(root, "budget"), "budget: ", budgetKeys)
	check(mappingValue(root, "total_budget"), "total_budget: ", budgetKeys)
	tables := mappingValue(root, "tables")
	if tables != nil && tables.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(tables.Content); i += 2 {
			name, t := tables.Content[i].Value, tables.Content[i+1]
			check(t, "table "+name+": ", tableKeys)
			check(mappingValue(t, "budget"), "table "+name+": budget: ", budgetKeys)
			check(mappingValue(t, "total_budget"), "table "+name+": total_budget: ", budgetKeys)
			check(mappingValue(t, "epoch"), "table "+name+": epoch: ", epochKeys)
			cols := mappingValue(t, "columns")
			if cols == nil || cols.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(cols.Content); j += 2 {
				check(cols.Content[j+1], "table "+name+": column "+cols.Content[j].Value+": ", columnKeys)
			}
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nearestKey returns the accepted key within two edits of key (the
// closest), or "".
// Nearest returns the name of names nearest to name (at most two letters
// off, case aside), or "" where none is that near: the "did you mean" of
// a misspelt name. A name longer than 64 bytes has no suggestion, so the
// work is bounded whatever the input.
func Nearest(name string, names []string) string {
	if len(name) > 64 {
		return ""
	}
	lower := make([]string, len(names))
	for i, n := range names {
		lower[i] = strings.ToLower(n)
	}
	near := nearestKey(name, lower)
	for i, n := range lower {
		if n == near && near != "" {
			return names[i]
		}
	}
	return ""
}

func nearestKey(key string, accepted []string) string {
	type cand struct {
		key  string
		dist int
	}
	var cs []cand
	for _, a := range accepted {
		if d := EditDistance(strings.ToLower(key), a); d <= 2 {
			cs = append(cs, cand{a, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].dist < cs[j].dist })
	if len(cs) == 0 {
		return ""
	}
	return cs[0].key
}

// EditDistance is the Levenshtein distance between a and b, counted in
// runes: the number of single-rune insertions, deletions and substitutions
// that turn one into the other. It takes time proportional to the product
// of the lengths; callers compare names and short values.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
