package pgwire

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	_ "github.com/duckdb/duckdb-go/v2" // the catalog database's engine
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// Catalog queries (pg_catalog, information_schema, version(), ...) are
// answered by a small in-memory DuckDB database that holds system tables
// describing the declared tables an analyst may query: pg_namespace,
// pg_class, pg_attribute, pg_type, pg_description, information_schema.tables
// and .columns, and empty tables for the rest a client may join. It never
// holds data, and it cannot read files (external access is disabled and
// locked). A client's query is read with the PostgreSQL grammar and adjusted
// for DuckDB in its parse tree (schema prefixes, regclass casts, the ~
// operators, a few functions); a query DuckDB still cannot answer gets an
// empty result with the columns it asked for, as an empty catalog would.

// oidBase is the OID of the first declared table; table i has oidBase+i.
const oidBase = 16384

// Fixed OIDs of system objects clients refer to by name.
var systemOIDs = map[string]int32{
	"pg_class": 1259, "pg_attribute": 1249, "pg_type": 1247, "pg_proc": 1255, "pg_namespace": 2615,
	"pg_description": 2609, "pg_constraint": 2606, "pg_index": 2610, "pg_attrdef": 2604, "pg_database": 1262,
}

// sqlType is how a declared type is shown to PostgreSQL clients.
type sqlType struct {
	oid          int32
	name, pretty string
	size         int
}

// declaredTypes is the PostgreSQL type of each declared column type.
var declaredTypes = map[schema.Type]sqlType{
	schema.Int:       {oidInt8, "int8", "bigint", 8},
	schema.Float:     {oidFloat8, "float8", "double precision", 8},
	schema.Text:      {oidText, "text", "text", -1},
	schema.Bool:      {oidBool, "bool", "boolean", 1},
	schema.Date:      {oidDate, "date", "date", 4},
	schema.Timestamp: {oidTimestamp, "timestamp", "timestamp without time zone", 8},
}

func typeOf(declared schema.Type) sqlType {
	if t, ok := declaredTypes[declared]; ok {
		return t
	}
	return declaredTypes[schema.Text]
}

// catalogTypes are the rows of pg_type.
var catalogTypes = []sqlType{
	{oidBool, "bool", "boolean", 1}, {19, "name", "name", 64}, {oidInt8, "int8", "bigint", 8},
	{oidInt2, "int2", "smallint", 2}, {oidInt4, "int4", "integer", 4}, {oidText, "text", "text", -1},
	{26, "oid", "oid", 4}, {oidFloat4, "float4", "real", 4}, {oidFloat8, "float8", "double precision", 8},
	{oidUnknown, "unknown", "unknown", -2}, {oidVarchar, "varchar", "character varying", -1},
	{1082, "date", "date", 4}, {1114, "timestamp", "timestamp without time zone", 8},
	{1184, "timestamptz", "timestamp with time zone", 8}, {oidNumeric, "numeric", "numeric", -1},
}

