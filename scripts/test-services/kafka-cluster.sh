# shellcheck shell=bash
# The three-node KRaft cluster of kafka.sh (sourced by it; uses its JVM_OPTS, jars and
# java_run). Each node is broker + controller with node.id N; the three controllers form one
# static voter quorum, so any two of them keep the cluster going.
#
# Broker settings are Kafka's defaults where durability is concerned (default.replication.factor
# 1, min.insync.replicas 1, broker.session.timeout.ms 9 s): what a topic gets beyond that is
# what the service asked for, and a broker's death takes as long to notice as on a cluster an
# operator left at the defaults.

CLUSTER_NODES=(1 2 3)

cluster_paths() {
  CDIR="$TEST_SERVICES_STATE_DIR/kafka-cluster"
}

node_dir() { echo "$CDIR/node$1"; }

require_node() {
  [[ "${1:-}" =~ ^[123]$ ]] || ts_die "kafka: cluster node must be 1, 2 or 3 (got '${1:-}')"
}

write_cluster_config() {
  local ports voters="" brokers="" n i=0
  read -r -a ports <<<"$(ts_free_ports 6)"
  for n in "${CLUSTER_NODES[@]}"; do
    voters+="${voters:+,}$n@127.0.0.1:${ports[i + 3]}"
    brokers+="${brokers:+,}127.0.0.1:${ports[i]}"
    i=$((i + 1))
  done
  i=0
  for n in "${CLUSTER_NODES[@]}"; do
    local dir port="${ports[i]}" controller_port="${ports[i + 3]}"
    dir="$(node_dir "$n")"
    mkdir -p "$dir/data"
    cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=3
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
group.initial.rebalance.delay.ms=0
# Topics come from the service (ensureTopics), never from a client's first use.
auto.create.topics.enable=false
PROPS
    echo "$port $controller_port" >"$dir/ports"
    i=$((i + 1))
  done
  echo "$brokers" >"$CDIR/brokers"
}

# As for the single node, formatting is done once per Kafka version into templates in the
# cache (one per node id, one shared cluster id); ports and paths are not stored in them.
make_cluster_template() {
  local tpl="$KAFKA_HOME/cluster-template" id n
  [[ -f "$tpl/.complete" ]] && return 0
  rm -rf "$tpl"
  id="$(new_cluster_id)"
  for n in "${CLUSTER_NODES[@]}"; do
    mkdir -p "$tpl/node$n/data"
    cat >"$tpl/node$n/server.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097
listeners=PLAINTEXT://127.0.0.1:$((9090 + 2 * n)),CONTROLLER://127.0.0.1:$((9091 + 2 * n))
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$tpl/node$n/data
PROPS
    if ! java_run kafka.tools.StorageTool format -t "$id" \
      -c "$tpl/node$n/server.properties" >"$tpl/node$n/format.log" 2>&1; then
      ts_log_tail "$tpl/node$n/format.log"
      ts_die "kafka: formatting storage of cluster node $n failed"
    fi
    [[ -f "$tpl/node$n/data/meta.properties" ]] ||
      ts_die "kafka: no meta.properties after formatting cluster node $n"
  done
  touch "$tpl/.complete"
}

