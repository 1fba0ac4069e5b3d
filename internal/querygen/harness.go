package querygen

import (
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/schema"
)

// The harness tables: people, rows, visits and wide all read one file of
// Rows (with the header Columns), codes reads Codes. Catalog declares
// them; every generated query reads them by these names.

// Columns is the header of the harness tables.
const Columns = "pid,f,fz,i,t,u,b,dt,ts"

// Rows holds the harness data: every extreme value a file can
// hold in each column type (NaN, ±Inf, ±0, ±MaxFloat64, the smallest
// subnormal, MaxInt64 and MinInt64, an int too large for BIGINT, empty
// text, NULL, long unicode). The first row holding fz is -0, so that the
// engine meets -0 before 0 in that group, and without person 2 it does not.
var Rows = []string{
	`2,-inf,-0,0,a,` + strings.Repeat("é☃𝄞", 200) + `,true,infinity,-infinity`,
	`1,nan,-0.0,9223372036854775807,a,,true,-infinity,infinity`,
	`1,inf,0,-9223372036854775808,b,x,false,0001-01-01,1684-01-01 00:00:00`,
	`3,1.7976931348623157e308,1,100,b,x,true,5874897-12-31,290309-12-21 23:59:59.999999`,
	`4,-1.7976931348623157e308,0,50,a,y,false,9999-12-31,9999-12-31 23:59:59.999999`,
	`4,-0,NaN,,,y,,2024-02-30,not a time`,
	`5,4.9e-324,inf,1e30,a,y,true,2024-02-29,2024-02-29 23:59:59`,
	`6,,,,,,,,`,
	`7,5,0,7,b,x,false,1969-12-31,1969-12-31 23:59:59.999999`,
	`7,-5,1,8,a,x,false,2024-01-01,2024-01-01 00:00:00`,
	`7,1e-320,0,9,b,x,true,2024-12-31,2024-12-31 23:59:59`,
	`8,0.25,-0,99,b,z,true,2024-03-01,2024-03-01 00:00:00.5`,
}

// Catalog declares the harness tables: people (a privacy unit,
// at most 2 groups and 2 rows per group per person), rows (every row a
// person), visits (people's table of the same persons, to join), wide
// (people with bounds that no person's joined rows reach: see
// JoinedRows), monthly (wide's bounds, with epochs by month of dt: the
// privacy unit is (person, month), in an id space of its own) and the
// public codes. The tables read data.csv (Rows) and
// codes.csv (Codes); a server's harness replaces those sources.
const Catalog = `budget: {epsilon: 1e30, delta: 0.5}
tables:
  people:
    source: data.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns: &cols
      pid: {type: int}
      f:   {type: float, lower: -10, upper: 10, nullable: true}
      fz:  {type: float, values: [0, 1]}
      i:   {type: int, lower: 0, upper: 100, nullable: true}
      t:   {type: text, values: [a, b, ""]}
      u:   {type: text}
      b:   {type: bool, values: [true, false]}
      dt:  {type: date, lower: "2024-01-01", upper: "2024-12-31"}
      ts:  {type: timestamp, lower: "2024-01-01 00:00:00", upper: "2024-12-31 23:59:59"}
  rows:
    source: data.csv
    columns: *cols
  visits:
    source: data.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns: *cols
  wide:
    source: data.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 9
    max_rows_per_group: 9
    columns: *cols
  monthly:
    source: data.csv
    privacy_unit: pid
    id_space: months
    max_groups_per_unit: 9
    max_rows_per_group: 9
    epoch: {column: dt, every: month}
    columns: *cols
  codes:
    source: codes.csv
    public: true
    columns:
      t:      {type: text}
      label:  {type: text}
      weight: {type: int}
`

// Codes is the public table of the harness: code b appears twice,
// so a row with t = b becomes two rows through the join.
const Codes = "t,label,weight\na,alpha,1\nb,beta,2\nb,beta two,3\n,empty,0\n"

// Types are the types of the harness columns (Columns).
var Types = []schema.Type{schema.Int, schema.Float, schema.Float, schema.Int, schema.Text, schema.Text, schema.Bool, schema.Date, schema.Timestamp}

// Values reads harness rows as a file engine does, for loading them into
// a server: an empty or malformed field is NULL, infinite dates and
// timestamps are pgtype's infinities.
func Values(rows []string) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		fields := strings.Split(r, ",")
		row := make([]any, len(fields))
		for j, f := range fields {
			if f == "" {
				continue
			}
			switch Types[j] {
			case schema.Int:
				if v, err := strconv.ParseInt(f, 10, 64); err == nil {
					row[j] = v
				}
			case schema.Float:
				if v, err := strconv.ParseFloat(f, 64); err == nil {
					row[j] = v
				}
			case schema.Bool:
				if v, err := strconv.ParseBool(f); err == nil {
					row[j] = v
				}
			case schema.Date:
				switch f {
				case "infinity":
					row[j] = pgtype.Date{InfinityModifier: pgtype.Infinity, Valid: true}
				case "-infinity":
					row[j] = pgtype.Date{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
				default:
					if v, err := time.Parse("2006-01-02", f); err == nil {
						row[j] = v
					}
				}
			case schema.Timestamp:
				switch f {
				case "infinity":
					row[j] = pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}
				case "-infinity":
					row[j] = pgtype.Timestamp{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
				default:
					if v, err := time.Parse("2006-01-02 15:04:05", f); err == nil {
						row[j] = v
					}
				}
			default:
				row[j] = f
			}
		}
		out[i] = row
	}
	return out
}

// JoinedRows is the most rows a person of the harness has after
// any join of the generator or the battery: the most rows one pid has in
// the table, times the most rows one of its rows meets in the joined
// table (its own rows in a table about the same people, or the codes of
// one t).
func JoinedRows() int64 {
	perPid, perCode := map[string]int64{}, map[string]int64{}
	var most, meets int64
	for _, r := range Rows {
		p := r[:strings.IndexByte(r, ',')]
		perPid[p]++
		most = max(most, perPid[p])
	}
	for _, line := range strings.Split(strings.TrimSpace(Codes), "\n")[1:] {
		t := line[:strings.IndexByte(line, ',')]
		perCode[t]++
		meets = max(meets, perCode[t])
	}
	return most * max(most, meets)
}

// BoundsNotBinding reports whether the plan's bounds keep every row of
// every person of the harness, through any join: then the random choice
// of kept rows chooses nothing.
func BoundsNotBinding(plan *dpplan.Plan) bool {
	n := JoinedRows()
	c := plan.Contribution
	return c.RowsPerGroup >= n && (!plan.BoundGroups || c.Groups >= n)
}

// EpochsPerPerson is the most months of the monthly table's declared
// range (2024) that one person of the harness has rows in: removing one
// person removes at most that many (person, month) units, so a
// release's change between D and D minus one person is at most that many
// times its sensitivity (group privacy over the units).
func EpochsPerPerson() int {
	months := map[string]map[string]bool{}
	most := 0
	for _, r := range Rows {
		f := strings.Split(r, ",")
		d, err := time.Parse("2006-01-02", f[7])
		if err != nil || d.Year() != 2024 {
			continue
		}
		if months[f[0]] == nil {
			months[f[0]] = map[string]bool{}
		}
		months[f[0]][d.Format("2006-01")] = true
		most = max(most, len(months[f[0]]))
	}
	return most
}