// catalogSchema creates the system tables and functions. Column lists
// follow PostgreSQL 15's; the columns clients read are filled, the others
// hold their defaults.
const catalogSchema = `
CREATE TABLE pg_namespace(oid BIGINT, nspname VARCHAR, nspowner BIGINT, nspacl VARCHAR);
CREATE TABLE pg_class(oid BIGINT, relname VARCHAR, relnamespace BIGINT, reltype BIGINT, reloftype BIGINT,
  relowner BIGINT, relam BIGINT, relfilenode BIGINT, reltablespace BIGINT, relpages INTEGER, reltuples DOUBLE,
  relallvisible INTEGER, reltoastrelid BIGINT, relhasindex BOOLEAN, relisshared BOOLEAN, relpersistence VARCHAR,
  relkind VARCHAR, relnatts INTEGER, relchecks INTEGER, relhasrules BOOLEAN, relhastriggers BOOLEAN,
  relhassubclass BOOLEAN, relrowsecurity BOOLEAN, relforcerowsecurity BOOLEAN, relispopulated BOOLEAN,
  relreplident VARCHAR, relispartition BOOLEAN, relrewrite BIGINT, relfrozenxid BIGINT, relminmxid BIGINT,
  relacl VARCHAR[], reloptions VARCHAR[], relpartbound VARCHAR, relhasoids BOOLEAN);
CREATE TABLE pg_attribute(attrelid BIGINT, attname VARCHAR, atttypid BIGINT, attstattarget INTEGER,
  attlen INTEGER, attnum INTEGER, attndims INTEGER, attcacheoff INTEGER, atttypmod INTEGER, attbyval BOOLEAN,
  attalign VARCHAR, attstorage VARCHAR, attcompression VARCHAR, attnotnull BOOLEAN, atthasdef BOOLEAN,
  atthasmissing BOOLEAN, attidentity VARCHAR, attgenerated VARCHAR, attisdropped BOOLEAN, attislocal BOOLEAN,
  attinhcount INTEGER, attcollation BIGINT, attacl VARCHAR[], attoptions VARCHAR[], attfdwoptions VARCHAR[]);
CREATE TABLE pg_type(oid BIGINT, typname VARCHAR, typnamespace BIGINT, typowner BIGINT, typlen INTEGER,
  typbyval BOOLEAN, typtype VARCHAR, typcategory VARCHAR, typispreferred BOOLEAN, typisdefined BOOLEAN,
  typdelim VARCHAR, typrelid BIGINT, typsubscript BIGINT, typelem BIGINT, typarray BIGINT, typinput VARCHAR,
  typoutput VARCHAR, typreceive VARCHAR, typsend VARCHAR, typalign VARCHAR, typstorage VARCHAR,
  typnotnull BOOLEAN, typbasetype BIGINT, typtypmod INTEGER, typndims INTEGER, typcollation BIGINT,
  typdefault VARCHAR, typacl VARCHAR[]);
CREATE TABLE pg_description(objoid BIGINT, classoid BIGINT, objsubid INTEGER, description VARCHAR);
CREATE TABLE pg_attrdef(oid BIGINT, adrelid BIGINT, adnum INTEGER, adbin VARCHAR);
CREATE TABLE pg_index(indexrelid BIGINT, indrelid BIGINT, indnatts INTEGER, indnkeyatts INTEGER,
  indisunique BOOLEAN, indisprimary BOOLEAN, indisexclusion BOOLEAN, indimmediate BOOLEAN,
  indisclustered BOOLEAN, indisvalid BOOLEAN, indisready BOOLEAN, indislive BOOLEAN, indisreplident BOOLEAN,
  indkey INTEGER[], indcollation BIGINT[], indclass BIGINT[], indoption INTEGER[], indexprs VARCHAR,
  indpred VARCHAR, indnullsnotdistinct BOOLEAN);
CREATE TABLE pg_constraint(oid BIGINT, conname VARCHAR, connamespace BIGINT, contype VARCHAR,
  condeferrable BOOLEAN, condeferred BOOLEAN, convalidated BOOLEAN, conrelid BIGINT, contypid BIGINT,
  conindid BIGINT, conparentid BIGINT, confrelid BIGINT, confupdtype VARCHAR, confdeltype VARCHAR,
  confmatchtype VARCHAR, conislocal BOOLEAN, coninhcount INTEGER, connoinherit BOOLEAN, conkey INTEGER[],
  confkey INTEGER[], conbin VARCHAR);
CREATE TABLE pg_inherits(inhrelid BIGINT, inhparent BIGINT, inhseqno INTEGER, inhdetachpending BOOLEAN);
CREATE TABLE pg_enum(oid BIGINT, enumtypid BIGINT, enumsortorder DOUBLE, enumlabel VARCHAR);
CREATE TABLE pg_sequence(seqrelid BIGINT, seqtypid BIGINT, seqstart BIGINT, seqincrement BIGINT,
  seqmax BIGINT, seqmin BIGINT, seqcache BIGINT, seqcycle BOOLEAN);
CREATE TABLE pg_proc(oid BIGINT, proname VARCHAR, pronamespace BIGINT, proowner BIGINT, prokind VARCHAR,
  prorettype BIGINT, proargtypes VARCHAR, proretset BOOLEAN);
CREATE TABLE pg_am(oid BIGINT, amname VARCHAR, amhandler VARCHAR, amtype VARCHAR);
CREATE TABLE pg_database(oid BIGINT, datname VARCHAR, datdba BIGINT, encoding INTEGER, datlocprovider VARCHAR,
  datistemplate BOOLEAN, datallowconn BOOLEAN, datconnlimit INTEGER, datcollate VARCHAR, datctype VARCHAR,
  daticulocale VARCHAR, datacl VARCHAR[], dattablespace BIGINT);
CREATE TABLE pg_roles(oid BIGINT, rolname VARCHAR, rolsuper BOOLEAN, rolinherit BOOLEAN, rolcreaterole BOOLEAN,
  rolcreatedb BOOLEAN, rolcanlogin BOOLEAN, rolreplication BOOLEAN, rolconnlimit INTEGER, rolvaliduntil VARCHAR,
  rolbypassrls BOOLEAN, rolconfig VARCHAR[]);
CREATE TABLE pg_user(usename VARCHAR, usesysid BIGINT, usecreatedb BOOLEAN, usesuper BOOLEAN, userepl BOOLEAN,
  usebypassrls BOOLEAN, passwd VARCHAR, valuntil VARCHAR, useconfig VARCHAR[]);
CREATE TABLE pg_settings(name VARCHAR, setting VARCHAR, unit VARCHAR, category VARCHAR, short_desc VARCHAR,
  context VARCHAR, vartype VARCHAR, source VARCHAR);
CREATE TABLE pg_tables(schemaname VARCHAR, tablename VARCHAR, tableowner VARCHAR, tablespace VARCHAR,
  hasindexes BOOLEAN, hasrules BOOLEAN, hastriggers BOOLEAN, rowsecurity BOOLEAN);
CREATE TABLE pg_views(schemaname VARCHAR, viewname VARCHAR, viewowner VARCHAR, definition VARCHAR);
CREATE TABLE pg_matviews(schemaname VARCHAR, matviewname VARCHAR, matviewowner VARCHAR, definition VARCHAR);
CREATE TABLE pg_extension(oid BIGINT, extname VARCHAR, extowner BIGINT, extnamespace BIGINT, extversion VARCHAR);
CREATE TABLE pg_trigger(oid BIGINT, tgrelid BIGINT, tgname VARCHAR, tgenabled VARCHAR, tgisinternal BOOLEAN);
CREATE TABLE pg_partitioned_table(partrelid BIGINT, partstrat VARCHAR, partnatts INTEGER);
CREATE TABLE pg_foreign_table(ftrelid BIGINT, ftserver BIGINT);
CREATE TABLE pg_policy(oid BIGINT, polname VARCHAR, polrelid BIGINT, polcmd VARCHAR, polpermissive BOOLEAN);
CREATE TABLE pg_statistic_ext(oid BIGINT, stxrelid BIGINT, stxname VARCHAR, stxnamespace BIGINT);
CREATE TABLE pg_publication(oid BIGINT, pubname VARCHAR, puballtables BOOLEAN);
CREATE TABLE pg_publication_rel(oid BIGINT, prpubid BIGINT, prrelid BIGINT);
CREATE TABLE pg_collation(oid BIGINT, collname VARCHAR, collnamespace BIGINT);
CREATE TABLE pg_tablespace(oid BIGINT, spcname VARCHAR);
CREATE TABLE information_schema_schemata(catalog_name VARCHAR, schema_name VARCHAR, schema_owner VARCHAR);
CREATE TABLE information_schema_tables(table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR,
  table_type VARCHAR, self_referencing_column_name VARCHAR, reference_generation VARCHAR,
  user_defined_type_catalog VARCHAR, user_defined_type_schema VARCHAR, user_defined_type_name VARCHAR,
  is_insertable_into VARCHAR, is_typed VARCHAR, commit_action VARCHAR);
CREATE TABLE information_schema_columns(table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR,
  column_name VARCHAR, ordinal_position INTEGER, column_default VARCHAR, is_nullable VARCHAR,
  data_type VARCHAR, character_maximum_length INTEGER, character_octet_length INTEGER,
  numeric_precision INTEGER, numeric_precision_radix INTEGER, numeric_scale INTEGER,
  datetime_precision INTEGER, udt_catalog VARCHAR, udt_schema VARCHAR, udt_name VARCHAR,
  is_identity VARCHAR, is_generated VARCHAR, is_updatable VARCHAR);
CREATE TABLE information_schema_views(table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR,
  view_definition VARCHAR);
CREATE TABLE information_schema_table_constraints(constraint_catalog VARCHAR, constraint_schema VARCHAR,
  constraint_name VARCHAR, table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR,
  constraint_type VARCHAR);
CREATE TABLE information_schema_key_column_usage(constraint_catalog VARCHAR, constraint_schema VARCHAR,
  constraint_name VARCHAR, table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR,
  column_name VARCHAR, ordinal_position INTEGER);
CREATE MACRO format_type(t, m) AS (SELECT pretty FROM dpstat_type_names WHERE oid = t);
CREATE MACRO pg_get_expr(e, r) AS NULL, (e, r, p) AS NULL;
CREATE MACRO pg_table_is_visible(o) AS true;
CREATE MACRO pg_type_is_visible(o) AS true;
CREATE MACRO pg_get_userbyid(o) AS 'dpstat';
CREATE MACRO pg_get_serial_sequence(t, c) AS NULL;
CREATE MACRO pg_get_indexdef(o) AS NULL, (o, c, p) AS NULL;
CREATE MACRO pg_get_constraintdef(o) AS NULL, (o, p) AS NULL;
CREATE MACRO pg_get_viewdef(o) AS NULL, (o, p) AS NULL;
CREATE MACRO pg_get_partkeydef(o) AS NULL;
CREATE MACRO pg_encoding_to_char(e) AS 'UTF8';
CREATE MACRO obj_description(o) AS (SELECT description FROM pg_description WHERE objoid = o AND objsubid = 0),
  (o, c) AS (SELECT description FROM pg_description WHERE objoid = o AND objsubid = 0);
CREATE MACRO col_description(o, n) AS (SELECT description FROM pg_description WHERE objoid = o AND objsubid = n);
CREATE MACRO shobj_description(o, c) AS NULL;
CREATE MACRO has_table_privilege(t, p) AS true, (u, t, p) AS true;
CREATE MACRO has_schema_privilege(s, p) AS true, (u, s, p) AS true;
CREATE MACRO has_database_privilege(d, p) AS true, (u, d, p) AS true;
CREATE MACRO pg_has_role(r, p) AS true, (u, r, p) AS true;
CREATE MACRO current_schemas(b) AS ['public'];
CREATE MACRO pg_table_size(o) AS 0;
CREATE MACRO pg_relation_size(o) AS 0;
CREATE MACRO pg_total_relation_size(o) AS 0;
CREATE MACRO pg_size_pretty(n) AS '0 bytes';
CREATE MACRO quote_ident(s) AS '"' || replace(s, '"', '""') || '"';
`

