// Package clienttest runs the clients analysts already use against a real
// dpstat serve on the example catalog: psycopg 2 and 3, SQLAlchemy and
// pandas (Debian's python3), the PostgreSQL JDBC driver, and dpstat's own
// Python client. It holds tests only; a client that is not installed is
// skipped with a message saying which package provides it.
package clienttest