# Start node N's process unless it runs (no wait). Prints nothing.
spawn_node() {
  local n="$1" dir pid busy
  dir="$(node_dir "$n")"
  pid="$(ts_read_pid "$dir/kafka.pid")"
  ts_pid_alive "$pid" && return 0
  if [[ ! -f "$dir/data/meta.properties" ]]; then
    ts_with_lock "kafka-$KAFKA_VERSION" make_cluster_template
    cp -a "$KAFKA_HOME/cluster-template/node$n/data/." "$dir/data/"
  fi
  # shellcheck disable=SC2046 # the two ports, split on purpose
  busy="$(ts_wait_ports_free 10 $(cat "$dir/ports"))" ||
    ts_die "kafka: port $busy of cluster node $n is taken by another process"
  echo "===== start $(date -Is) =====" >>"$dir/kafka.log"
  ts_spawn "$dir/kafka.pid" "$dir/kafka.log" java "${JVM_OPTS[@]}" \
    -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" \
    -cp "$KAFKA_LIB/*" kafka.Kafka "$dir/server.properties"
}

node_pids() {
  local n pids=""
  for n in "$@"; do pids+="${pids:+,}$(ts_read_pid "$(node_dir "$n")/kafka.pid")"; done
  echo "$pids"
}

node_brokers() {
  local n brokers=""
  for n in "$@"; do brokers+="${brokers:+,}127.0.0.1:$(cut -d' ' -f1 "$(node_dir "$n")/ports")"; done
  echo "$brokers"
}

# Wait until the nodes $@ answer describeCluster themselves and list each other as live
# brokers, while their processes run. Asking the nodes themselves matters after a hard kill:
# the others list a killed node until the controller fences it (9 s).
wait_cluster_ready() {
  local timeout="$1" rc=0 ids
  shift
  ids="$(IFS=,; echo "$*")"
  "$(ts_node)" --no-warnings "$TS_LIB_DIR/kafka-ready.ts" "$(node_brokers "$@")" \
    "$(node_pids "$@")" "$timeout" "$ids" || rc=$?
  return "$rc"
}

cluster_ready_or_die() {
  local ids="$1" rc=0 n
  local -a nodes
  IFS=, read -r -a nodes <<<"$ids"
  wait_cluster_ready "$KAFKA_READY_TIMEOUT" "${nodes[@]}" || rc=$?
  ((rc == 0)) && return 0
  for n in "${nodes[@]}"; do ts_log_tail "$(node_dir "$n")/kafka.log" 40; done
  case "$rc" in
    1) ts_die "kafka: cluster node(s) $ids not ready after ${KAFKA_READY_TIMEOUT}s" ;;
    2) ts_die "kafka: a cluster node process ($ids) exited during start" ;;
    *) ts_die "kafka: cluster readiness probe failed (exit $rc)" ;;
  esac
}

do_cluster_start() {
  ts_ensure_state_dir
  cluster_paths
  ts_require_node_modules kafkajs
  do_install
  mkdir -p "$CDIR"
  [[ -f "$CDIR/brokers" ]] || write_cluster_config
  local n started=$SECONDS
  for n in "${CLUSTER_NODES[@]}"; do spawn_node "$n"; done
  cluster_ready_or_die 1,2,3
  ts_log "kafka: cluster ready on $(cat "$CDIR/brokers") in $((SECONDS - started))s"
}

do_cluster_start_node() {
  require_node "$1"
  ts_require_state_dir
  cluster_paths
  [[ -f "$CDIR/brokers" ]] || ts_die "kafka: no cluster in $CDIR (run cluster-start first)"
  local started=$SECONDS
  spawn_node "$1"
  cluster_ready_or_die "$1"
  ts_log "kafka: cluster node $1 ready in $((SECONDS - started))s"
}

do_cluster_stop_node() {
  local n="$1" signal="$2" grace="$3" dir pid
  require_node "$n"
  ts_require_state_dir
  cluster_paths
  dir="$(node_dir "$n")"
  pid="$(ts_read_pid "$dir/kafka.pid")"
  if ts_pid_alive "$pid"; then
    ts_stop_pidfile "$dir/kafka.pid" "$grace" "$signal"
    echo "===== stopped (SIG$signal) $(date -Is) =====" >>"$dir/kafka.log"
    ts_log "kafka: cluster node $n stopped (SIG$signal, pid $pid)"
  else
    rm -f "$dir/kafka.pid"
  fi
}

# A node's graceful stop asks the controller quorum to move its leaderships away; once two nodes
# are gone the last one has no quorum to ask and waits for good (seen: more than 30 s), so the
# nodes stop together and get a short grace before SIGKILL (test data: a hard stop only costs
# log recovery at the next start).
KAFKA_CLUSTER_STOP_TIMEOUT="${KAFKA_CLUSTER_STOP_TIMEOUT:-10}"

do_cluster_stop() {
  ts_require_state_dir
  local n pids=()
  for n in "${CLUSTER_NODES[@]}"; do
    do_cluster_stop_node "$n" TERM "$KAFKA_CLUSTER_STOP_TIMEOUT" &
    pids+=("$!")
  done
  for n in "${pids[@]}"; do wait "$n"; done
}

do_cluster_status() {
  ts_require_state_dir
  cluster_paths
  [[ -f "$CDIR/brokers" ]] || {
    echo "kafka cluster: not started"
    return 1
  }
  if wait_cluster_ready 5 "${CLUSTER_NODES[@]}"; then
    echo "kafka cluster: running on $(cat "$CDIR/brokers")"
  else
    echo "kafka cluster: not every node is up and answering"
    return 1
  fi
}

# The node id of the controller quorum's leader (Kafka's own kafka-metadata-quorum tool: the
# metadata a client gets names a random broker as the controller, not the quorum's leader).
do_cluster_quorum_leader() {
  ts_require_state_dir
  cluster_paths
  [[ -f "$CDIR/brokers" ]] || ts_die "kafka: no cluster in $CDIR (run cluster-start first)"
  local out
  out="$(java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" \
    -cp "$KAFKA_LIB/*:$KAFKA_TOOLS_HOME/kafka-tools-$KAFKA_VERSION.jar" \
    org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$(cat "$CDIR/brokers")" \
    describe --status 2>&1)" || {
    echo "$out" >&2
    ts_die "kafka: kafka-metadata-quorum failed"
  }
  sed -n 's/^LeaderId:[[:space:]]*\([0-9]*\).*/\1/p' <<<"$out"
}

do_cluster_env() {
  ts_require_state_dir
  cluster_paths
  [[ -f "$CDIR/brokers" ]] || ts_die "kafka: no cluster in $CDIR (run cluster-start first)"
  echo "KAFKA_CLUSTER_BROKERS=$(cat "$CDIR/brokers")"
}
