package devserver

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	tsql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	postgresplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	dbschemas "go.temporal.io/server/schema"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
)

// Postgres configures PostgreSQL persistence: one database for the
// server's own state and one for SQL visibility (the "postgres12"
// plugin). The databases are created when missing and their schema is
// set up or upgraded with the versioned schema files embedded in the
// linked server, as temporal-sql-tool would.
type Postgres struct {
	// Addr is host:port of the PostgreSQL server.
	Addr string
	// User and Password authenticate; Password may be empty (trust).
	User, Password string
	// Database holds the server's state; default "temporal".
	Database string
	// VisibilityDatabase holds SQL visibility; default "temporal_visibility".
	VisibilityDatabase string
	// ConnectAttributes are passed in the connection URL (e.g. sslmode).
	ConnectAttributes map[string]string
	// MaxConns bounds each store's connection pool; 0 uses the server's default.
	MaxConns int
}

// ParsePostgresURL reads postgres://USER[:PASSWORD]@HOST:PORT/DATABASE
// with optional query parameters: visibility_database (default
// DATABASE_visibility, or temporal_visibility when DATABASE is empty),
// max_conns, and any other parameter as a connection attribute (e.g.
// sslmode=require).
func ParsePostgresURL(s string) (*Postgres, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("devserver: postgres url: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, fmt.Errorf("devserver: postgres url %q: scheme must be postgres://", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("devserver: postgres url %q: no host", u.Redacted())
	}
	p := &Postgres{Addr: u.Host, User: u.User.Username(), Database: strings.TrimPrefix(u.Path, "/")}
	if u.Port() == "" {
		p.Addr = u.Host + ":5432"
	}
	p.Password, _ = u.User.Password()
	q := u.Query()
	if v := q.Get("visibility_database"); v != "" {
		p.VisibilityDatabase = v
	} else if p.Database != "" {
		p.VisibilityDatabase = p.Database + "_visibility"
	}
	if v := q.Get("max_conns"); v != "" {
		if p.MaxConns, err = strconv.Atoi(v); err != nil || p.MaxConns < 0 {
			return nil, fmt.Errorf("devserver: postgres url: max_conns %q is not a count", v)
		}
	}
	q.Del("visibility_database")
	q.Del("max_conns")
	for k := range q {
		if p.ConnectAttributes == nil {
			p.ConnectAttributes = map[string]string{}
		}
		p.ConnectAttributes[k] = q.Get(k)
	}
	return p, nil
}

func (p *Postgres) withDefaults() Postgres {
	c := *p
	if c.Database == "" {
		c.Database = "temporal"
	}
	if c.VisibilityDatabase == "" {
		c.VisibilityDatabase = "temporal_visibility"
	}
	return c
}

// sqlConfig is the server's connection config for one database.
func (p *Postgres) sqlConfig(database string) *config.SQL {
	attrs := map[string]string{}
	for k, v := range p.ConnectAttributes {
		attrs[k] = v
	}
	return &config.SQL{
		PluginName: postgresplugin.PluginName, DatabaseName: database,
		ConnectAddr: p.Addr, ConnectProtocol: "tcp", User: p.User, Password: p.Password,
		ConnectAttributes: attrs, MaxConns: p.MaxConns, MaxIdleConns: p.MaxConns,
	}
}

// String names the databases without the password.
func (p *Postgres) String() string {
	return fmt.Sprintf("postgresql://%s@%s/%s (visibility %s)", p.User, p.Addr, p.Database, p.VisibilityDatabase)
}

// setupPostgres creates both databases when missing and brings their
// schema to the version the linked server needs.
func setupPostgres(p Postgres) error {
	for _, db := range []struct{ name, schema, version string }{
		{p.Database, "postgresql/v12/temporal", pgschema.Version},
		{p.VisibilityDatabase, "postgresql/v12/visibility", pgschema.VisibilityVersion},
	} {
		if err := setupDatabase(p, db.name, db.schema, db.version); err != nil {
			return fmt.Errorf("devserver: postgres database %s: %w", db.name, err)
		}
	}
	return nil
}

func adminDB(p Postgres, database string) (sqlplugin.AdminDB, error) {
	return tsql.NewSQLAdminDB(sqlplugin.DbKindUnknown, p.sqlConfig(database), resolver.NewNoopResolver(),
		log.NewNoopLogger(), metrics.NoopMetricsHandler)
}

