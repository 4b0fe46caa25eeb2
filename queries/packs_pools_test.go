package queries

import "testing"

func TestPackPools(t *testing.T) {
	t.Parallel()
	d := newData()
	hk := map[string]string{"job": "checkout", "pool": "HikariPool-1"}
	d.gauge("hikaricp_connections_active", hk, phased{4, 9, 10, 4})
	d.gauge("hikaricp_connections_pending", hk, phased{0, 0, 6, 0})
	d.gauge("hikaricp_connections_max", hk, phased{10, 10, 10, 10})
	orders := map[string]string{"job": "checkout", "db_name": "orders"}
	d.gauge("go_sql_in_use_connections", orders, phased{4, 9, 10, 4})
	d.gauge("go_sql_max_open_connections", orders, phased{10, 10, 10, 10})
	// Six goroutines wait on average during the storm: 6 seconds of wait per second.
	d.counter("go_sql_wait_duration_seconds_total", orders, phased{0, 0, 6, 0})
	// An unlimited pool (MaxOpenConns 0) cannot saturate and is left out.
	cache := map[string]string{"job": "checkout", "db_name": "cache"}
	d.gauge("go_sql_in_use_connections", cache, phased{3, 3, 3, 3})
	d.gauge("go_sql_max_open_connections", cache, phased{})
	d.counter("go_sql_wait_duration_seconds_total", cache, phased{})
	f := startFixture(t, d)

	for pack, key := range map[string]string{
		"hikaricp": ls("job", "checkout", "pool", "HikariPool-1"),
		"go_sql":   ls("job", "checkout", "db_name", "orders"),
	} {
		f.check("pool_saturation", pack, none, calm, want{key: {0.4, OK}})
		f.check("pool_saturation", pack, none, rising, want{key: {0.9, Crit}})
		f.check("pool_saturation", pack, none, during, want{key: {1, Crit}})
		f.check("pool_saturation", pack, none, after, want{key: {0.4, OK}})
		f.trips("pool_saturation", pack, none, key, stormStart)
		f.check("demanded_concurrency", pack, none, calm, want{key: {0.4, OK}})
		f.check("demanded_concurrency", pack, none, rising, want{key: {0.9, Warn}})
		f.check("demanded_concurrency", pack, Params{Service: "checkout"}, during, want{key: {1.6, Crit}})
	}
}
