#!/usr/bin/env bash
# Runs the load harness (bench/loadharness) with a Redis server, a 3-master
# Redis Cluster, FerretDB and a PostgreSQL server of its own: starts them on
# free loopback ports through scripts/services.sh (or uses
# ORGADMIN_REDIS_ADDR, ORGADMIN_REDIS_CLUSTER, ORGADMIN_MONGO_URI and
# ORGADMIN_POSTGRES_URL when set), pins them to
# the servers' CPU, has the harness count their CPU time per request (the
# db cpu/req column) and wait after each run until they are idle, and
# stops them at the end. Every argument goes to the harness, for example:
#
#   scripts/loadharness.sh -duration 10s -repeats 5 -prism -svg bench/throughput.svg -markdown BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."

server_cpu=1
prev=
for arg in "$@"; do
  case "$prev" in -server-cpu | --server-cpu) server_cpu=$arg ;; esac
  case "$arg" in -server-cpu=* | --server-cpu=*) server_cpu=${arg#*=} ;; esac
  prev=$arg
done

. scripts/services.sh
trap stop_services EXIT
build_ferretdb
start_redis
start_redis_cluster
start_ferretdb
start_postgres
database_pids=("${service_pids[@]}")
if [ -n "${postgres_pid:-}" ]; then
  database_pids+=("$postgres_pid")
fi

# The databases run beside the servers, on their CPU, leaving wrk its own.
if [ -n "$server_cpu" ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  for pid in "${database_pids[@]}"; do
    taskset -a -p -c "$server_cpu" "$pid" >/dev/null
  done
fi

# The harness counts the CPU time of these, and of their children
# (PostgreSQL's backends), during each run of a target that uses a
# database, and after each run waits until they are idle: a database can
# still be working through requests a server gave up on.
export LOADHARNESS_DATABASE_PIDS="${database_pids[*]}"
export LOADHARNESS_COMMAND="scripts/loadharness.sh $*"
go run ./bench/loadharness "$@"