func setupDatabase(p Postgres, name, schemaDir, target string) error {
	db, err := adminDB(p, name)
	if err == nil {
		defer db.Close()
		err = db.CreateSchemaVersionTables()
	}
	if err != nil {
		// Most likely the database does not exist yet: create it from
		// the maintenance database and try again.
		admin, aerr := adminDB(p, "postgres")
		if aerr != nil {
			return errors.Join(err, aerr)
		}
		cerr := admin.CreateDatabase(name)
		admin.Close()
		if cerr != nil {
			return fmt.Errorf("create: %w (after: %w)", cerr, err)
		}
		if db, err = adminDB(p, name); err != nil {
			return err
		}
		defer db.Close()
		if err := db.CreateSchemaVersionTables(); err != nil {
			return fmt.Errorf("schema version tables: %w", err)
		}
	}
	current, err := db.ReadSchemaVersion(name)
	if errors.Is(err, sql.ErrNoRows) {
		current, err = "0.0", nil
	}
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	return updateSchema(db, name, schemaDir, current, target)
}

// manifest is a versioned schema directory's manifest.json.
type manifest struct {
	CurrVersion          string
	MinCompatibleVersion string
	Description          string
	SchemaUpdateCqlFiles []string
	AllowNoCqlFiles      bool
}

// updateSchema applies every versioned step after current up to target,
// recording each in the schema tables as temporal-sql-tool does.
func updateSchema(db sqlplugin.AdminDB, name, schemaDir, current, target string) error {
	cur, err := parseVersion(current)
	if err != nil {
		return err
	}
	tgt, err := parseVersion(target)
	if err != nil {
		return err
	}
	if compareVersions(cur, tgt) > 0 {
		return fmt.Errorf("schema version %s is newer than this build's %s", current, target)
	}
	assets := dbschemas.Assets()
	dir := path.Join(schemaDir, "versioned")
	entries, err := fs.ReadDir(assets, dir)
	if err != nil {
		return fmt.Errorf("embedded schema: %w", err)
	}
	type step struct {
		v   []int
		dir string
	}
	var steps []step
	for _, e := range entries {
		v, err := parseVersion(strings.TrimPrefix(e.Name(), "v"))
		if !e.IsDir() || err != nil {
			continue
		}
		if compareVersions(v, cur) > 0 && compareVersions(v, tgt) <= 0 {
			steps = append(steps, step{v, path.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return compareVersions(a.v, b.v) })
	for _, s := range steps {
		raw, err := fs.ReadFile(assets, path.Join(s.dir, "manifest.json"))
		if err != nil {
			return fmt.Errorf("embedded schema: %w", err)
		}
		var m manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s/manifest.json: %w", s.dir, err)
		}
		if len(m.SchemaUpdateCqlFiles) == 0 && !m.AllowNoCqlFiles {
			return fmt.Errorf("%s: no schema files", s.dir)
		}
		for _, f := range m.SchemaUpdateCqlFiles {
			text, err := fs.ReadFile(assets, path.Join(s.dir, f))
			if err != nil {
				return fmt.Errorf("embedded schema: %w", err)
			}
			stmts, err := persistence.LoadAndSplitQueryFromReaders([]io.Reader{bytes.NewReader(text)})
			if err != nil {
				return fmt.Errorf("%s/%s: %w", s.dir, f, err)
			}
			for _, stmt := range stmts {
				if err := db.Exec(stmt); err != nil {
					return fmt.Errorf("%s/%s: %w", s.dir, f, err)
				}
			}
		}
		if err := db.UpdateSchemaVersion(name, m.CurrVersion, m.MinCompatibleVersion); err != nil {
			return fmt.Errorf("record schema version %s: %w", m.CurrVersion, err)
		}
		if err := db.WriteSchemaUpdateLog(current, m.CurrVersion, "", m.Description); err != nil {
			return fmt.Errorf("record schema update %s: %w", m.CurrVersion, err)
		}
		current = m.CurrVersion
	}
	return nil
}

func parseVersion(s string) ([]int, error) {
	var v []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("schema version %q: %w", s, err)
		}
		v = append(v, n)
	}
	return v, nil
}

func compareVersions(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
