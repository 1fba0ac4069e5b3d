// Package ir is dpstat's logical query representation: what every stage
// after parsing reads instead of the analyst's text.
//
// A Query reads one relation: a table, a join with public tables, a join
// of private tables of one id space on the privacy unit (Join), or a
// per-person pre-aggregation (PreAggregate). Its conditions (Expr), typed
// scalar expressions (Scalar, TextFn, DatePart), computed group keys
// (Bucket), aggregates and outputs are small node types. Each carries the
// facts the DP planner needs and nothing else: which column is the
// privacy unit, or that the relation is public; each column's and each
// expression's type, nullability and bounds, derived by interval
// arithmetic from the data owner's declaration (ScalarRange, Relation),
// never from the data; and the public value sets of keys.
//
// Every expression here is total: the SQL generated from it cannot fail,
// overflow or depend on one person's row for whether it runs. A refusal
// from any stage is a RefusedError, made before anything is charged.
package ir
