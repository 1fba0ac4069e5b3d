package enginetest

import "github.com/dpstat/dpstat/schema"

// Tables are the suite's fixtures.
var Tables = []Table{
	{Name: "people", File: "people.csv",
		Columns: []Column{{"id", schema.Int}, {"age", schema.Int}, {"score", schema.Float}, {"city", schema.Text}, {"flag", schema.Bool}},
		Declaration: `    columns:
      id:    {type: int}
      age:   {type: int, lower: 18, upper: 100}
      score: {type: float, lower: 0, upper: 10, nullable: true}
      city:  {type: text, values: [A, B, D]}
      flag:  {type: bool, values: [true, false]}
`},
	{Name: "empty", File: "empty.csv",
		Columns: []Column{{"id", schema.Int}, {"age", schema.Int}, {"score", schema.Float}, {"city", schema.Text}, {"flag", schema.Bool}},
		Declaration: `    columns:
      id:    {type: int}
      age:   {type: int, lower: 18, upper: 100}
      score: {type: float, lower: 0, upper: 10}
      city:  {type: text, values: [A, B, D]}
      flag:  {type: bool}
`},
	{Name: "special", File: "special.csv",
		Columns: []Column{{"id", schema.Int}, {"score", schema.Float}, {"city", schema.Text}},
		Declaration: `    columns:
      id:    {type: int}
      score: {type: float, lower: 0, upper: 10}
      city:  {type: text, values: [A, B]}
`},
	{Name: "extremes", File: "extremes.csv",
		Columns: []Column{{"f", schema.Float}, {"i", schema.Int}, {"k", schema.Float}, {"t", schema.Text}},
		Declaration: `    columns:
      f: {type: float, lower: -5, upper: 5}
      i: {type: int, lower: -100, upper: 100}
      k: {type: float, values: [0, 1.5]}
      t: {type: text, values: [a, b]}
`},
	{Name: "visits", File: "visits.csv",
		Columns: []Column{{"pid", schema.Int}, {"g", schema.Int}, {"v", schema.Int}, {"x", schema.Float}, {"region", schema.Text}},
		Declaration: `    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns:
      pid:    {type: int}
      g:      {type: int, values: [1, 2, 3]}
      v:      {type: int, lower: 0, upper: 10}
      x:      {type: float, lower: 0, upper: 10}
      region: {type: text}
`},
	{Name: "regions", File: "regions.csv",
		Columns: []Column{{"region", schema.Text}, {"zone", schema.Text}},
		Declaration: `    public: true
    columns:
      region: {type: text}
      zone:   {type: text}
`},
	{Name: "zones", File: "zones.csv",
		Columns: []Column{{"region", schema.Text}, {"zone", schema.Text}},
		Declaration: `    public: true
    columns:
      region: {type: text}
      zone:   {type: text}
`},
	// spread is written in the order of pid and says so: the embedded
	// engine reads it in 4 ranges of pid (streamed where it can).
	{Name: "spread", File: "spread.csv",
		Columns: []Column{{"pid", schema.Int}, {"g", schema.Int}, {"v", schema.Int}},
		Declaration: `    privacy_unit: pid
    clustered_by_unit: true
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns:
      pid: {type: int, lower: 0, upper: 200000}
      g:   {type: int, values: [1, 2, 3]}
      v:   {type: int, lower: 0, upper: 10}
`},
	// Sums past 2^63 in one group (1,030 rows of 2^53), and rows outside
	// the list (c, NULL): the hidden cells' partial sums are summed again
	// in the engine's wide type.
	{Name: "bigsums", File: "bigsums.csv",
		Columns: []Column{{"id", schema.Int}, {"g", schema.Text}, {"v", schema.Int}},
		Declaration: `    columns:
      id: {type: int}
      g:  {type: text, values: [a, b]}
      v:  {type: int, lower: 0, upper: 9007199254740992}
`},
	{Name: "nullkeys", File: "nullkeys.csv",
		Columns: []Column{{"pid", schema.Int}, {"k", schema.Text}, {"v", schema.Int}},
		Declaration: `    privacy_unit: pid
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns:
      pid: {type: int}
      k:   {type: text, nullable: true}
      v:   {type: int, lower: 0, upper: 10}
`},
	{Name: "events", File: "events.csv",
		Columns: []Column{{"id", schema.Int}, {"signup", schema.Date}, {"seen", schema.Timestamp}, {"city", schema.Text}, {"amount", schema.Int}, {"visit", schema.Date}},
		Declaration: `    columns:
      id:     {type: int}
      signup: {type: date, lower: "2024-01-01", upper: "2024-12-31"}
      seen:   {type: timestamp, lower: "2024-01-01 00:00:00", upper: "2024-12-31 23:59:59"}
      city:   {type: text, values: [Paris, Lyon, Nice]}
      amount: {type: int, lower: 0, upper: 100}
      visit:  {type: date, values: ["2024-03-01", "2024-03-02", "2024-03-03"]}
`},
	{Name: "words", File: "words.csv",
		Columns: []Column{{"id", schema.Int}, {"w", schema.Text}},
		Declaration: `    columns:
      id: {type: int}
      w:  {type: text, values: ["Élan", " a b ", "straße", "ǅemal", "İstanbul", "ﬁne", "Ωmega", "a'b", "ÀB c"]}
`},
	// Values that broke server engines (see edgeCases): negative sums,
	// small integer keys, a NULL in an Enum column; acct_minus is acct
	// without person 3.
	{Name: "acct", File: "acct.csv", Columns: acctColumns, Declaration: acctDeclaration, ClickHouse: acctClickHouse},
	{Name: "acct_minus", File: "acct_minus.csv", Columns: acctColumns, Declaration: acctDeclaration, ClickHouse: acctClickHouse},
	// Text and numbers that engines read differently (see
	// capabilityCases): 4-byte UTF-8 characters, non-ASCII letters with
	// an ASCII look-alike, subnormal doubles, dates per person.
	{Name: "glyphs", File: "glyphs.csv",
		Columns: []Column{{"pid", schema.Int}, {"w", schema.Text}, {"f", schema.Float}, {"d", schema.Date}, {"v", schema.Int}, {"ts", schema.Timestamp}},
		Declaration: `    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 1
    columns:
      pid: {type: int}
      w:   {type: text, values: ["a😀b😀c", "😀😀😀", "𝄞mol", "Ÿes", "ÿes", "YES", "Ábc", "ábc", "a𝄞b"]}
      f:   {type: float, lower: -10, upper: 10, nullable: true}
      d:   {type: date, lower: "2024-01-01", upper: "2024-12-31", nullable: true}
      v:   {type: int, lower: 0, upper: 10}
      ts:  {type: timestamp, lower: "2024-01-01 00:00:00", upper: "2024-12-31 23:59:59", nullable: true}
`},
	// Epochs (docs/accounting.md): the privacy unit is (person, month)
	// or (person, ISO week); person 1 has 6 rows, at most 2 in a month,
	// and the last row lies before the declared range.
	{Name: "epochs", File: "epochs.csv", Columns: epochColumns, Declaration: epochDeclaration("d", "month")},
	{Name: "epochts", File: "epochs.csv", Columns: epochColumns, Declaration: epochDeclaration("ts", "week")},
	// epochs without person 1's rows of February (one unit), for the
	// neighbour cases.
	{Name: "epochs_minus", File: "epochs_minus.csv", Columns: epochColumns, Declaration: epochDeclaration("d", "month")},
	// dated is the epoch fixture's data declared without epochs: a join
	// equating months must not pair a date outside the declared bounds
	// (person 3's 2023-12-31) with the first month.
	{Name: "dated", File: "epochs.csv", Columns: epochColumns, Declaration: datedDeclaration},
	{Name: "calendar", File: "calendar.csv",
		Columns: []Column{{"id", schema.Int}, {"d", schema.Date}, {"ts", schema.Timestamp}},
		Declaration: `    columns:
      id: {type: int}
      d:  {type: date, lower: "1999-01-01", upper: "2001-12-31"}
      ts: {type: timestamp, lower: "1999-01-01 00:00:00", upper: "2001-12-31 23:59:59.999999"}
`},
}

