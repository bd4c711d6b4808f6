#!/usr/bin/env bash
# A throwaway one-node Ceph cluster (one monitor, one OSD, one RADOS Gateway) on 127.0.0.1: a real
# S3 server for the tests of the S3 storage backend.
#
#   scripts/s3-test-server.sh start   install the Debian packages if missing (needs root), create the
#                                     cluster on first use, start what is not running, and print the
#                                     test environment as `export` lines: eval "$(… start)"
#   scripts/s3-test-server.sh env     print the test environment only
#   scripts/s3-test-server.sh stop    stop the daemons (the data stays for the next start)
#   scripts/s3-test-server.sh purge   stop and delete the cluster's folder
#
# Settings: S3_TEST_DIR (default /tmp/s3-test-server), S3_TEST_PORT (default 7480).
# Every message goes to stderr; stdout carries only the export lines.
set -euo pipefail

STATE=${S3_TEST_DIR:-/tmp/s3-test-server}
PORT=${S3_TEST_PORT:-7480}
ENDPOINT="http://127.0.0.1:${PORT}"
# Fixed, test-only keys of a server that listens on 127.0.0.1 only.
ACCESS_KEY=s3testaccesskey0001
SECRET_KEY=s3testsecretkey0000000000000000000000001
export CEPH_CONF="$STATE/ceph.conf"

say() { echo "s3-test-server: $*" >&2; }

print_env() {
  echo "export S3_TEST_ENDPOINT=$ENDPOINT"
  echo "export S3_TEST_REGION=us-east-1"
  echo "export S3_TEST_ACCESS_KEY_ID=$ACCESS_KEY"
  echo "export S3_TEST_SECRET_ACCESS_KEY=$SECRET_KEY"
}

install_packages() {
  command -v radosgw >/dev/null && command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null \
    && command -v radosgw-admin >/dev/null && command -v curl >/dev/null && return
  say "installing radosgw, ceph-mon, ceph-osd"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    radosgw ceph-mon ceph-osd ceph-common curl >&2
}

# A daemon runs when its pid file names a live process (zombies, which PID 1 reaps slowly here, do not count).
running() {
  local pid_file="$STATE/run/$1.pid" pid
  [[ -s $pid_file ]] || return 1
  pid=$(<"$pid_file")
  [[ -r /proc/$pid/status ]] && ! grep -q '^State:.*Z' "/proc/$pid/status"
}

answering() { curl -s -o /dev/null --max-time 2 "$ENDPOINT/"; }

write_conf() {
  local fsid=$1
  cat >"$CEPH_CONF" <<EOF
[global]
fsid = $fsid
mon_initial_members = a
mon_host = v2:127.0.0.1:3300
# A test cluster: no keyrings. With auth off, clients must not insist on a secure connection, or
# radosgw waits 300 s for the monitor's config and dies.
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_mon_client_mode = crc
# One OSD on one host, few placement groups.
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_crush_chooseleaf_type = 0
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
mon_warn_on_pool_no_redundancy = false
# Cluster changes commit in 0.1 s instead of 1 s: a fresh start takes seconds, not tens of them.
paxos_propose_interval = 0.1
run_dir = $STATE/run
pid_file = $STATE/run/\$name.pid
admin_socket = $STATE/run/\$name.asok
log_file = $STATE/log/\$name.log

[mon]
mon_data = $STATE/mon.\$id

[osd]
osd_data = $STATE/osd.\$id
# BlueStore in a sparse file: no block device needed, and the data survives restarts. 40 GiB, used
# only as written: the bench's S3 cases write about 10 GiB, freed by the gateway minutes later.
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = 42949672960
bluestore_block_db_create = false
bluestore_block_wal_create = false
osd_memory_target = 1073741824

[client.rgw.a]
rgw_data = $STATE/rgw
# Without tcp_nodelay every small request waits 40 ms for Nagle.
rgw_frontends = beast endpoint=127.0.0.1:$PORT tcp_nodelay=1
# Space of deleted objects is freed after a minute rather than two hours.
rgw_gc_obj_min_wait = 60
rgw_gc_processor_period = 60
EOF
}

create_cluster() {
  say "creating a cluster in $STATE"
  rm -rf "$STATE"
  mkdir -p "$STATE/run" "$STATE/log" "$STATE/rgw"
  local fsid osd_uuid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  write_conf "$fsid"
  monmaptool --create --fsid "$fsid" --addv a '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' "$STATE/monmap" >&2
  ceph-mon --mkfs -i a --monmap "$STATE/monmap" >&2
  ceph-mon -i a >&2
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  ceph --connect-timeout 30 osd new "$osd_uuid" >&2
  mkdir -p "$STATE/osd.0"
  ceph-osd -i 0 --mkfs --osd-uuid "$osd_uuid" >&2 2>"$STATE/log/osd-mkfs.log" || {
    cat "$STATE/log/osd-mkfs.log" >&2
    exit 1
  }
  touch "$STATE/created"
}

start() {
  install_packages
  if ! answering; then
    [[ -e $STATE/created ]] || create_cluster
    running mon.a || ceph-mon -i a >&2
    running osd.0 || ceph-osd -i 0 >&2
    running client.rgw.a || radosgw -n client.rgw.a >&2
    say "waiting for $ENDPOINT"
    for _ in $(seq 1 240); do
      answering && break
      sleep 0.5
    done
    answering || {
      say "the gateway did not answer; logs in $STATE/log"
      exit 1
    }
  fi
  radosgw-admin user info --uid=s3test >/dev/null 2>&1 \
    || radosgw-admin user create --uid=s3test --display-name='S3 tests' \
      --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
  say "ready at $ENDPOINT"
  print_env
}

stop_daemon() {
  local name=$1 pid
  running "$name" || return 0
  pid=$(<"$STATE/run/$name.pid")
  kill "$pid"
  for _ in $(seq 1 100); do
    running "$name" || return 0
    sleep 0.1
  done
  say "$name did not stop in 10 s; killing it"
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  [[ -d $STATE/run ]] || return 0
  # The gateway first, the monitor last: each needs the ones after it to leave cleanly.
  stop_daemon client.rgw.a
  stop_daemon osd.0
  stop_daemon mon.a
  say "stopped"
}

case ${1:-} in
  start) start ;;
  env) print_env ;;
  stop) stop ;;
  purge) stop && rm -rf "$STATE" ;;
  *)
    echo "usage: $0 start|env|stop|purge" >&2
    exit 2
    ;;
esac