// catalogDB is the system-catalog database of one analyst's sessions.
type catalogDB struct {
	db *sql.DB
	// key names the analyst and the tables it describes; a session moves
	// to another database when the analyst's grants change.
	key string
	// users counts the sessions holding it (guarded by catalogCache.mu).
	users int
}

func (c *catalogDB) close() {
	if c != nil && c.db != nil {
		c.db.Close()
	}
}

// catalogCache shares catalog databases among the sessions of one analyst
// with the same grants; a database is closed when its last session lets
// go of it, so there are at most as many as analysts connected.
type catalogCache struct {
	mu  sync.Mutex
	dbs map[string]*catalogDB
}

// acquire returns the catalog database for key, building it with build if
// no session holds one.
func (cc *catalogCache) acquire(key string, build func() (*catalogDB, error)) (*catalogDB, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c, ok := cc.dbs[key]; ok {
		c.users++
		return c, nil
	}
	c, err := build()
	if err != nil {
		return nil, err
	}
	if cc.dbs == nil {
		cc.dbs = map[string]*catalogDB{}
	}
	c.key, c.users = key, 1
	cc.dbs[key] = c
	return c, nil
}

// release lets go of c; the last session to do so closes it.
func (cc *catalogCache) release(c *catalogDB) {
	if c == nil {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c.users--
	if c.users <= 0 && cc.dbs[c.key] == c {
		delete(cc.dbs, c.key)
		c.close()
	}
}

// openCatalogDB builds the catalog database for the visible tables; all is
// every declared table, which fixes each table's OID.
func openCatalogDB(visible, all []answer.TableInfo, user string) (*catalogDB, error) {
	db, err := sql.Open("duckdb", "?threads=1&enable_external_access=false&memory_limit=64MB")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	fail := func(err error) (*catalogDB, error) {
		db.Close()
		return nil, fmt.Errorf("building the catalog database: %w", err)
	}
	ins := []string{"CREATE TABLE dpstat_type_names(oid BIGINT, pretty VARCHAR)", catalogSchema}
	add := func(format string, args ...any) { ins = append(ins, fmt.Sprintf(format, args...)) }
	add("INSERT INTO pg_namespace VALUES (11, 'pg_catalog', 10, NULL), (2200, 'public', 10, NULL), (13000, 'information_schema', 10, NULL)")
	add("INSERT INTO information_schema_schemata VALUES ('dpstat', 'pg_catalog', 'dpstat'), ('dpstat', 'public', 'dpstat'), ('dpstat', 'information_schema', 'dpstat')")
	add("INSERT INTO pg_am VALUES (2, 'heap', 'heap_tableam_handler', 't')")
	add("INSERT INTO pg_database VALUES (16383, 'dpstat', 10, 6, 'c', false, true, -1, 'C', 'C', NULL, NULL, 1663)")
	add("INSERT INTO pg_roles VALUES (10, %s, false, true, false, false, true, false, -1, NULL, false, NULL)", lit(user))
	add("INSERT INTO pg_tablespace VALUES (1663, 'pg_default')")
	add("INSERT INTO pg_user VALUES (%s, 10, false, false, false, false, '********', NULL, NULL)", lit(user))
	settings := make([]string, 0, len(fixedSettings))
	for name := range fixedSettings {
		settings = append(settings, name)
	}
	sort.Strings(settings)
	for _, name := range settings {
		add("INSERT INTO pg_settings VALUES (%s, %s, NULL, 'dpstat', '', 'internal', 'string', 'default')", lit(name), lit(fixedSettings[name]))
	}
	for name, oid := range systemOIDs {
		add("INSERT INTO pg_class (oid, relname, relnamespace, relkind, relpersistence, relam, relnatts, relchecks, reltuples, relhasindex, relisshared, relhasrules, relhastriggers, relhassubclass, relrowsecurity, relforcerowsecurity, relispopulated, relreplident, relispartition, relhasoids, reloftype, reltablespace, reltoastrelid) VALUES (%d, %s, 11, 'r', 'p', 2, 0, 0, -1, false, false, false, false, false, false, false, true, 'n', false, false, 0, 0, 0)", oid, lit(name))
	}
	for _, t := range catalogTypes {
		byVal := t.size > 0 && t.size <= 8
		cat := map[int32]string{oidBool: "B", oidText: "S", oidVarchar: "S", 19: "S", oidUnknown: "X", 1082: "D", 1114: "D", 1184: "D"}[t.oid]
		if cat == "" {
			cat = "N"
		}
		add("INSERT INTO pg_type (oid, typname, typnamespace, typowner, typlen, typbyval, typtype, typcategory, typispreferred, typisdefined, typdelim, typrelid, typelem, typarray, typnotnull, typbasetype, typtypmod, typndims, typcollation) VALUES (%d, %s, 11, 10, %d, %t, 'b', '%s', false, true, ',', 0, 0, 0, false, 0, -1, 0, 0)", t.oid, lit(t.name), t.size, byVal, cat)
		add("INSERT INTO dpstat_type_names VALUES (%d, %s)", t.oid, lit(t.pretty))
	}
	oids := map[string]int{}
	for i, t := range all {
		oids[t.Name] = oidBase + i
	}
	for _, t := range visible {
		oid, ok := oids[t.Name]
		if !ok {
			continue
		}
		add("INSERT INTO pg_class (oid, relname, relnamespace, reltype, reloftype, relowner, relam, relfilenode, reltablespace, relpages, reltuples, relallvisible, reltoastrelid, relhasindex, relisshared, relpersistence, relkind, relnatts, relchecks, relhasrules, relhastriggers, relhassubclass, relrowsecurity, relforcerowsecurity, relispopulated, relreplident, relispartition, relrewrite, relfrozenxid, relminmxid, relhasoids) VALUES (%d, %s, 2200, 0, 0, 10, 2, %d, 0, 0, -1, 0, 0, false, false, 'p', 'r', %d, 0, false, false, false, false, false, true, 'd', false, 0, 0, 0, false)", oid, lit(t.Name), oid, len(t.Columns))
		add("INSERT INTO pg_tables VALUES ('public', %s, 'dpstat', NULL, false, false, false, false)", lit(t.Name))
		add("INSERT INTO information_schema_tables VALUES ('dpstat', 'public', %s, 'BASE TABLE', NULL, NULL, NULL, NULL, NULL, 'NO', 'NO', NULL)", lit(t.Name))
		add("INSERT INTO pg_description VALUES (%d, 1259, 0, %s)", oid, lit(tableNote(t)))
		for j, c := range t.Columns {
			st := typeOf(c.Type)
			byVal := st.size > 0
			add("INSERT INTO pg_attribute VALUES (%d, %s, %d, -1, %d, %d, 0, -1, -1, %t, 'd', 'p', '', %t, false, false, '', '', false, true, 0, 0, NULL, NULL, NULL)",
				oid, lit(c.Name), st.oid, st.size, j+1, byVal, !c.Nullable)
			nullable := "NO"
			if c.Nullable {
				nullable = "YES"
			}
			add("INSERT INTO information_schema_columns (table_catalog, table_schema, table_name, column_name, ordinal_position, is_nullable, data_type, udt_catalog, udt_schema, udt_name, is_identity, is_generated, is_updatable) VALUES ('dpstat', 'public', %s, %s, %d, '%s', %s, 'dpstat', 'pg_catalog', %s, 'NO', 'NEVER', 'NO')",
				lit(t.Name), lit(c.Name), j+1, nullable, lit(st.pretty), lit(st.name))
			if note := columnNote(&t, c); note != "" {
				add("INSERT INTO pg_description VALUES (%d, 1259, %d, %s)", oid, j+1, lit(note))
			}
		}
	}
	// One round trip: the statements run in order.
	ins = append(ins, "SET lock_configuration = true")
	if _, err := db.Exec(strings.Join(ins, ";\n")); err != nil {
		return fail(err)
	}
	return &catalogDB{db: db}, nil
}

// lit quotes s as a SQL string literal for the catalog database's own
// statements (declared names and notes, never a client's text).
func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func tablesKey(ts []answer.TableInfo) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, "\x00")
}

