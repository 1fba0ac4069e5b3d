// Package ledger is dpstat's durable record of privacy budgets and releases.
//
// Every release is charged here before it leaves: the charge is committed
// and synced to disk first, and an answer whose charge did not commit is
// never released. Budgets are kept per (dataset, analyst).
package ledger
