// The server's stores: SQLite (a file, or memory) or PostgreSQL (set up
// in postgres.go), with the namespace registered before the server starts.

package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

// storeSet is the server's stores: the default (history, matching,
// namespaces) and visibility, which may be the same store.
type storeSet struct {
	defaultName, visibilityName string
	stores                      map[string]config.DataStore
	shards                      int32
}

// stores sets up the databases and registers the namespace in them.
func (s *Server) stores(o Options) (storeSet, error) {
	if o.Postgres != nil {
		p := o.Postgres.withDefaults()
		if err := setupPostgres(p); err != nil {
			return storeSet{}, err
		}
		def := p.sqlConfig(p.Database)
		if err := createNamespace(def, o); err != nil {
			return storeSet{}, err
		}
		s.storage = p.String()
		shards := o.HistoryShards
		if shards == 0 {
			shards = 4
		}
		return storeSet{defaultName: "postgres-default", visibilityName: "postgres-visibility", shards: int32(shards),
			stores: map[string]config.DataStore{
				"postgres-default":    {SQL: def},
				"postgres-visibility": {SQL: p.sqlConfig(p.VisibilityDatabase)},
			}}, nil
	}
	conf, err := s.sqliteConfig(o)
	if err != nil {
		return storeSet{}, err
	}
	shards := o.HistoryShards
	if shards == 0 {
		shards = 1
	}
	return storeSet{defaultName: "sqlite-default", visibilityName: "sqlite-default", shards: int32(shards),
		stores: map[string]config.DataStore{"sqlite-default": {SQL: conf}}}, nil
}

// createNamespace registers the namespace in the database before the
// server starts, so that it is there from the first request (the SQLite
// schema package's helper writes through the generic SQL persistence,
// so it serves PostgreSQL as well).
func createNamespace(conf *config.SQL, o Options) error {
	ns, err := sqliteschema.NewNamespaceConfig("active", o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return fmt.Errorf("devserver: namespace config: %w", err)
	}
	ns.Detail.Config.Retention = durationpb.New(o.Retention)
	if o.Archive != "" {
		h, v := ArchiveURIs(o.Archive)
		ns.Detail.Config.HistoryArchivalState = enumspb.ARCHIVAL_STATE_ENABLED
		ns.Detail.Config.HistoryArchivalUri = h
		ns.Detail.Config.VisibilityArchivalState = enumspb.ARCHIVAL_STATE_ENABLED
		ns.Detail.Config.VisibilityArchivalUri = v
	}
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return fmt.Errorf("devserver: create namespace: %w", err)
	}
	return nil
}

func (s *Server) sqliteConfig(o Options) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	s.storage = "sqlite in memory"
	if o.DataDir == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = fmt.Sprintf("warden-%d", time.Now().UnixNano())
	} else {
		if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("devserver: data dir: %w", err)
		}
		s.dbPath = filepath.Join(o.DataDir, "temporal.db")
		// WAL with synchronous=normal loses nothing committed when the
		// process is killed; a power loss may lose the last writes.
		conf.ConnectAttributes = map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"}
		conf.DatabaseName = s.dbPath
		s.storage = "sqlite " + s.dbPath
	}
	// The SQLite plugin creates the schema of an in-memory database itself.
	if _, err := os.Stat(s.dbPath); o.DataDir != "" && errors.Is(err, os.ErrNotExist) {
		if err := sqliteschema.SetupSchema(conf); err != nil {
			return nil, fmt.Errorf("devserver: schema: %w", err)
		}
	}
	if err := createNamespace(conf, o); err != nil {
		return nil, err
	}
	return conf, nil
}