// catalogDatabase returns the session's catalog database for the tables
// the analyst may query now.
func (ss *session) catalogDatabase() (*catalogDB, error) {
	visible := ss.s.opts.Answerer.Tables(ss.user.Name)
	key := ss.user.Name + "\x01" + tablesKey(visible)
	if ss.cat != nil && ss.cat.key == key {
		return ss.cat, nil
	}
	ss.s.catalogs.release(ss.cat)
	ss.cat = nil
	c, err := ss.s.catalogs.acquire(key, func() (*catalogDB, error) {
		return openCatalogDB(visible, ss.s.opts.Answerer.Tables(""), ss.user.Name)
	})
	if err != nil {
		return nil, err
	}
	ss.cat = c
	return c, nil
}

// catalog answers a catalog query from the catalog database.
func (ss *session) catalog(text string) ([]column, [][]any, error) {
	tree, err := pg_query.Parse(text)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, nil, pgErrorf("42601", "syntax error in catalog query")
	}
	names := targetNames(tree.Stmts[0].Stmt)
	ss.adaptForCatalog(tree)
	q, err := pg_query.Deparse(tree)
	if err != nil {
		return emptyResult(names), nil, nil
	}
	cdb, err := ss.catalogDatabase()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.opts.QueryTimeout)
	defer cancel()
	rows, err := cdb.db.QueryContext(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, pgErrorf("57014", "the catalog query ran out of time")
		}
		return emptyResult(names), nil, nil
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return emptyResult(names), nil, nil
	}
	cols := make([]column, len(types))
	for i, t := range types {
		cols[i] = column{t.Name(), duckOID(t.DatabaseTypeName())}
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		for i, v := range vals {
			vals[i] = catalogValue(v)
		}
		out = append(out, vals)
		if len(out) > 100000 {
			return nil, nil, pgErrorf("54000", "the catalog query returned more than 100000 rows")
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, nil, pgErrorf("57014", "the catalog query ran out of time")
		}
		return emptyResult(names), nil, nil
	}
	return cols, out, nil
}

