#!/usr/bin/env bash
# End-to-end test of redis-operator on a real cluster (kind or any Kubernetes 1.29+): the same
# scenarios as the system tests in test/system/, step for step (same scenario names, same
# assertions, same bounds), run with kubectl against any cluster:
#   1 apply.test.ts         the design's Redis applied verbatim
#   2 failover.test.ts      the master pod deleted under SET + WAIT 1 traffic
#   3 scale.test.ts         scale 2 -> 3 -> 1 through the scale subresource
#   4 invalid-spec.test.ts  an edit past the schema that the hook refuses
#   5 delete.test.ts        delete with whenDeleted Retain and Delete
# (6 and 7, the sidecar leader killed mid-failover and the full outage, need fault injection
# into the API server and the nodes, so they run only in the system tests:
# test/system/leader-crash.test.ts and full-restart.test.ts.)
#
# Usage:  KUBECONFIG=~/.kube/config test/e2e/run.sh
# Steps: installs Metacontroller (upstream kustomization), builds the image, loads it into kind
# (when the current context is kind-<name>) or pushes it (E2E_PUSH=1), applies manifests/, waits
# for the operator, runs the scenarios, and cleans up what it created.
#
# Environment:
#   KUBECONFIG            required: the cluster to test (the current context is used)
#   E2E_IMAGE             operator image (default redis-operator:0.1.0, what manifests/ runs)
#   E2E_PUSH=1            docker push E2E_IMAGE (a cluster that pulls from a registry)
#   E2E_BUILD=0           do not build (the image exists already)
#   E2E_INSTALL=0         do not install Metacontroller and manifests/ (already installed)
#   E2E_SCENARIOS         which scenarios, default "1 2 3 4 5"
#   E2E_RESET=1           delete leftovers of an earlier run (default/my-redis, e2e-* namespaces) first
#   E2E_KEEP=1            keep what the scenarios created (for a look afterwards)
#   E2E_REDIS_IMAGE       Redis image the pods use (default redis:7.2, preloaded into kind so
#                         image pulls do not count against the bounds)
#   E2E_LOG_DIR           where writer logs and key lists go (default: a temp dir)
#
# Needs: bash 4+, kubectl, docker (to build), kind (for kind clusters), awk, sort, comm.
# Bounds (ms) are the system tests' (test/system/support.ts BOUND); figures are printed as they
# are measured, and pass/fail is never decided on them beyond those deadlines.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

: "${KUBECONFIG:?set KUBECONFIG to the cluster to test}"
export KUBECONFIG
IMAGE=${E2E_IMAGE:-redis-operator:0.1.0}
REDIS_IMAGE=${E2E_REDIS_IMAGE:-redis:7.2}
SCENARIOS=${E2E_SCENARIOS:-1 2 3 4 5}
LOG_DIR=${E2E_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/redis-operator-e2e.XXXXXX")}
mkdir -p "$LOG_DIR"

# The system tests' deadlines (test/system/support.ts BOUND).
readonly BOUND_RUNNING=30000   # apply -> "my-redis 7.2 Ready 2 Running"
readonly BOUND_ALL_READY=40000 # apply -> every pod Ready and linked
readonly BOUND_FAILOVER=20000  # master pod deleted -> a new master Ready behind the master Service
readonly BOUND_REJOIN=40000    # a recreated pod -> Ready replica of the current master
readonly BOUND_WRITES=30000    # the writer's next few hundred acknowledged writes (see wait_for_acks)

readonly NAME=my-redis
readonly ROLE_KEY='redis.example.com/role'
readonly RUNNING_ROW='my-redis 7.2 Ready 2 Running'
readonly EXAMPLE=manifests/examples/redis.yaml

BACKGROUND_PIDS=()
CREATED_NAMESPACES=()
CURRENT='setup'

# ------------------------------------------------------------------ output and failure

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }
diag() { printf '  # %s\n' "$*"; }
now_ms() { date +%s%3N; }

dump() {
  local ns=${1:-default}
  echo "---- cluster dump (namespace $ns) ----"
  kubectl get redis -n "$ns" -o wide 2>&1 || true
  kubectl get pods -n "$ns" -o wide -L "$ROLE_KEY" 2>&1 || true
  kubectl get redis -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name}{": "}{.status}{"\n"}{end}' 2>&1 || true
  kubectl get events -n "$ns" --sort-by=.metadata.resourceVersion 2>&1 | tail -n 20 || true
  for pod in $(kubectl get pods -n redis-operator -l app.kubernetes.io/name=redis-operator -o name 2>/dev/null); do
    echo "-- $pod sidecar (last 20 lines)"
    kubectl logs -n redis-operator "$pod" -c sidecar --tail=20 2>&1 || true
  done
  echo "-- metacontroller (last 20 lines)"
  kubectl logs -n metacontroller statefulset/metacontroller --tail=20 2>&1 || true
}

FAIL_NS=default
fail() {
  echo "FAIL [$CURRENT]: $*" >&2
  dump "$FAIL_NS" >&2
  exit 1
}
trap 'fail "command failed at line $LINENO: $BASH_COMMAND"' ERR

expect() { # description command...: fails the scenario unless the command succeeds
  local what=$1
  shift
  "$@" || fail "expected: $what"
}

