// Building the server's config: the static config (membership, the one
// cluster, persistence stores, each service's address and ports), the
// services run, and the dynamic config values.

package devserver

import (
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

// Tuned dynamic config: the defaults throttle the single history shard's
// transfer queue to 20 reads/s, which makes each workflow task wait
// (~45 ms per activity).
func defaultDynamicConfig() map[string]any {
	return map[string]any{
		"history.transferProcessorMaxPollRPS":  1000,
		"matching.numTaskqueueReadPartitions":  1,
		"matching.numTaskqueueWritePartitions": 1,
		"frontend.namespaceRPS.visibility":     500,
		// The host's mutable-state cache (default 128,000 entries, an hour
		// each) kept every waiting turn's state; a turn evicted from it is
		// read back from the database when it is answered. The key used
		// before, history.cacheHostLevelMaxSize, does not exist.
		"history.hostLevelCacheMaxSize": 512,
		// On (the default), the history service walks every payload of
		// every event batch it writes, in a goroutine of its own, to count
		// external-storage references warden never makes: ~4% of the
		// process's CPU at 100 tool calls/s, and most of its stack growth.
		"history.externalPayloadsEnabled": false,
		// Listing every waiting turn (approvals list, the inbox's
		// oldest-first view) in pages of 5,000 instead of the default cap of 1,000 took a
		// listing of 10,000 from ~1.6-2.0 s to ~1.2-1.3 s: each page
		// costs the frontend a fixed share on top of its rows.
		"frontend.visibilityMaxPageSize": 5000,
		// The history service's task schedulers default to 512 workers
		// per queue (and 640 for replication, which a single cluster
		// never uses): 2,200 goroutines parked in select, whose stacks
		// were ~30 MB of the process's memory with 10,000 waiting turns.
		// With 32 per queue the throughput and waiting benches ran as
		// fast as before (BENCHMARKS.md).
		"history.timerProcessorSchedulerWorkerCount":                  32,
		"history.transferProcessorSchedulerWorkerCount":               32,
		"history.visibilityProcessorSchedulerWorkerCount":             32,
		"history.archivalProcessorSchedulerWorkerCount":               4,
		"history.memoryTimerProcessorSchedulerWorkerCount":            8,
		"history.ReplicationProcessorSchedulerWorkerCount":            2,
		"history.ReplicationLowPriorityProcessorSchedulerWorkerCount": 2,
		// Events kept for cross-cluster replication, which never runs here.
		"history.xdcCacheMaxSizeBytes": 256 << 10,
	}
}

// services are the server's services: the defaults, and with Auth the
// internal frontend its system workers use.
func services(o Options) []string {
	if o.Auth == nil {
		return temporal.DefaultServices
	}
	return append(slices.Clone(temporal.DefaultServices), string(primitives.InternalFrontendService))
}

// staticConfig is the server's dynamic config: the tuned defaults, the
// principal propagation Auth needs, then o's overrides.
func staticConfig(o Options) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{}
	for k, v := range defaultDynamicConfig() {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	if o.Auth != nil {
		// Signals and starts are stamped in history with the principal
		// whose key sent them.
		dc[dynamicconfig.MakeKey("frontend.enablePrincipalPropagation")] = true
	}
	if o.Retention > 0 && o.Retention < 24*time.Hour {
		// Temporal refuses a retention below a day unless lowered here.
		dc[dynamicconfig.MakeKey("system.namespaceMinRetentionGlobal")] = o.Retention
		dc[dynamicconfig.MakeKey("system.namespaceMinRetentionLocal")] = o.Retention
	}
	for k, v := range o.DynamicConfig {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return dc
}

// localIP is the address the server's own services use to reach an
// address bound as ip: loopback for an unspecified address.
func localIP(ip string) string {
	if a := net.ParseIP(ip); a != nil && a.IsUnspecified() {
		return "127.0.0.1"
	}
	return ip
}

func serverConfig(o Options, httpPort int, p storeSet) (*config.Config, map[primitives.ServiceName]static.Hosts, error) {
	conf := baseConfig(o, httpPort, p)
	names := []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService}
	if o.Auth != nil {
		tlsConf, err := internodeTLS()
		if err != nil {
			return nil, nil, err
		}
		conf.Global.TLS.Internode = tlsConf
		names = append(names, primitives.InternalFrontendService)
	}
	hosts := map[primitives.ServiceName]static.Hosts{}
	local := localIP(o.IP)
	for _, name := range names {
		svc, err := serviceConfig(name, o, httpPort)
		if err != nil {
			return nil, nil, err
		}
		conf.Services[string(name)] = svc
		hosts[name] = static.SingleLocalHost(net.JoinHostPort(local, strconv.Itoa(svc.RPC.GRPCPort)))
	}
	return conf, hosts, nil
}

// baseConfig is the server's config without its services' TLS and
// ports: membership, persistence, the one cluster, archival (on with
// o.Archive).
func baseConfig(o Options, httpPort int, p storeSet) *config.Config {
	local := localIP(o.IP)
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = local
	conf.Persistence.DefaultStore = p.defaultName
	conf.Persistence.VisibilityStore = p.visibilityName
	conf.Persistence.NumHistoryShards = p.shards
	conf.Persistence.DataStores = p.stores
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        "active",
		CurrentClusterName:       "active",
		ClusterInformation: map[string]cluster.ClusterInformation{
			"active": {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             net.JoinHostPort(local, strconv.Itoa(o.Port)),
				HTTPAddress:            net.JoinHostPort(local, strconv.Itoa(httpPort)),
				ClusterID:              "warden-embedded",
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	archival(&conf, o.Archive)
	if o.Auth == nil {
		// With Auth the system workers find the internal frontend.
		conf.PublicClient.HostPort = net.JoinHostPort(local, strconv.Itoa(o.Port))
	}
	return &conf
}

// serviceConfig is one service's RPC config: the frontend on o's
// address and ports, the others on loopback (for an unspecified o.IP)
// and free ports, the internal frontend with an HTTP port as well.
func serviceConfig(name primitives.ServiceName, o Options, httpPort int) (config.Service, error) {
	local := localIP(o.IP)
	var svc config.Service
	svc.RPC.BindOnIP = local
	if name == primitives.FrontendService {
		svc.RPC.BindOnIP = o.IP
		svc.RPC.GRPCPort = o.Port
		svc.RPC.HTTPPort = httpPort
	} else {
		port, err := freePort(local)
		if err != nil {
			return svc, err
		}
		svc.RPC.GRPCPort = port
	}
	if name == primitives.InternalFrontendService {
		port, err := freePort(local)
		if err != nil {
			return svc, err
		}
		svc.RPC.HTTPPort = port
	}
	return svc, nil
}

// archival turns History and Visibility Archival on with the filestore
// archiver under dir (a closed turn's history and its visibility record
// are written there when it closes and read back by the frontend after
// the namespace's retention deleted them), or off when dir is empty.
func archival(conf *config.Config, dir string) {
	if dir == "" {
		conf.Archival.History.State = "disabled"
		conf.Archival.Visibility.State = "disabled"
		conf.NamespaceDefaults.Archival.History.State = "disabled"
		conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
		return
	}
	fs := &config.FilestoreArchiver{FileMode: "0600", DirMode: "0700"}
	conf.Archival.History = config.HistoryArchival{State: "enabled", EnableRead: true, Provider: &config.HistoryArchiverProvider{Filestore: fs}}
	conf.Archival.Visibility = config.VisibilityArchival{State: "enabled", EnableRead: true, Provider: &config.VisibilityArchiverProvider{Filestore: fs}}
	h, v := ArchiveURIs(dir)
	conf.NamespaceDefaults.Archival.History = config.HistoryArchivalNamespaceDefaults{State: "enabled", URI: h}
	conf.NamespaceDefaults.Archival.Visibility = config.VisibilityArchivalNamespaceDefaults{State: "enabled", URI: v}
}

// ArchiveURIs are the filestore URIs of the history and visibility
// archives under dir.
func ArchiveURIs(dir string) (history, visibility string) {
	return "file://" + filepath.Join(dir, "history"), "file://" + filepath.Join(dir, "visibility")
}