func emptyResult(names []string) []column {
	cols := make([]column, len(names))
	for i, n := range names {
		cols[i] = column{n, oidText}
	}
	return cols
}

// catalogValue turns a DuckDB value into one the encoder writes: lists in
// PostgreSQL's array text form, other values as the query engine reads
// them (ir.CanonicalValue).
func catalogValue(v any) any {
	x, ok := v.([]any)
	if !ok {
		return ir.CanonicalValue(v)
	}
	parts := make([]string, len(x))
	for i, e := range x {
		if e == nil {
			parts[i] = "NULL"
		} else {
			parts[i] = fmt.Sprint(e)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// duckOID is the PostgreSQL type a DuckDB result column is sent as.
func duckOID(t string) uint32 {
	switch t {
	case "BIGINT", "UBIGINT", "UINTEGER", "HUGEINT":
		return oidInt8
	case "INTEGER", "USMALLINT":
		return oidInt4
	case "SMALLINT", "TINYINT", "UTINYINT":
		return oidInt2
	case "DOUBLE", "FLOAT", "DECIMAL":
		return oidFloat8
	case "BOOLEAN":
		return oidBool
	}
	return oidText
}

// targetNames are the column names a SELECT asks for, as PostgreSQL names
// them.
func targetNames(n *pg_query.Node) []string {
	sel := n.GetSelectStmt()
	for sel != nil && len(sel.TargetList) == 0 && sel.Larg != nil {
		sel = sel.Larg
	}
	if sel == nil {
		return []string{"?column?"}
	}
	var out []string
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil {
			continue
		}
		name := rt.Name
		if name == "" {
			switch {
			case rt.Val.GetColumnRef() != nil:
				f := rt.Val.GetColumnRef().Fields
				name = f[len(f)-1].GetString_().GetSval()
			case rt.Val.GetFuncCall() != nil:
				f := rt.Val.GetFuncCall().Funcname
				name = f[len(f)-1].GetString_().GetSval()
			}
		}
		if name == "" {
			name = "?column?"
		}
		out = append(out, name)
	}
	return out
}

// adaptForCatalog edits a catalog query's parse tree for the catalog
// database: schema prefixes go (the system tables live in DuckDB's main
// schema, information_schema.x becomes information_schema_x), session
// functions become constants, regclass and friends become OIDs, the ~
// operators become regexp_matches, COLLATE clauses go.
func (ss *session) adaptForCatalog(tree *pg_query.ParseResult) {
	walk(tree.ProtoReflect(), func(n *pg_query.Node) {
		switch x := n.Node.(type) {
		case *pg_query.Node_RangeVar:
			rv := x.RangeVar
			switch strings.ToLower(rv.Schemaname) {
			case "pg_catalog":
				rv.Schemaname = ""
			case "information_schema":
				rv.Schemaname, rv.Relname = "", "information_schema_"+strings.ToLower(rv.Relname)
			}
			rv.Catalogname = ""
		case *pg_query.Node_FuncCall:
			fc := x.FuncCall
			fc.Funcname = unqualified(fc.Funcname)
			if len(fc.Funcname) == 0 {
				return
			}
			switch name := strings.ToLower(fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()); name {
			case "version":
				n.Node = stringConst("PostgreSQL " + ServerVersion + ": dpstat differentially private SQL").Node
			case "current_database":
				n.Node = stringConst("dpstat").Node
			case "current_schema":
				n.Node = stringConst("public").Node
			case "current_user", "session_user", "user":
				n.Node = stringConst(ss.user.Name).Node
			case "pg_backend_pid":
				n.Node = intConst(0).Node
			case "pg_is_in_recovery":
				n.Node = boolConst(false).Node
			case "current_setting":
				if len(fc.Args) > 0 {
					if s := fc.Args[0].GetAConst().GetSval(); s != nil {
						v, _ := ss.settingValue(strings.ToLower(s.Sval))
						n.Node = stringConst(v).Node
					}
				}
			case "json_build_object":
				fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("json_object")}
			}
		case *pg_query.Node_SqlvalueFunction:
			switch x.SqlvalueFunction.Op {
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg_query.SQLValueFunctionOp_SVFOP_USER,
				pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
				n.Node = stringConst(ss.user.Name).Node
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
				n.Node = stringConst("dpstat").Node
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
				n.Node = stringConst("public").Node
			}
		case *pg_query.Node_TypeCast:
			tc := x.TypeCast
			if tc.TypeName == nil {
				return
			}
			tc.TypeName.Names = unqualified(tc.TypeName.Names)
			if len(tc.TypeName.Names) == 0 {
				return
			}
			switch name := tc.TypeName.Names[len(tc.TypeName.Names)-1].GetString_().GetSval(); name {
			case "regclass", "regtype":
				if s := tc.Arg.GetAConst().GetSval(); s != nil {
					n.Node = intConst(ss.objectOID(name, s.Sval)).Node
					return
				}
				tc.TypeName.Names = []*pg_query.Node{pg_query.MakeStrNode("int8")}
			case "oid", "regproc", "regprocedure", "regnamespace", "regrole", "regoper", "regconfig", "xid":
				tc.TypeName.Names = []*pg_query.Node{pg_query.MakeStrNode("int8")}
			case "name", "char", "bpchar":
				tc.TypeName.Names = []*pg_query.Node{pg_query.MakeStrNode("text")}
				tc.TypeName.Typmods = nil
			}
		case *pg_query.Node_AExpr:
			e := x.AExpr
			e.Name = unqualified(e.Name)
			if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || len(e.Name) != 1 {
				return
			}
			op := e.Name[0].GetString_().GetSval()
			var args []*pg_query.Node
			switch op {
			case "~", "!~":
				args = []*pg_query.Node{e.Lexpr, e.Rexpr}
			case "~*", "!~*":
				args = []*pg_query.Node{e.Lexpr, e.Rexpr, stringConst("i")}
			default:
				return
			}
			call := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("regexp_matches")}, args, -1)
			if strings.HasPrefix(op, "!") {
				call = pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{call}, -1)
			}
			n.Node = call.Node
		case *pg_query.Node_CollateClause:
			if x.CollateClause.Arg != nil {
				n.Node = x.CollateClause.Arg.Node
			}
		}
	})
}