expect_eq() { # actual expected description
  [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"
}

# wait_for BOUND_MS DESCRIPTION COMMAND...: polls every 250 ms until COMMAND succeeds.
wait_for() {
  local bound=$1 what=$2 start
  shift 2
  start=$(now_ms)
  until "$@" >/dev/null 2>&1; do
    if (($(now_ms) - start > bound)); then fail "timed out after ${bound} ms waiting for ${what}"; fi
    sleep 0.25
  done
}

cleanup() {
  local pid
  for pid in "${BACKGROUND_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "${E2E_KEEP:-0}" = 1 ]; then
    log "E2E_KEEP=1: leaving namespaces ${CREATED_NAMESPACES[*]:-} and default/$NAME in place; logs in $LOG_DIR"
    return
  fi
  local ns
  for ns in "${CREATED_NAMESPACES[@]}"; do
    if [ "$ns" = default ]; then
      kubectl delete pod -n default -l app=e2e-writer --ignore-not-found --wait=false >/dev/null 2>&1 || true
      kubectl delete redis -n default "$NAME" --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
      kubectl delete pvc -n default -l "app.kubernetes.io/instance=$NAME" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    else
      # Redis first (their finalizers need the operator), then the namespace.
      kubectl delete redis -n "$ns" --all --timeout=120s >/dev/null 2>&1 || true
      kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    fi
  done
  log "cleaned up; logs in $LOG_DIR"
}
trap cleanup EXIT

# ------------------------------------------------------------------ cluster helpers

# The row `kubectl get redis` prints (its printer columns without AGE), single-spaced.
redis_row() { # ns name
  kubectl get redis -n "$1" "$2" --no-headers \
    -o custom-columns='N:.metadata.name,V:.spec.version,M:.status.masterStatus,R:.spec.replicas,P:.status.phase' 2>/dev/null |
    awk '{$1=$1; print}'
}
row_is() { [ "$(redis_row "$1" "$2")" = "$3" ]; }

redis_field() { kubectl get redis -n "$1" "$2" -o jsonpath="{$3}"; }

# name<TAB>deletionTimestamp<TAB>Ready<TAB>role<TAB>link<TAB>podIP<TAB>uid, one line per pod of the Redis.
pods_table() { # ns name
  kubectl get pods -n "$1" -l "app.kubernetes.io/instance=$2" -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.metadata.deletionTimestamp}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.metadata.labels.redis\.example\.com/role}{"\t"}{.metadata.annotations.redis\.example\.com/link}{"\t"}{.status.podIP}{"\t"}{.metadata.uid}{"\n"}{end}'
}

# Pod names (not terminating), sorted, space-separated.
pod_names() { pods_table "$1" "$2" | awk -F'\t' '$2=="" {print $1}' | sort | paste -sd' ' -; }

# `count` pods, all Ready and not terminating, exactly one labelled master, the others replica with link up.
all_linked() { # ns name count
  pods_table "$1" "$2" | awk -F'\t' -v want="$3" '
    $2 == "" { n++; if ($3 != "True") bad = 1; if ($4 == "master") m++; else if (!($4 == "replica" && $5 == "up")) bad = 1 }
    END { exit !(n == want && m == 1 && !bad) }'
}

pod_field() { kubectl get pod -n "$1" "$2" -o jsonpath="{$3}" 2>/dev/null; }
pod_ip() { pod_field "$1" "$2" '.status.podIP'; }
pod_role() { pod_field "$1" "$2" '.metadata.labels.redis\.example\.com/role'; }

# The pod the <name>-master Service routes to right now (its ready endpoints); fails unless exactly one.
master_endpoint() { # ns name
  local names
  names=$(kubectl get endpointslices -n "$1" -l "kubernetes.io/service-name=$2-master" \
    -o jsonpath='{range .items[*].endpoints[*]}{.targetRef.name}{" "}{.conditions.ready}{"\n"}{end}' 2>/dev/null |
    awk '$2 == "true" {print $1}' | sort -u)
  [ -n "$names" ] && [ "$(printf '%s\n' "$names" | wc -l)" -eq 1 ] && printf '%s\n' "$names"
}
master_is() { [ "$(master_endpoint "$1" "$2")" = "$3" ]; }

# The pods the <name>-replicas Service routes to right now (ready endpoints), sorted, space-separated.
replica_endpoints() { # ns name
  kubectl get endpointslices -n "$1" -l "kubernetes.io/service-name=$2-replicas" \
    -o jsonpath='{range .items[*].endpoints[*]}{.targetRef.name}{" "}{.conditions.ready}{"\n"}{end}' 2>/dev/null |
    awk '$2 == "true" {print $1}' | sort -u | paste -sd' ' -
}

# The Services route as labelled: the master Service to the one pod labelled master, the replicas
# Service to every pod labelled replica. The EndpointSlice controller follows labels and readiness
# a moment after the pods change, so this is waited for, not assumed.
services_routed() { # ns name
  local table master replicas
  table=$(pods_table "$1" "$2")
  master=$(printf '%s\n' "$table" | awk -F'\t' '$2 == "" && $4 == "master" {print $1}')
  replicas=$(printf '%s\n' "$table" | awk -F'\t' '$2 == "" && $4 == "replica" {print $1}' | sort | paste -sd' ' -)
  [ -n "$master" ] && [ "$(printf '%s\n' "$master" | wc -l)" -eq 1 ] && master_is "$1" "$2" "$master" &&
    [ "$(replica_endpoints "$1" "$2")" = "$replicas" ]
}
master_is_not() { local m; m=$(master_endpoint "$1" "$2") && [ "$m" != "$3" ]; }

# redis-cli inside a Redis pod against its own address, authenticated from the pod's env.
# shellcheck disable=SC2016 # $REDIS_PASSWORD and $POD_IP expand inside the pod
rcli() { # ns pod args...
  local ns=$1 pod=$2
  shift 2
  kubectl exec -n "$ns" "$pod" -c redis -- sh -c 'REDISCLI_AUTH="$REDIS_PASSWORD" exec redis-cli --no-auth-warning -h "$POD_IP" "$@"' sh "$@"
}

# redis-cli inside a Redis pod against a Service (by its DNS name), commands on stdin (one connection).
# shellcheck disable=SC2016 # $REDIS_PASSWORD expands inside the pod
rcli_service() { # ns pod service
  kubectl exec -i -n "$1" "$2" -c redis -- sh -c 'REDISCLI_AUTH="$REDIS_PASSWORD" exec redis-cli --no-auth-warning -h "$0"' "$3"
}

# The files in a pod's /data.
data_files() { # ns pod
  kubectl exec -n "$1" "$2" -c redis -- ls -A /data
}

info_field() { # ns pod field
  rcli "$1" "$2" INFO replication | tr -d '\r' | awk -F: -v f="$3" '$1 == f {print $2}'
}

