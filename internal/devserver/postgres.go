package devserver

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	postgresplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// Postgres configures PostgreSQL persistence: one database for the
// server's own state and one for SQL visibility (the "postgres12"
// plugin). The databases are created when missing and their schema is
// set up or upgraded by the server's own SQL schema tool (run in this
// process) with the versioned schema files embedded in the linked server.
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
// schema to the version the linked server needs, with the server's own
// SQL schema tool (go.temporal.io/server/tools/sql, temporal-sql-tool):
// the same steps as `temporal-sql-tool --db DB create`, `setup-schema -v
// 0.0` and `update-schema --schema-name postgresql/v12/...`, run in this
// process on the schema files embedded in the linked server.
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

func setupDatabase(p Postgres, name, schemaName, target string) error {
	logger := log.NewNoopLogger()
	conn, err := sqltool.NewConnection(p.sqlConfig(name), logger)
	if err == nil {
		if err = conn.CreateSchemaVersionTables(); err != nil {
			conn.Close()
		}
	}
	if err != nil {
		// Most likely the database does not exist yet: create it from
		// the maintenance database (the tool's `create`) and connect again.
		if cerr := sqltool.DoCreateDatabase(p.sqlConfig(name), "postgres", logger); cerr != nil {
			return fmt.Errorf("create: %w (after: %w)", cerr, err)
		}
		if conn, err = sqltool.NewConnection(p.sqlConfig(name), logger); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
	}
	defer conn.Close()
	// setup-schema -v 0.0: the version tables, and version 0.0 unless the
	// database already has a later one.
	if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
		return fmt.Errorf("setup schema: %w", err)
	}
	// update-schema: every versioned step after the current version up to
	// the linked server's.
	if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: name, SchemaName: schemaName, TargetVersion: target}, logger).Run(); err != nil {
		return fmt.Errorf("update schema: %w", err)
	}
	return nil
}