// unqualified drops a leading pg_catalog from a qualified name.
func unqualified(names []*pg_query.Node) []*pg_query.Node {
	if len(names) > 1 && strings.EqualFold(names[0].GetString_().GetSval(), "pg_catalog") {
		return names[1:]
	}
	return names
}

// objectOID is the OID of a relation ('adult'::regclass) or a type
// ('int8'::regtype) named in a query; 0 if there is none.
func (ss *session) objectOID(kind, name string) int32 {
	name = strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(name), "pg_catalog."), "public.")
	name = strings.Trim(name, `"`)
	if kind == "regtype" {
		for _, t := range catalogTypes {
			if t.name == name || t.pretty == name {
				return t.oid
			}
		}
		return 0
	}
	if oid, ok := systemOIDs[name]; ok {
		return oid
	}
	for i, t := range ss.s.opts.Answerer.Tables("") {
		if t.Name == name {
			return int32(oidBase + i)
		}
	}
	return 0
}

func fmtBound(f *float64) string {
	if f == nil {
		return "?"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// columnNote is the description of a declared column: its bounds or
// public values, and whether it is the privacy unit.
func columnNote(t *answer.TableInfo, c answer.ColumnInfo) string {
	var parts []string
	if c.Name == t.PrivacyUnit {
		parts = append(parts, "privacy unit")
	}
	switch {
	case len(c.Range) == 2:
		parts = append(parts, fmt.Sprintf("%s in [%s, %s]", c.Type, c.Range[0], c.Range[1]))
	case c.Lower != nil || c.Upper != nil:
		parts = append(parts, fmt.Sprintf("%s in [%s, %s]", c.Type, fmtBound(c.Lower), fmtBound(c.Upper)))
	case len(c.Values) > 0:
		vals := c.Values
		more := ""
		if len(vals) > 8 {
			vals, more = vals[:8], ", ..."
		}
		parts = append(parts, string(c.Type)+" in {"+strings.Join(vals, ", ")+more+"}")
	}
	return strings.Join(parts, "; ")
}

func tableNote(t answer.TableInfo) string {
	if t.Public {
		return "public table: join it to a private table (it is not queried alone and has no budget)"
	}
	if t.PrivacyUnit == "" {
		return "one row per person"
	}
	return fmt.Sprintf("privacy unit %s (at most %d groups per person, %d rows per group)", t.PrivacyUnit, t.MaxGroupsPerUnit, t.MaxRowsPerGroup)
}