settle() { # ns master-pod replicas: every replica acknowledged everything the master has
  # Not WAIT: on a connection that wrote nothing it answers at once with every online replica,
  # one still applying a backlog included. The master's own view: its offset now, then replica
  # lines online at or past it.
  local target n=0 i
  target=$(info_field "$1" "$2" master_repl_offset)
  for i in $(seq 1 40); do
    n=$(rcli "$1" "$2" INFO replication | tr -d '\r' | awk -F'[:,=]' -v t="$target" '
      /^slave[0-9]+:/ { on = 0; off = -1; for (j = 2; j < NF; j += 2) { if ($j == "state" && $(j + 1) == "online") on = 1; if ($j == "offset") off = $(j + 1) } if (on && off + 0 >= t + 0) c++ }
      END { print c + 0 }')
    [ "$n" -ge "$3" ] && return 0
    sleep 0.25
  done
  fail "only $n of $3 replicas of $2 caught up with offset $target"
}

# Keys `prefix:*` present on a pod, sorted, into a file.
keys_on() { # ns pod prefix file
  rcli "$1" "$2" --scan --pattern "$3:*" | tr -d '\r' | sort >"$4"
}

# Every shard Lease of the sidecars (redis-operator-sidecar-shard-<i>, one per SHARDS) has a holder.
shard_leases_held() {
  local holders
  holders=$(kubectl get lease -n redis-operator -o jsonpath='{range .items[*]}{.metadata.name}={.spec.holderIdentity}{"\n"}{end}' | grep '^redis-operator-sidecar-shard-') || return 1
  ! printf '%s\n' "$holders" | grep -q '=$'
}

crd_established() { kubectl get crd redises.redis.example.com -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' | grep -qx True; }

# ------------------------------------------------------------------ the writer (an application)

# A pod writing through the master Service: `SET k k` then `WAIT 1 500` on one connection per
# write (so every write goes through the Service's current routing); prints `ACK <key> <epoch ms>`
# only for writes a replica acknowledged. Stops when /tmp/stop exists.
start_writer() { # ns prefix
  local ns=$1 prefix=$2
  kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: writer-$prefix
  labels: {app: e2e-writer}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: writer
      image: $REDIS_IMAGE
      env:
        - {name: P, value: "$prefix"}
        - name: REDISCLI_AUTH
          valueFrom: {secretKeyRef: {name: $NAME-auth, key: password}}
      command:
        - sh
        - -c
        - |
          i=0
          while [ ! -e /tmp/stop ]; do
            i=\$((i + 1))
            # A client's timeout: a connection to a master that died or was fenced mid-write gets
            # no reset when its pod's network goes, and an unanswered write is not acknowledged.
            out=\$(printf 'SET %s:%d %s:%d\r\nWAIT 1 500\r\n' "\$P" "\$i" "\$P" "\$i" | timeout 3 redis-cli --no-auth-warning -h $NAME-master 2>/dev/null | tr '\n' ' ')
            case "\$out" in
              "OK "[1-9]*) echo "ACK \$P:\$i \$(date +%s%3N)" ;;
              *) echo "NACK \$P:\$i" ;;
            esac
          done
EOF
  wait_for 60000 "writer-$prefix running" sh -c "[ \"\$(kubectl get pod -n '$ns' 'writer-$prefix' -o jsonpath='{.status.phase}')\" = Running ]"
}

writer_log() { # ns prefix
  kubectl logs -n "$1" "writer-$2" 2>/dev/null
}

acked_count() { writer_log "$1" "$2" | awk '$1 == "ACK"' | wc -l; }
acked_at_least() { [ "$(acked_count "$1" "$2")" -ge "$3" ]; }
# wait_for_acks NS PREFIX N WHAT: the writer's pace is the machine's (one connection per write, ~40/s
# on a loaded 2-core CI machine, ~100/s idle), so the bound is generous and a timeout says what the
# writer saw: its ACK and NACK counts and its last refusal, not only that the count fell short.
wait_for_acks() { # ns prefix n what
  local ns=$1 prefix=$2 n=$3 what=$4 start
  start=$(now_ms)
  until acked_at_least "$ns" "$prefix" "$n"; do
    if (($(now_ms) - start > BOUND_WRITES)); then
      fail "timed out after ${BOUND_WRITES} ms waiting for ${what}: $(acked_count "$ns" "$prefix") ACK, $(writer_log "$ns" "$prefix" | awk '$1 == "NACK"' | wc -l) NACK; last NACK: $(writer_log "$ns" "$prefix" | awk '$1 == "NACK"' | tail -n 1)"
    fi
    sleep 0.25
  done
}
# The first write acknowledged at or after epoch ms t.
first_ack_after() { writer_log "$1" "$2" | awk -v t="$3" '$1 == "ACK" && $3 >= t {print $3; exit}'; }
first_ack_after_exists() { [ -n "$(first_ack_after "$@")" ]; }

stop_writer() { # ns prefix -> acked keys in $LOG_DIR/<ns>-<prefix>.acked
  local ns=$1 prefix=$2 file="$LOG_DIR/$1-$2"
  # The writer ends as soon as the file exists, and with it its container: the exec may then be
  # killed before it reports (137). Whether the writer stopped is what the next line checks.
  kubectl exec -n "$ns" "writer-$prefix" -- touch /tmp/stop || true
  wait_for 30000 "writer-$prefix finished" sh -c "[ \"\$(kubectl get pod -n '$ns' 'writer-$prefix' -o jsonpath='{.status.phase}')\" = Succeeded ]"
  kubectl logs -n "$ns" "writer-$prefix" >"$file.log"
  kubectl delete pod -n "$ns" "writer-$prefix" --wait=false >/dev/null
  awk '$1 == "ACK" {print $2}' "$file.log" | sort >"$file.acked"
  diag "$(wc -l <"$file.acked") acknowledged writes, $(awk '$1 == "NACK"' "$file.log" | wc -l) not acknowledged (not counted)"
}

# Every acknowledged key is on every pod of the Redis (after the replicas caught up).
assert_nothing_lost() { # ns prefix pods
  local ns=$1 prefix=$2 pods=$3 master pod missing
  wait_for "$BOUND_FAILOVER" 'a master behind the master Service' master_endpoint "$ns" "$NAME"
  wait_for "$BOUND_REJOIN" "$pods Ready, linked pods" all_linked "$ns" "$NAME" "$pods"
  master=$(master_endpoint "$ns" "$NAME")
  settle "$ns" "$master" $((pods - 1))
  for pod in $(pod_names "$ns" "$NAME"); do
    keys_on "$ns" "$pod" "$prefix" "$LOG_DIR/$ns-$prefix.$pod"
    missing=$(comm -23 "$LOG_DIR/$ns-$prefix.acked" "$LOG_DIR/$ns-$prefix.$pod" | wc -l)
    [ "$missing" -eq 0 ] || fail "$missing acknowledged keys missing on $pod, e.g. $(comm -23 "$LOG_DIR/$ns-$prefix.acked" "$LOG_DIR/$ns-$prefix.$pod" | head -n 5 | paste -sd' ' -)"
  done
  diag "all $(wc -l <"$LOG_DIR/$ns-$prefix.acked") acknowledged writes present on $pods pods"
}

# ------------------------------------------------------------------ watches

