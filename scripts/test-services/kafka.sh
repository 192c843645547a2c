#!/usr/bin/env bash
# Apache Kafka 4.1.1, one KRaft node (broker + controller) on 127.0.0.1.
#
# Usage: kafka.sh install            fetch the jars into the cache (idempotent)
#        kafka.sh start              start (first time: pick ports, format storage);
#                                    a later start reuses the same ports and data
#        kafka.sh stop               graceful stop (SIGTERM), data and ports kept
#        kafka.sh kill               hard stop (SIGKILL), data and ports kept
#        kafka.sh restart            stop + start
#        kafka.sh status             exit 0 when running and answering admin calls
#        kafka.sh env                export lines for the env file
#        kafka.sh console-producer ARGS
#                                    Kafka's own console producer (kafka-tools), as another
#                                    team's non-Node producer would use it; reads stdin
#
#      A three-node cluster (apart from the single node, same jars): nodes 1, 2 and 3, each
#      broker + controller, one 3-voter controller quorum, own ports and data dirs under
#      $TEST_SERVICES_STATE_DIR/kafka-cluster. Nothing starts it but these commands (the
#      tests that need it start it and stop it; stop-all.sh stops it too, by its pid files).
#        kafka.sh cluster-start          start the nodes not running (first time: pick ports,
#                                        format storage); ready when all three are registered
#        kafka.sh cluster-start-node N   start node N; ready when it is registered again
#        kafka.sh cluster-stop-node N    graceful stop (SIGTERM) of node N
#        kafka.sh cluster-kill N         hard stop (SIGKILL) of node N
#        kafka.sh cluster-stop           graceful stop of every node, data and ports kept
#        kafka.sh cluster-status         exit 0 when all three nodes answer
#        kafka.sh cluster-env            KAFKA_CLUSTER_BROKERS=host:port,host:port,host:port
#                                        (node N is the Nth address; its broker id is N)
#        kafka.sh cluster-quorum-leader  the node id of the controller quorum's leader
#
# All but install need TEST_SERVICES_STATE_DIR (start makes one when it is unset).
# Optional for the first start: KAFKA_PORT, KAFKA_CONTROLLER_PORT.
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KAFKA_VERSION=4.1.1
SCALA_VERSION=2.13
LOG4J_VERSION=2.24.3
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
KAFKA_HOME="$MEDIA_TEST_CACHE/kafka-$KAFKA_VERSION"
KAFKA_LIB="$KAFKA_HOME/lib"
# The console producer lives in kafka-tools, which the broker does not need; its own
# dependencies beyond the broker's are Connect's and Jetty's, which the producer does not load.
KAFKA_TOOLS_HOME="$MEDIA_TEST_CACHE/kafka-tools-$KAFKA_VERSION"
KAFKA_READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-180}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
# C1 only and the serial collector: the broker is up in seconds and small. KAFKA_JVM_OPTS
# replaces them (e.g. "-Xms512m -Xmx512m -Djava.awt.headless=true" for a benchmark against a
# broker with its full JIT).
JVM_OPTS=(-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true)
if [[ -n "${KAFKA_JVM_OPTS:-}" ]]; then read -r -a JVM_OPTS <<<"$KAFKA_JVM_OPTS"; fi

state_paths() {
  KDIR="$TEST_SERVICES_STATE_DIR/kafka"
  PIDFILE="$KDIR/kafka.pid"
  LOGFILE="$KDIR/kafka.log"
  PROPS="$KDIR/server.properties"
  DATADIR="$KDIR/data"
}

