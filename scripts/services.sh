# Sourced by scripts/test.sh: starts the database servers the tests need on
# free loopback ports, exports where they listen, and stops them by PID.
#
# Each start_* function exports the variable its tests read; a test whose
# variable is unset skips with a one-line reason, so a plain `go test ./...`
# still passes without any server.

services_dir=$(mktemp -d "${TMPDIR:-/tmp}/orgadmin-services.XXXXXX")
service_pids=()

# free_port prints a TCP port of 127.0.0.1 that nothing listens on now.
# Ports are taken below the kernel's range of ephemeral ports (32768 and up
# on Linux): a port there can be the local end of some connection, which
# makes a server's bind fail although nothing listens on it.
free_port() {
  local p
  for _ in $(seq 1 1000); do
    p=$((15000 + RANDOM % 17000))
    if ! port_in_use "$p"; then
      echo "$p"
      return 0
    fi
  done
  echo "no free port" >&2
  return 1
}

# free_cluster_port prints a port P such that P and P+10000 (a Cluster
# node's bus port) are both free, both below the ephemeral range.
free_cluster_port() {
  local p
  for _ in $(seq 1 1000); do
    p=$((12000 + RANDOM % 10000))
    if ! port_in_use "$p" && ! port_in_use $((p + 10000)); then
      echo "$p"
      return 0
    fi
  done
  echo "no free port pair for a Redis Cluster node" >&2
  return 1
}

# port_in_use PORT reports whether something listens on 127.0.0.1:PORT.
port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_port PORT NAME [LOG] waits up to 30 s for something to listen on
# PORT, and shows LOG (the server's) if nothing does.
wait_port() {
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "$2 did not start listening on port $1" >&2
  if [ -n "${3:-}" ] && [ -f "$3" ]; then
    tail -n 20 "$3" >&2
  fi
  return 1
}

# start_redis starts one Redis server and exports ORGADMIN_REDIS_ADDR, unless
# it is set already.
start_redis() {
  if [ -n "${ORGADMIN_REDIS_ADDR:-}" ]; then
    return 0
  fi
  local port dir
  port=$(free_port)
  dir="$services_dir/redis-$port"
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' \
    --appendonly no --daemonize no --logfile "$dir/log" &
  service_pids+=($!)
  wait_port "$port" redis-server "$dir/log"
  export ORGADMIN_REDIS_ADDR="127.0.0.1:$port"
}

# start_redis_cluster starts a Redis Cluster of three masters and exports
# ORGADMIN_REDIS_CLUSTER (their addresses, comma-separated), unless it is
# set already.
start_redis_cluster() {
  if [ -n "${ORGADMIN_REDIS_CLUSTER:-}" ]; then
    return 0
  fi
  local port dir addrs=()
  for _ in 1 2 3; do
    port=$(free_cluster_port)
    dir="$services_dir/cluster-$port"
    mkdir -p "$dir"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' \
      --appendonly no --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
      --daemonize no --logfile "$dir/log" &
    service_pids+=($!)
    wait_port "$port" "redis-server (cluster)" "$dir/log"
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$services_dir/cluster-create.log"
  for _ in $(seq 1 100); do
    if redis-cli -h 127.0.0.1 -p "${addrs[0]##*:}" cluster info | grep -q 'cluster_state:ok'; then
      export ORGADMIN_REDIS_CLUSTER=$(IFS=,; echo "${addrs[*]}")
      return 0
    fi
    sleep 0.1
  done
  echo "the Redis Cluster did not become ready" >&2
  return 1
}

# postgres_bin holds PostgreSQL 15's server programs, as Debian installs
# them (the postgresql package).
postgres_bin=/usr/lib/postgresql/15/bin

# start_postgres starts a PostgreSQL server on a free port with its data
# directory and unix socket in $services_dir, and exports
# ORGADMIN_POSTGRES_URL, unless it is set already. Its fsync is off: that
# only decides what survives a crash of the machine, which no test makes
# (a killed server loses nothing it committed either way), and the flushes
# took a third of the SQL tests' time on disk. PostgreSQL refuses
# to run as root: as root, initdb and the server run as the unprivileged
# postgres user, which owns the data directory. The server is stopped by
# the PID it writes (postmaster.pid).
start_postgres() {
  if [ -n "${ORGADMIN_POSTGRES_URL:-}" ]; then
    return 0
  fi
  local port dir as=()
  if [ ! -x "$postgres_bin/initdb" ]; then
    echo "PostgreSQL 15 not found at $postgres_bin (Debian: apt-get install postgresql)" >&2
    return 1
  fi
  port=$(free_port)
  dir="$services_dir/postgres-$port"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chmod 711 "$services_dir"
    chown postgres: "$dir"
    as=(runuser -u postgres --)
  fi
  "${as[@]}" "$postgres_bin/initdb" -D "$dir/data" -U postgres --auth=trust \
    --encoding=UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; return 1; }
  "${as[@]}" "$postgres_bin/postgres" -D "$dir/data" -h 127.0.0.1 -p "$port" \
    -k "$dir" -c fsync=off -c max_connections=400 >"$dir/log" 2>&1 &
  for _ in $(seq 1 300); do
    if "$postgres_bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
      postgres_pid=$(head -n 1 "$dir/data/postmaster.pid")
      export ORGADMIN_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
      echo "PostgreSQL on 127.0.0.1:$port"
      return 0
    fi
    sleep 0.1
  done
  echo "PostgreSQL did not start on port $port" >&2
  tail -n 20 "$dir/log" >&2
  return 1
}