# Every pod event of the Redis: `<type> <resourceVersion> <name> <role>` (role empty when unlabelled).
start_pod_watch() { # ns file
  kubectl get pods -n "$1" -l "app.kubernetes.io/instance=$NAME" --watch --output-watch-events \
    -o jsonpath='{.type}{" "}{.object.metadata.resourceVersion}{" "}{.object.metadata.name}{" "}{.object.metadata.labels.redis\.example\.com/role}{"\n"}' >"$2" 2>/dev/null &
  BACKGROUND_PIDS+=("$!")
}

# Moments when two pods carried the master label (empty output: never).
two_masters() { # file
  awk '{ if ($1 == "DELETED") delete role[$3]; else role[$3] = $4
         n = 0; list = ""; for (p in role) if (role[p] == "master") { n++; list = list " " p }
         if (n > 1) print "rv " $2 ":" list }' "$1"
}

# Pods deleted while labelled master, from line number `from` on.
deleted_while_master() { # file from
  awk -v from="$2" '{ if ($1 == "DELETED") { if (NR >= from && role[$3] == "master") print $3; delete role[$3] } else role[$3] = $4 }' "$1"
}

# ------------------------------------------------------------------ setup

namespace_for() { # scenario namespace (1 uses default: the manifest is applied verbatim)
  local ns=$1
  if [ "$ns" != default ]; then
    if kubectl get namespace "$ns" >/dev/null 2>&1; then
      [ "${E2E_RESET:-0}" = 1 ] || fail "namespace $ns exists (an earlier run?); delete it or set E2E_RESET=1"
      kubectl delete redis -n "$ns" --all --timeout=120s >/dev/null 2>&1 || true
      kubectl delete namespace "$ns" --timeout=180s >/dev/null
    fi
    kubectl create namespace "$ns" >/dev/null
  elif kubectl get redis -n default "$NAME" >/dev/null 2>&1; then
    [ "${E2E_RESET:-0}" = 1 ] || fail "default/$NAME exists (an earlier run?); delete it or set E2E_RESET=1"
    kubectl delete redis -n default "$NAME" --timeout=120s >/dev/null
    kubectl delete pvc -n default -l "app.kubernetes.io/instance=$NAME" --timeout=120s >/dev/null
  fi
  CREATED_NAMESPACES+=("$ns")
  FAIL_NS=$ns
}

# The design's manifest, verbatim but for its namespace.
example_in() { sed "s/^  namespace: default\$/  namespace: $1/" "$EXAMPLE"; }

