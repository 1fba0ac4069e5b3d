// Package ledger is dpstat's durable record of privacy budgets and releases.
//
// Every release is charged here before it leaves: the charge is committed
// and synced to disk first, and an answer whose charge did not commit is
// never released. Budgets are kept per (dataset, analyst).
//
// The ledger is a bbolt file. A charge checks the budget with its rule (see
// package accounting), appends the release and updates the budget in one
// transaction; concurrent charges share a commit (group commit) without
// ever sharing budget. Charges are idempotent by request ID. A file that is
// not a ledger, is damaged or has a newer format is refused and left
// untouched. One process at a time may have a ledger open for writing;
// others wait in Open for Options.Timeout.
//
// A ledger can live in PostgreSQL instead (Open with a postgres://… URL):
// the same records in a schema of their own, shared by several processes
// (server replicas), every charge in a transaction that holds the ledger's
// writer lock, so that no race across processes can overspend a budget,
// and retried when the server goes away. The budget, chain and
// verification logic is the same for both stores: it is written against a
// small key-value interface (storage.go) that bbolt and PostgreSQL
// (pgstore.go) implement. Copy a file ledger into a database with Copy.
package ledger