# stop_postgres stops the server start_postgres started (a fast shutdown:
# it ends the sessions still open) and waits for it to exit.
stop_postgres() {
  if [ -z "${postgres_pid:-}" ]; then
    return 0
  fi
  kill -INT "$postgres_pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$postgres_pid" 2>/dev/null || break
    sleep 0.1
  done
  postgres_pid=
}

start_services() {
  start_redis
  start_postgres
  start_redis_cluster
  start_ferretdb
  start_toxiproxy
}

# build_ferretdb starts building the FerretDB launcher in the background, so
# that the build overlaps the checks that run before the servers are needed;
# start_ferretdb waits for it.
build_ferretdb() {
  if [ -n "${ORGADMIN_MONGO_URI:-}" ]; then
    return 0
  fi
  (cd scripts/ferretdb && go build -o "$services_dir/ferretdb" .) >"$services_dir/ferretdb-build.log" 2>&1 &
  ferretdb_build_pid=$!
}

# start_ferretdb builds the FerretDB launcher (scripts/ferretdb, its own Go
# module), serves it on a free port with its SQLite files in $services_dir,
# and exports ORGADMIN_MONGO_URI. When ORGADMIN_MONGO_URI is already set
# (a real mongod, say), it uses that and starts nothing. FerretDB's own
# work (SQLite in Go) is most of the CPU of its tests; collecting its
# garbage a quarter as often saves a fifth of it.
start_ferretdb() {
  if [ -n "${ORGADMIN_MONGO_URI:-}" ]; then
    echo "MongoDB: using ORGADMIN_MONGO_URI"
    return 0
  fi
  local port
  port=$(free_port)
  if [ -n "${ferretdb_build_pid:-}" ]; then
    wait "$ferretdb_build_pid" || { cat "$services_dir/ferretdb-build.log" >&2; return 1; }
  else
    (cd scripts/ferretdb && go build -o "$services_dir/ferretdb" .)
  fi
  GOGC=400 "$services_dir/ferretdb" -listen "127.0.0.1:$port" -dir "$services_dir/ferretdb-data" \
    >"$services_dir/ferretdb.log" 2>&1 &
  service_pids+=($!)
  wait_port "$port" FerretDB || { cat "$services_dir/ferretdb.log" >&2; return 1; }
  export ORGADMIN_MONGO_URI="mongodb://127.0.0.1:$port/"
  echo "FerretDB (SQLite) on 127.0.0.1:$port"
}

# toxiproxy_dir holds the toxiproxy server, built once per version (the
# package cmd/server builds a binary named "server").
toxiproxy_version=v2.12.0
toxiproxy_dir="${XDG_CACHE_HOME:-$HOME/.cache}/orgadmin/toxiproxy-$toxiproxy_version"

# install_toxiproxy builds the toxiproxy server into $toxiproxy_dir unless
# it is there already.
install_toxiproxy() {
  if [ -x "$toxiproxy_dir/server" ]; then
    return 0
  fi
  mkdir -p "$toxiproxy_dir"
  GOBIN="$toxiproxy_dir" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version"
}

# build_toxiproxy starts install_toxiproxy in the background, as
# build_ferretdb does; start_toxiproxy waits for it.
build_toxiproxy() {
  if [ -n "${ORGADMIN_TOXIPROXY_URL:-}" ]; then
    return 0
  fi
  install_toxiproxy >"$services_dir/toxiproxy-build.log" 2>&1 &
  toxiproxy_build_pid=$!
}

# start_toxiproxy starts a toxiproxy server (network faults on demand,
# between the tests and the database servers) on a free port and exports
# ORGADMIN_TOXIPROXY_URL, the base URL of its HTTP API, unless it is set
# already.
start_toxiproxy() {
  if [ -n "${ORGADMIN_TOXIPROXY_URL:-}" ]; then
    return 0
  fi
  local port
  port=$(free_port)
  if [ -n "${toxiproxy_build_pid:-}" ]; then
    wait "$toxiproxy_build_pid" || { cat "$services_dir/toxiproxy-build.log" >&2; return 1; }
  else
    install_toxiproxy
  fi
  "$toxiproxy_dir/server" -host 127.0.0.1 -port "$port" >"$services_dir/toxiproxy.log" 2>&1 &
  service_pids+=($!)
  wait_port "$port" toxiproxy-server || { cat "$services_dir/toxiproxy.log" >&2; return 1; }
  export ORGADMIN_TOXIPROXY_URL="http://127.0.0.1:$port"
}

stop_services() {
  local pid build
  stop_postgres
  for build in "${ferretdb_build_pid:-}" "${toxiproxy_build_pid:-}"; do
    if [ -n "$build" ]; then
      pkill -P "$build" 2>/dev/null || true
      wait "$build" 2>/dev/null || true
    fi
  done
  for pid in "${service_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${service_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$services_dir"
}