install() {
  local context
  context=$(kubectl config current-context)
  log "cluster: context $context, server $(kubectl version -o json 2>/dev/null | awk -F'"' '/gitVersion/ {print $4; exit}')"
  if [ "${E2E_BUILD:-1}" = 1 ]; then
    log "docker build -t $IMAGE ."
    docker build -t "$IMAGE" . >"$LOG_DIR/docker-build.log" 2>&1 || { tail -n 30 "$LOG_DIR/docker-build.log" >&2; fail 'docker build failed'; }
  fi
  if [[ $context == kind-* ]]; then
    local cluster=${context#kind-}
    log "kind load docker-image $IMAGE $REDIS_IMAGE --name $cluster"
    docker image inspect "$REDIS_IMAGE" >/dev/null 2>&1 || docker pull "$REDIS_IMAGE" >/dev/null
    kind load docker-image "$IMAGE" --name "$cluster" >/dev/null
    kind load docker-image "$REDIS_IMAGE" --name "$cluster" >/dev/null
  elif [ "${E2E_PUSH:-0}" = 1 ]; then
    log "docker push $IMAGE"
    docker push "$IMAGE" >/dev/null
  fi
  if [ "${E2E_INSTALL:-1}" = 1 ]; then
    log 'installing Metacontroller (upstream production kustomization)'
    kubectl apply -k github.com/metacontroller/metacontroller/manifests/production >/dev/null
    kubectl -n metacontroller rollout status statefulset/metacontroller --timeout=180s >/dev/null
    log 'kubectl apply -k manifests/'
    kubectl apply -k manifests/ >/dev/null
    if [ "$IMAGE" != redis-operator:0.1.0 ]; then
      kubectl -n redis-operator set image deployment/redis-operator "hook=$IMAGE" "sidecar=$IMAGE" >/dev/null
    fi
  fi
  wait_for 60000 'the Redis CRD established' crd_established
  kubectl -n redis-operator rollout status deployment/redis-operator --timeout=180s >/dev/null
  wait_for 60000 'a sidecar holding every shard Lease' shard_leases_held
  log "operator ready (image $IMAGE)"
}

# Applies the design's Redis in ns and waits for the Running row and three Ready, linked pods.
apply_design() { # ns
  local ns=$1 t0
  t0=$(now_ms)
  if [ "$ns" = default ]; then kubectl apply -f "$EXAMPLE" >/dev/null; else example_in "$ns" | kubectl apply -f - >/dev/null; fi
  wait_for "$BOUND_RUNNING" "the row \"$RUNNING_ROW\"" row_is "$ns" "$NAME" "$RUNNING_ROW"
  local running=$(($(now_ms) - t0))
  wait_for "$BOUND_ALL_READY" 'three Ready pods, one master, replicas linked' all_linked "$ns" "$NAME" 3
  wait_for "$BOUND_ALL_READY" 'the master Service routing to the master, the replicas Service to every replica' services_routed "$ns" "$NAME"
  diag "apply -> \"$RUNNING_ROW\" ${running} ms; -> all three pods Ready and linked $(($(now_ms) - t0)) ms"
}

# ------------------------------------------------------------------ scenario 1

scenario_1() {
  CURRENT="1: the design's Redis applied verbatim: three pods, the Running row, data through the master Service on both replicas"
  log "scenario $CURRENT"
  local ns=default
  namespace_for "$ns"
  apply_design "$ns"

  expect_eq "$(pod_names "$ns" "$NAME")" 'my-redis-master-0 my-redis-replica-0 my-redis-replica-1' 'pods'
  expect_eq "$(redis_row "$ns" "$NAME")" "$RUNNING_ROW" 'row'
  expect_eq "$(redis_field "$ns" "$NAME" .status.master)" my-redis-master-0 'a fresh set starts on master-0'
  expect_eq "$(redis_field "$ns" "$NAME" .status.masterIP)" "$(pod_ip "$ns" my-redis-master-0)" 'status.masterIP'
  expect 'Metacontroller put its finalizer on the Redis' sh -c "kubectl get redis -n $ns $NAME -o jsonpath='{.metadata.finalizers}' | grep -q metacontroller.io/compositecontroller-redis-operator"

  expect_eq "$(master_endpoint "$ns" "$NAME")" my-redis-master-0 'the master Service routes to the master'
  expect_eq "$(replica_endpoints "$ns" "$NAME")" 'my-redis-replica-0 my-redis-replica-1' 'the replicas Service routes to both replicas'
  expect_eq "$(pod_role "$ns" my-redis-replica-0) $(pod_role "$ns" my-redis-replica-1)" 'replica replica' 'replica labels'

  expect 'the generated auth Secret exists' kubectl get secret -n "$ns" "$NAME-auth"
  local anonymous
  # shellcheck disable=SC2016 # $POD_IP expands inside the pod
  anonymous=$(kubectl exec -n "$ns" my-redis-master-0 -c redis -- sh -c 'redis-cli -h "$POD_IP" PING' 2>&1 || true)
  [[ $anonymous == *NOAUTH* || $anonymous == *"Authentication required"* ]] || fail "Redis answered without a password: $anonymous"

  # 100 keys through the master Service on one connection, then WAIT 2; readable on both replicas.
  local i out
  out=$(for i in $(seq 0 99); do printf 'SET design:%d value-of-design:%d\n' "$i" "$i"; done | { cat; echo 'WAIT 2 10000'; } | rcli_service "$ns" my-redis-replica-0 "$NAME-master" | tr -d '\r' | tail -n 1)
  [ "$out" -ge 2 ] || fail "WAIT 2 after the writes answered $out"
  local want got pod
  want=$(for i in $(seq 0 99); do echo "value-of-design:$i"; done)
  for pod in my-redis-replica-0 my-redis-replica-1; do
    # shellcheck disable=SC2046 # one argument per key
    got=$(rcli "$ns" "$pod" MGET $(for i in $(seq 0 99); do echo "design:$i"; done) | tr -d '\r')
    [ "$got" = "$want" ] || fail "not every key readable on $pod"
    [[ $(rcli "$ns" "$pod" SET x y 2>&1) == *READONLY* ]] || fail "$pod accepted a write"
  done

  # Steady state: no hot loop (no status write on the Redis, no spec write on its StatefulSets).
  local rv0 gen0 rv1 gen1
  rv0=$(redis_field "$ns" "$NAME" .metadata.resourceVersion)
  gen0=$(kubectl get sts -n "$ns" -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{.items[*].metadata.generation}')
  sleep 3
  rv1=$(redis_field "$ns" "$NAME" .metadata.resourceVersion)
  gen1=$(kubectl get sts -n "$ns" -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{.items[*].metadata.generation}')
  expect_eq "$rv1" "$rv0" 'no status writes in steady state'
  expect_eq "$gen1" "$gen0" 'no child writes in steady state'
  log "scenario 1 passed"
}

# ------------------------------------------------------------------ scenario 2

scenario_2() {
  CURRENT="2: deleting the master pod: promotion, the Service follows, the old pod rejoins as a replica with its data, nothing acknowledged lost"
  log "scenario $CURRENT"
  local ns=e2e-failover
  namespace_for "$ns"
  apply_design "$ns"
  local watch="$LOG_DIR/$ns.pods.watch"
  start_pod_watch "$ns" "$watch"
  start_writer "$ns" w
  wait_for_acks "$ns" w 300 '300 acknowledged writes'

  local old old_ip old_uid claim_uid acked_before t0 promoted
  old=$(master_endpoint "$ns" "$NAME")
  expect_eq "$old" my-redis-master-0 'the first master'
  old_ip=$(pod_ip "$ns" "$old")
  old_uid=$(pod_field "$ns" "$old" .metadata.uid)
  claim_uid=$(kubectl get pvc -n "$ns" "data-$old" -o jsonpath='{.metadata.uid}')
  acked_before=$(acked_count "$ns" w)

  t0=$(now_ms)
  kubectl delete pod -n "$ns" "$old" --wait=false >/dev/null
  wait_for "$BOUND_FAILOVER" 'a new master behind my-redis-master' master_is_not "$ns" "$NAME" "$old"
  promoted=$(master_endpoint "$ns" "$NAME")
  diag "delete master pod -> $promoted Ready behind the master Service: $(($(now_ms) - t0)) ms (polled)"
  wait_for "$BOUND_FAILOVER" 'an acknowledged write after the delete' first_ack_after_exists "$ns" w "$t0"
  diag "first acknowledged write through the Service: $(($(first_ack_after "$ns" w "$t0") - t0)) ms after the delete"
  [[ $promoted =~ ^my-redis-replica-[01]$ ]] || fail "promoted $promoted"
  expect_eq "$(info_field "$ns" "$promoted" role)" master "role of $promoted"

  recreated() { [ "$(pod_field "$ns" "$old" .metadata.uid)" != "$old_uid" ] && all_linked "$ns" "$NAME" 3; }
  wait_for "$BOUND_REJOIN" "$old recreated and Ready as a replica" recreated
  diag "delete -> $old back as a Ready, linked replica: $(($(now_ms) - t0)) ms"
  expect_eq "$(pod_role "$ns" "$old")" replica "$old's role"
  local new_ip
  new_ip=$(pod_ip "$ns" "$old")
  [ "$new_ip" != "$old_ip" ] || diag "note: the recreated pod reused its old address ($new_ip)"
  expect_eq "$(kubectl get pvc -n "$ns" "data-$old" -o jsonpath='{.metadata.uid}')" "$claim_uid" 'the same volume (claim) is reused'
  expect_eq "$(info_field "$ns" "$old" master_host)" "$(pod_ip "$ns" "$promoted")" 'it replicates from the new master'
  expect_eq "$(info_field "$ns" "$old" master_link_status)" up 'its link'
  expect 'the recreated pod loaded its data from the volume' sh -c "kubectl logs -n $ns $old -c redis | grep -Eq 'DB loaded from|Done loading RDB'"

  wait_for_acks "$ns" w $((acked_before + 300)) '300 more acknowledged writes after the failover'
  stop_writer "$ns" w
  assert_nothing_lost "$ns" w 3

  local reasons
  reasons=$(kubectl get events -n "$ns" --field-selector "involvedObject.name=$NAME" -o jsonpath='{.items[*].reason}')
  [[ $reasons == *FailoverStarted* || $reasons == *Switchover* ]] || fail "no failover or switchover event ($reasons)"
  [[ $reasons == *FailoverCompleted* || $reasons == *Switchover* ]] || fail "no completion event ($reasons)"
  wait_for "$BOUND_RUNNING" "$RUNNING_ROW" row_is "$ns" "$NAME" "$RUNNING_ROW"
  expect_eq "$(redis_field "$ns" "$NAME" .status.master)" "$promoted" 'status.master'
  expect_eq "$(redis_field "$ns" "$NAME" .status.masterIP)" "$(pod_ip "$ns" "$promoted")" 'status.masterIP'
  [ -z "$(two_masters "$watch")" ] || fail "two pods labelled master at once: $(two_masters "$watch" | head -n 3)"
  diag "events: $reasons"
  log "scenario 2 passed"
}

# ------------------------------------------------------------------ scenario 3

scenario_3() {
  CURRENT="3: scale 2 -> 3 -> 1 through the scale subresource: the new replica syncs, the master is switched over before its pod is removed, nothing acknowledged lost"
  log "scenario $CURRENT"
  local ns=e2e-scale
  namespace_for "$ns"
  apply_design "$ns"
  local watch="$LOG_DIR/$ns.pods.watch" stswatch="$LOG_DIR/$ns.sts.watch"
  start_pod_watch "$ns" "$watch"
  start_writer "$ns" w
  wait_for_acks "$ns" w 300 '300 acknowledged writes'

  # 2 -> 3
  local t0 master
  t0=$(now_ms)
  kubectl scale redis -n "$ns" "$NAME" --replicas=3 >/dev/null
  expect_eq "$(kubectl get --raw "/apis/redis.example.com/v1/namespaces/$ns/redises/$NAME/scale" | tr -d ' ' | grep -o '"spec":{"replicas":[0-9]*}')" '"spec":{"replicas":3}' 'the scale subresource'
  wait_for "$BOUND_REJOIN" 'four Ready, linked pods' all_linked "$ns" "$NAME" 4
  diag "scale to 3 -> my-redis-replica-2 Ready and linked: $(($(now_ms) - t0)) ms"
  wait_for "$BOUND_RUNNING" 'my-redis 7.2 Ready 3 Running' row_is "$ns" "$NAME" 'my-redis 7.2 Ready 3 Running'
  expect_eq "$(kubectl get --raw "/apis/redis.example.com/v1/namespaces/$ns/redises/$NAME/scale" | tr -d ' ' | grep -o '"status":{"replicas":[0-9]*' | grep -o '[0-9]*$')" 3 'the scale subresource reports the replicas'
  master=$(master_endpoint "$ns" "$NAME")
  settle "$ns" "$master" 3
  local sofar="$LOG_DIR/$ns.sofar" present="$LOG_DIR/$ns.replica-2"
  writer_log "$ns" w | awk '$1 == "ACK" {print $2}' | sort >"$sofar"
  keys_on "$ns" my-redis-replica-2 w "$present"
  [ "$(comm -23 "$sofar" "$present" | wc -l)" -eq 0 ] || fail 'the new replica lacks acknowledged keys'

  # Put the master on my-redis-replica-2: the others refuse promotion, then the master pod goes.
  local p others=()
  for p in my-redis-master-0 my-redis-replica-0 my-redis-replica-1; do
    if [ "$p" != "$master" ]; then others+=("$p"); fi
  done
  for p in "${others[@]}"; do rcli "$ns" "$p" CONFIG SET replica-priority 0 >/dev/null; done
  sleep 0.6 # the sidecars probe every 100 ms (INFO + CONFIG GET): let them see the priorities
  kubectl delete pod -n "$ns" "$master" --wait=false >/dev/null
  wait_for "$BOUND_FAILOVER" 'my-redis-replica-2 as the master' master_is "$ns" "$NAME" my-redis-replica-2
  wait_for "$BOUND_REJOIN" "$master back as a replica" all_linked "$ns" "$NAME" 4
  for p in "${others[@]}"; do rcli "$ns" "$p" CONFIG SET replica-priority 100 >/dev/null; done
  local sofar_n
  sofar_n=$(wc -l <"$sofar")
  wait_for_acks "$ns" w $((sofar_n + 200)) 'writes acknowledged by the master on replica-2'

  # 3 -> 1: replica-2 must lose the master label before the replica StatefulSet shrinks.
  kubectl get sts -n "$ns" "$NAME-replica" --watch --output-watch-events \
    -o jsonpath='{.object.metadata.resourceVersion}{" "}{.object.spec.replicas}{"\n"}' >"$stswatch" 2>/dev/null &
  BACKGROUND_PIDS+=("$!")
  local from
  from=$(($(wc -l <"$watch") + 1))
  t0=$(now_ms)
  # 3 -> 1 removes more than half of the replicas in one step: the operator holds it unless confirmed.
  kubectl annotate redis -n "$ns" "$NAME" redis.example.com/confirm-scale-down-to=1 --overwrite >/dev/null
  kubectl scale redis -n "$ns" "$NAME" --replicas=1 >/dev/null
  wait_for "$BOUND_FAILOVER" 'the master switched over off my-redis-replica-2' master_is_not "$ns" "$NAME" my-redis-replica-2
  local switched
  switched=$(master_endpoint "$ns" "$NAME")
  diag "scale to 1 -> master moved to $switched: $(($(now_ms) - t0)) ms"
  [[ $switched =~ ^my-redis-(master-0|replica-0)$ ]] || fail "the new master $switched is not a pod that stays"
  two_left() { [ "$(kubectl get sts -n "$ns" "$NAME-replica" -o jsonpath='{.spec.replicas}')" = 1 ] && [ "$(pod_names "$ns" "$NAME")" = 'my-redis-master-0 my-redis-replica-0' ] && all_linked "$ns" "$NAME" 2; }
  wait_for "$BOUND_REJOIN" 'two pods left, Ready and linked' two_left
  diag "scale to 1 -> two pods left: $(($(now_ms) - t0)) ms"
  local shrink_rv unlabel_rv
  shrink_rv=$(awk '$2 < 3 {print $1; exit}' "$stswatch")
  unlabel_rv=$(awk -v from="$from" 'NR >= from && $3 == "my-redis-replica-2" && $4 != "master" {print $2; exit}' "$watch")
  [ -n "$shrink_rv" ] || fail 'the replica StatefulSet was not seen shrinking'
  # resourceVersions are etcd revisions: one order across kinds (the API calls them opaque; every
  # conformant server we know of backs them with etcd's global revision).
  if [ -z "$unlabel_rv" ] || [ "$unlabel_rv" -ge "$shrink_rv" ]; then
    fail "the replica StatefulSet shrank (rv $shrink_rv) before my-redis-replica-2 lost the master label (rv ${unlabel_rv:-never})"
  fi
  [ -z "$(deleted_while_master "$watch" "$from")" ] || fail "the scale-down removed a pod labelled master: $(deleted_while_master "$watch" "$from")"
  kubectl get events -n "$ns" --field-selector "involvedObject.name=$NAME,reason=Switchover" -o jsonpath='{.items[*].message}' | grep -q my-redis-replica-2 ||
    fail 'no Switchover event for the scale-down'
  wait_for "$BOUND_RUNNING" 'my-redis 7.2 Ready 1 Running' row_is "$ns" "$NAME" 'my-redis 7.2 Ready 1 Running'

  local at_scale
  at_scale=$(acked_count "$ns" w)
  wait_for_acks "$ns" w $((at_scale + 100)) 'writes acknowledged after the scale-down'
  stop_writer "$ns" w
  assert_nothing_lost "$ns" w 2
  local survivor
  survivor=$(pods_table "$ns" "$NAME" | awk -F'\t' '$2 == "" && $4 == "replica" {print $1}')
  expect_eq "$(info_field "$ns" "$survivor" master_link_status)" up "$survivor's link"
  [ -z "$(two_masters "$watch")" ] || fail "two pods labelled master at once: $(two_masters "$watch" | head -n 3)"
  log "scenario 3 passed"
}

# ------------------------------------------------------------------ scenario 4

condition() { # ns name type field
  kubectl get redis -n "$1" "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].$4}" 2>/dev/null
}
condition_is() { [ "$(condition "$1" "$2" "$3" "$4")" = "$5" ]; }

# uid of every object of the Redis (children, pods, claims), sorted.
inventory() { # ns
  kubectl get statefulsets,services,configmaps,poddisruptionbudgets,pods,persistentvolumeclaims -n "$1" \
    -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort
}

scenario_4() {
  CURRENT="4: an edit past the schema that the hook refuses: InvalidSpec, nothing deleted, the pods keep serving, no hot loop; the fix restores it"
  log "scenario $CURRENT"
  local ns=e2e-invalid
  namespace_for "$ns"
  apply_design "$ns"
  start_writer "$ns" w
  wait_for_acks "$ns" w 100 '100 acknowledged writes'
  local before t0
  before=$(inventory "$ns")

  t0=$(now_ms)
  kubectl patch redis -n "$ns" "$NAME" --type merge -p '{"spec":{"nodeSelector":{"disk type":"ssd"}}}' >/dev/null
  invalid() { condition_is "$ns" "$NAME" Ready status False && condition_is "$ns" "$NAME" Ready reason InvalidSpec; }
  wait_for "$BOUND_RUNNING" 'condition Ready=False reason InvalidSpec' invalid
  local message
  message=$(condition "$ns" "$NAME" Ready message)
  diag "edit -> InvalidSpec in $(($(now_ms) - t0)) ms: $message"
  [[ $message == *"spec.nodeSelector.disk type"* ]] || fail "the message does not name the field: $message"
  expect_eq "$(condition "$ns" "$NAME" SpecValid status)" False 'SpecValid'

  # No hot loop: no status write on the Redis, no spec write on the StatefulSets, for 4 s.
  local rv0 gen0 acked0
  rv0=$(redis_field "$ns" "$NAME" .metadata.resourceVersion)
  gen0=$(kubectl get sts -n "$ns" -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{.items[*].metadata.generation}')
  acked0=$(acked_count "$ns" w)
  sleep 4
  expect_eq "$(redis_field "$ns" "$NAME" .metadata.resourceVersion)" "$rv0" 'no status writes while the spec is invalid'
  expect_eq "$(kubectl get sts -n "$ns" -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{.items[*].metadata.generation}')" "$gen0" 'no child writes while the spec is invalid'
  diag "over 4 s with the invalid spec: $(($(acked_count "$ns" w) - acked0)) writes acknowledged"

  expect_eq "$(inventory "$ns")" "$before" 'every child, pod and claim is still there, same uid'
  local sts
  for sts in "$NAME-master" "$NAME-replica"; do
    expect_eq "$(kubectl get sts -n "$ns" "$sts" -o jsonpath='{.spec.template.spec.nodeSelector}')" '' "$sts did not get the refused nodeSelector"
  done
  [ $(($(acked_count "$ns" w) - acked0)) -gt 50 ] || fail 'writes stopped being acknowledged through the master Service'
  expect 'all three pods Ready and linked' all_linked "$ns" "$NAME" 3
  expect_eq "$(master_endpoint "$ns" "$NAME")" my-redis-master-0 'the master'

  # The fix: remove the key; valid and Running again, nothing replaced.
  kubectl patch redis -n "$ns" "$NAME" --type merge -p '{"spec":{"nodeSelector":{"disk type":null}}}' >/dev/null
  fixed() { condition_is "$ns" "$NAME" SpecValid status True && row_is "$ns" "$NAME" "$RUNNING_ROW" && condition_is "$ns" "$NAME" Ready status True; }
  wait_for "$BOUND_RUNNING" 'the fixed spec: SpecValid, Ready, Running' fixed
  expect_eq "$(inventory "$ns")" "$before" 'the fix replaced nothing either'

  # A name too long for its pods' labels: refused as a whole, nothing created for it.
  local long
  long="r$(printf 'x%.0s' $(seq 1 44))"
  example_in "$ns" | sed "s/^  name: $NAME\$/  name: $long/" | kubectl apply -f - >/dev/null
  wait_for "$BOUND_RUNNING" "InvalidSpec for $long" condition_is "$ns" "$long" Ready reason InvalidSpec
  [[ $(condition "$ns" "$long" Ready message) == *metadata.name* ]] || fail "the message does not name metadata.name"
  expect_eq "$(kubectl get sts -n "$ns" -l "app.kubernetes.io/instance=$long" -o name)" '' 'no StatefulSet for the refused Redis'
  diag "${#long}-character name: phase $(redis_field "$ns" "$long" .status.phase); $(condition "$ns" "$long" Ready message)"
  local lrv
  lrv=$(redis_field "$ns" "$long" .metadata.resourceVersion)
  sleep 2
  expect_eq "$(redis_field "$ns" "$long" .metadata.resourceVersion)" "$lrv" 'no hot loop for the refused Redis'

  stop_writer "$ns" w
  expect 'all three pods Ready and linked at the end' all_linked "$ns" "$NAME" 3
  expect_eq "$(inventory "$ns")" "$before" 'at the end, still every child, pod and claim of the start (no rollout either)'
  log "scenario 4 passed"
}

# ------------------------------------------------------------------ scenario 5

owned_by() { # ns name: children, pods and Secrets of that Redis
  kubectl get statefulsets,services,configmaps,poddisruptionbudgets,pods,secrets -n "$1" -o name | grep -E "/$2-" || true
}

up_with_data() { # ns name
  local ns=$1 name=$2 out
  up() { row_is "$ns" "$name" "$name 7.2 Ready 2 Running" && [ "$(redis_field "$ns" "$name" .status.readyReplicas)" = 2 ]; }
  wait_for "$BOUND_ALL_READY" "$name Running with two Ready replicas" up
  out=$(for i in $(seq 0 49); do printf 'SET k%d v%d\n' "$i" "$i"; done | { cat; echo 'WAIT 2 10000'; } | rcli_service "$ns" "$name-replica-0" "$name-master" | tr -d '\r' | tail -n 1)
  [ "$out" -ge 2 ] || fail "$name's replicas did not catch up (WAIT answered $out)"
}

scenario_5() {
  CURRENT="5: deleting a Redis follows its PVC policy (Retain keeps the volumes and their data, Delete removes them) and releases the finalizer"
  log "scenario $CURRENT"
  local ns=e2e-delete name
  namespace_for "$ns"
  example_in "$ns" | kubectl apply -f - >/dev/null
  example_in "$ns" | sed -e "s/^  name: $NAME\$/  name: doomed/" -e 's/^    size: "10Gi"$/    size: "10Gi"\n    whenDeleted: Delete/' | kubectl apply -f - >/dev/null
  expect_eq "$(redis_field "$ns" doomed .spec.persistence.whenDeleted)" Delete 'doomed says Delete'
  expect_eq "$(redis_field "$ns" "$NAME" .spec.persistence.whenDeleted)" Retain 'the schema default'
  up_with_data "$ns" "$NAME"
  up_with_data "$ns" doomed
  for name in "$NAME" doomed; do
    expect "$name carries the finalizer" sh -c "kubectl get redis -n $ns $name -o jsonpath='{.metadata.finalizers}' | grep -q metacontroller.io/compositecontroller-redis-operator"
    expect_eq "$(kubectl get pvc -n "$ns" -l "app.kubernetes.io/instance=$name" -o name | wc -l | tr -d ' ')" 3 "$name has three claims"
    local pod
    for pod in $(pod_names "$ns" "$name"); do
      [ -n "$(data_files "$ns" "$pod")" ] || fail "expected: $pod's volume holds data files"
    done
  done

  local t0
  t0=$(now_ms)
  kubectl delete redis -n "$ns" "$NAME" doomed --wait=false >/dev/null
  # doomed (Delete) is held by the finalizer while its volumes go; my-redis (Retain) has nothing to
  # wait for, and the real Metacontroller releases it within milliseconds: held or already gone.
  expect "doomed is being deleted, held by the finalizer" sh -c "kubectl get redis -n $ns doomed -o jsonpath='{.metadata.deletionTimestamp}' | grep -q ."
  # One read: with two (exists? then its deletionTimestamp), a release between them read as neither.
  deleting_or_gone() {
    local out
    out=$(kubectl get redis -n "$1" "$2" -o jsonpath='{.metadata.deletionTimestamp}' 2>&1) || { grep -q NotFound <<<"$out"; return; }
    [ -n "$out" ]
  }
  expect "$NAME is being deleted or already released" deleting_or_gone "$ns" "$NAME"
  gone() { ! kubectl get redis -n "$ns" "$1" >/dev/null 2>&1; }
  wait_for "$BOUND_REJOIN" "$NAME gone (finalizer released)" gone "$NAME"
  diag "delete -> finalizer released: Retain $(($(now_ms) - t0)) ms"
  wait_for $((BOUND_REJOIN * 2)) 'doomed gone (finalizer released)' gone doomed
  diag "delete -> finalizer released: Delete $(($(now_ms) - t0)) ms"
  nothing_left() { [ -z "$(owned_by "$ns" "$NAME")" ] && [ -z "$(owned_by "$ns" doomed)" ]; }
  wait_for "$BOUND_REJOIN" 'children, pods and Secrets gone' nothing_left

  # Retain: the claims stay, owned by nothing, not deleting.
  expect_eq "$(kubectl get pvc -n "$ns" -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | paste -sd' ' -)" \
    'data-my-redis-master-0 data-my-redis-replica-0 data-my-redis-replica-1' 'retained claims'
  expect_eq "$(kubectl get pvc -n "$ns" -l "app.kubernetes.io/instance=$NAME" -o jsonpath='{.items[*].metadata.ownerReferences}{.items[*].metadata.deletionTimestamp}')" '' 'retained claims are owned by nothing and not deleting'
  # Delete: the claims go.
  no_claims() { [ -z "$(kubectl get pvc -n "$ns" -l app.kubernetes.io/instance=doomed -o name)" ]; }
  wait_for "$BOUND_REJOIN" "doomed's claims gone" no_claims

  # The retained data comes back with the same Redis applied again.
  example_in "$ns" | kubectl apply -f - >/dev/null
  again() { row_is "$ns" "$NAME" "$RUNNING_ROW" && master_endpoint "$ns" "$NAME"; }
  wait_for $((BOUND_RUNNING * 2)) 'my-redis Running again' again
  local master
  master=$(master_endpoint "$ns" "$NAME")
  expect_eq "$(rcli "$ns" "$master" GET k49 | tr -d '\r')" v49 'data written before the delete is back'
  expect_eq "$(rcli "$ns" "$master" DBSIZE | tr -d '\r')" 50 'DBSIZE'
  log "scenario 5 passed"
}

# ------------------------------------------------------------------ main

install
for s in $SCENARIOS; do
  case "$s" in
    1) scenario_1 ;;
    2) scenario_2 ;;
    3) scenario_3 ;;
    4) scenario_4 ;;
    5) scenario_5 ;;
    *) fail "unknown scenario $s (1 to 5)" ;;
  esac
done
CURRENT='finished'
log "all scenarios passed: $SCENARIOS"