ensure_tools() {
  local missing=()
  command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  if ((${#missing[@]} > 0)); then
    ts_with_lock apt ts_apt_install "${missing[@]}"
  fi
}

fetch_jars() {
  [[ -f "$KAFKA_HOME/.complete" ]] && return 0
  ts_log "kafka: fetching kafka_$SCALA_VERSION:$KAFKA_VERSION and its runtime dependencies"
  local work="$KAFKA_HOME.tmp"
  rm -rf "$work"
  mkdir -p "$work"
  cat >"$work/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.media-service-test</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_$SCALA_VERSION</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-api</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  if ! mvn -B -q -f "$work/pom.xml" -Dmaven.repo.local="$MEDIA_TEST_CACHE/m2" \
    "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime \
    -DoutputDirectory="$work/lib" >"$work/mvn.log" 2>&1; then
    ts_log_tail "$work/mvn.log" 80
    ts_die "kafka: mvn copy-dependencies failed"
  fi
  [[ -f "$work/lib/kafka_$SCALA_VERSION-$KAFKA_VERSION.jar" ]] ||
    ts_die "kafka: kafka_$SCALA_VERSION-$KAFKA_VERSION.jar missing after mvn"
  cat >"$work/log4j2.properties" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
EOF
  rm -rf "$KAFKA_HOME"
  mv "$work" "$KAFKA_HOME"
  touch "$KAFKA_HOME/.complete"
}

fetch_tools_jar() {
  [[ -f "$KAFKA_TOOLS_HOME/.complete" ]] && return 0
  ts_log "kafka: fetching kafka-tools:$KAFKA_VERSION (the console producer)"
  local work="$KAFKA_TOOLS_HOME.tmp"
  rm -rf "$work"
  mkdir -p "$work"
  if ! mvn -B -q -Dmaven.repo.local="$MEDIA_TEST_CACHE/m2" "$DEPENDENCY_PLUGIN:copy" \
    -Dartifact="org.apache.kafka:kafka-tools:$KAFKA_VERSION:jar" \
    -DoutputDirectory="$work" >"$work/mvn.log" 2>&1; then
    ts_log_tail "$work/mvn.log" 80
    ts_die "kafka: mvn copy of kafka-tools failed"
  fi
  rm -rf "$KAFKA_TOOLS_HOME"
  mv "$work" "$KAFKA_TOOLS_HOME"
  touch "$KAFKA_TOOLS_HOME/.complete"
}

do_install() {
  ensure_tools
  ts_with_lock "kafka-$KAFKA_VERSION" fetch_jars
  ts_with_lock "kafka-tools-$KAFKA_VERSION" fetch_tools_jar
}

do_console_producer() {
  do_install >&2
  java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" \
    -cp "$KAFKA_LIB/*:$KAFKA_TOOLS_HOME/kafka-tools-$KAFKA_VERSION.jar" \
    org.apache.kafka.tools.ConsoleProducer "$@"
}

java_run() {
  java "${JVM_OPTS[@]}" -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" \
    -cp "$KAFKA_LIB/*" "$@"
}

# A Kafka cluster id: 16 random bytes, unpadded url-safe base64, not starting with '-'.
new_cluster_id() {
  "$TS_PYTHON" -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break
'
}

write_config() {
  local port controller_port
  if [[ -n "${KAFKA_PORT:-}" && -n "${KAFKA_CONTROLLER_PORT:-}" ]]; then
    port="$KAFKA_PORT"
    controller_port="$KAFKA_CONTROLLER_PORT"
  else
    read -r port controller_port <<<"$(ts_free_ports 2)"
  fi
  mkdir -p "$KDIR" "$DATADIR"
  cat >"$PROPS" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$DATADIR
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
# After a hard kill the restarted broker can register only once the controller has
# fenced its old incarnation, i.e. after the session timeout (default 9 s).
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
auto.create.topics.enable=true
EOF
  echo "$port" >"$KDIR/port"
  echo "$controller_port" >"$KDIR/controller.port"
  echo "127.0.0.1:$port" >"$KDIR/brokers"
}

# Formatting takes a JVM start (seconds), so it is done once per Kafka version into a
# template in the cache, which each run copies. The formatted files hold the cluster id,
# node id and metadata version, not ports or paths (static quorum voters are not stored).
make_storage_template() {
  local tpl="$KAFKA_HOME/storage-template"
  [[ -f "$tpl/.complete" ]] && return 0
  rm -rf "$tpl"
  mkdir -p "$tpl/data"
  cat >"$tpl/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$tpl/data
EOF
  if ! java_run kafka.tools.StorageTool format -t "$(new_cluster_id)" \
    -c "$tpl/server.properties" >"$tpl/format.log" 2>&1; then
    ts_log_tail "$tpl/format.log"
    ts_die "kafka: formatting storage failed"
  fi
  [[ -f "$tpl/data/meta.properties" ]] || ts_die "kafka: no meta.properties after formatting"
  touch "$tpl/.complete"
}

format_storage() {
  ts_with_lock "kafka-$KAFKA_VERSION" make_storage_template
  mkdir -p "$DATADIR"
  cp -a "$KAFKA_HOME/storage-template/data/." "$DATADIR/"
}

# Wait until an admin client gets cluster metadata from the broker.
wait_ready() {
  local pid="$1" timeout="$2" brokers node rc=0
  brokers="$(cat "$KDIR/brokers")"
  node="$(ts_node)"
  "$node" --no-warnings "$TS_LIB_DIR/kafka-ready.ts" "$brokers" "$pid" "$timeout" || rc=$?
  return "$rc"
}

# shellcheck source=scripts/test-services/kafka-cluster.sh
source "$TS_LIB_DIR/kafka-cluster.sh"

do_start() {
  ts_ensure_state_dir
  state_paths
  ts_require_node_modules kafkajs
  do_install
  local pid port controller_port started rc=0
  pid="$(ts_read_pid "$PIDFILE")"
  if ts_pid_alive "$pid"; then
    ts_log "kafka: already running (pid $pid) on $(cat "$KDIR/brokers")"
    return 0
  fi
  [[ -f "$PROPS" ]] || write_config
  [[ -f "$DATADIR/meta.properties" ]] || format_storage
  port="$(cat "$KDIR/port")"
  controller_port="$(cat "$KDIR/controller.port")"
  # After a stop the ports are normally free at once; allow a moment all the same.
  local busy
  busy="$(ts_wait_ports_free 10 "$port" "$controller_port")" ||
    ts_die "kafka: port $busy is taken by another process"

  started=$SECONDS
  echo "===== start $(date -Is) =====" >>"$LOGFILE"
  ts_spawn "$PIDFILE" "$LOGFILE" java "${JVM_OPTS[@]}" \
    -Dlog4j2.configurationFile="$KAFKA_HOME/log4j2.properties" \
    -cp "$KAFKA_LIB/*" kafka.Kafka "$PROPS"
  pid="$(ts_read_pid "$PIDFILE")"
  wait_ready "$pid" "$KAFKA_READY_TIMEOUT" || rc=$?
  if ((rc != 0)); then
    ts_log_tail "$LOGFILE" 80
    if ((rc == 2)); then
      rm -f "$PIDFILE"
      ts_die "kafka: the broker process exited during start"
    fi
    ts_stop_pidfile "$PIDFILE" 5 KILL
    if ((rc == 1)); then ts_die "kafka: not ready after ${KAFKA_READY_TIMEOUT}s"; fi
    ts_die "kafka: readiness probe failed (exit $rc)"
  fi
  ts_log "kafka: ready on 127.0.0.1:$port (pid $pid) in $((SECONDS - started))s"
}

do_stop() {
  local signal="$1" grace="$2"
  ts_require_state_dir
  state_paths
  local pid
  pid="$(ts_read_pid "$PIDFILE")"
  if ts_pid_alive "$pid"; then
    ts_stop_pidfile "$PIDFILE" "$grace" "$signal"
    echo "===== stopped (SIG$signal) $(date -Is) =====" >>"$LOGFILE"
    ts_log "kafka: stopped (SIG$signal, pid $pid)"
  else
    rm -f "$PIDFILE"
  fi
}

do_status() {
  ts_require_state_dir
  state_paths
  local pid
  pid="$(ts_read_pid "$PIDFILE")"
  if ! ts_pid_alive "$pid"; then
    echo "kafka: not running"
    return 1
  fi
  if wait_ready "$pid" 5; then
    echo "kafka: running (pid $pid) on $(cat "$KDIR/brokers")"
  else
    echo "kafka: process $pid is up but not answering on $(cat "$KDIR/brokers")"
    return 1
  fi
}

case "${1:-}" in
  install) do_install ;;
  start) do_start ;;
  stop) do_stop TERM "$KAFKA_STOP_TIMEOUT" ;;
  kill) do_stop KILL 10 ;;
  restart)
    do_stop TERM "$KAFKA_STOP_TIMEOUT"
    do_start
    ;;
  status) do_status ;;
  console-producer)
    shift
    do_console_producer "$@"
    ;;
  env)
    ts_require_state_dir
    state_paths
    echo "export TEST_KAFKA_BROKERS=$(cat "$KDIR/brokers")"
    echo "export TEST_KAFKA_CTL=$TS_LIB_DIR/kafka.sh"
    ;;
  cluster-start) do_cluster_start ;;
  cluster-start-node) do_cluster_start_node "${2:-}" ;;
  cluster-stop-node) do_cluster_stop_node "${2:-}" TERM "$KAFKA_STOP_TIMEOUT" ;;
  cluster-kill) do_cluster_stop_node "${2:-}" KILL 10 ;;
  cluster-stop) do_cluster_stop ;;
  cluster-status) do_cluster_status ;;
  cluster-env) do_cluster_env ;;
  cluster-quorum-leader) do_cluster_quorum_leader ;;
  *)
    echo "usage: $0 install|start|stop|kill|restart|status|env|console-producer" >&2
    echo "       $0 cluster-start|cluster-stop|cluster-status|cluster-env|cluster-quorum-leader" >&2
    echo "       $0 cluster-start-node|cluster-stop-node|cluster-kill N (N: 1, 2 or 3)" >&2
    exit 2
    ;;
esac
