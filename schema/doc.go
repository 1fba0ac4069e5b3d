// Package schema is the vocabulary every layer shares about a column:
// its type (int, float, text, bool, date, timestamp), the calendar
// arithmetic and spelling of date and timestamp values (whole days and
// microseconds since 1970-01-01), the limits the declaration and the
// query stages both rely on, and the prefix reserved for the names of
// generated columns.
//
// The catalog declares columns of these types, the query stages reason
// about them, and the engines map them to their own types
// (engine.TypeOf); none of them defines a type of its own.
package schema