// acctColumns are the columns of acct and acct_minus: two columns are
// named u and b, as the generator's own aliases once were (clash.go has
// a privacy unit named k0 and the other such names); e is NULL for some
// rows.
var acctColumns = []Column{{Name: "pid", Type: schema.Int}, {Name: "grp", Type: schema.Text}, {Name: "v", Type: schema.Int},
	{Name: "u", Type: schema.Int}, {Name: "b", Type: schema.Int}, {Name: "e", Type: schema.Text}}

// acctClickHouse makes e an Enum8 on ClickHouse.
var acctClickHouse = map[string]string{"e": "Nullable(Enum8('a' = 1, 'b' = 2))"}

const acctDeclaration = `    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 1
    columns:
      pid: {type: int}
      grp: {type: text, values: [x, y, z]}
      v:   {type: int, lower: -10, upper: 10}
      u:   {type: int, values: [1, 2]}
      b:   {type: int, lower: 0, upper: 5}
      e:   {type: text, values: [a, b], nullable: true}
`

// datedDeclaration declares the epoch fixture's rows with no epoch, one
// group and up to 100 rows per person.
const datedDeclaration = `    privacy_unit: pid
    id_space: dated
    max_groups_per_unit: 1
    max_rows_per_group: 100
    columns:
      pid: {type: int}
      d:   {type: date, lower: "2024-01-01", upper: "2024-03-31"}
      ts:  {type: timestamp, lower: "2024-01-01 00:00:00", upper: "2024-03-31 23:59:59"}
      v:   {type: int, lower: 0, upper: 100}
`

// epochColumns are the columns of the epoch fixtures.
var epochColumns = []Column{{Name: "pid", Type: schema.Int}, {Name: "d", Type: schema.Date}, {Name: "ts", Type: schema.Timestamp}, {Name: "v", Type: schema.Int}}

// epochDeclaration declares the epoch fixture with epochs by every of
// column, in an id space of its own (so that it may be joined with itself
// on the person).
func epochDeclaration(column, every string) string {
	return `    privacy_unit: pid
    id_space: epochs_` + every + `
    max_groups_per_unit: 3
    max_rows_per_group: 2
    epoch: {column: ` + column + `, every: ` + every + `}
    columns:
      pid: {type: int}
      d:   {type: date, lower: "2024-01-01", upper: "2024-03-31"}
      ts:  {type: timestamp, lower: "2024-01-01 00:00:00", upper: "2024-03-31 23:59:59"}
      v:   {type: int, lower: 0, upper: 100}
`
}
