#!/usr/bin/env bash
# A real ZooKeeper server for tests and CI (registration tests, a local BookKeeper client).
#
#   scripts/zk.sh deps              fetch ZooKeeper's jars from Maven Central (once, cached)
#   scripts/zk.sh start PORT DIR    run a standalone server on 127.0.0.1:PORT with its data,
#                                   config, log and pid file in DIR; returns once it answers
#   scripts/zk.sh stop DIR          stop the server started on DIR (no-op if none runs)
#
# The jars come from scripts/zookeeper/pom.xml (org.apache.zookeeper:zookeeper) through
# `mvn dependency:copy-dependencies` into ZK_CACHE_DIR (default target/zookeeper-VERSION/).
# The server runs ZooKeeperServerMain with a zoo.cfg rather than `PORT DIR` arguments: the
# arguments form binds every interface, and a test server should listen on loopback only.
# Environment: ZK_TICK_MS (default 200: sessions expire within a tick of their timeout, so
# short test sessions expire on time; the smallest session timeout is 2 ticks),
# ZK_START_TIMEOUT_S (default 60), ZK_CACHE_DIR, ZK_WATCH_PID (stop the server once that
# process exits: a test run that dies leaves no server behind).
set -euo pipefail

PROG=${0##*/}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
POM=$ROOT/scripts/zookeeper/pom.xml
VERSION=$(sed -n 's:.*<zookeeper.version>\(.*\)</zookeeper.version>.*:\1:p' "$POM")
CACHE=${ZK_CACHE_DIR:-$ROOT/target/zookeeper-$VERSION}
TICK_MS=${ZK_TICK_MS:-200}
START_TIMEOUT_S=${ZK_START_TIMEOUT_S:-60}
STOP_TIMEOUT_S=10

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

die() {
  echo "$PROG: $*" >&2
  exit 1
}

# Copies the jars once; a lock keeps concurrent tests from copying into the same directory.
deps() {
  command -v java >/dev/null || die "java not found (ZooKeeper $VERSION needs Java 8+)"
  command -v mvn >/dev/null || die "mvn not found (it fetches ZooKeeper from Maven Central)"
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ ! -f $CACHE/lib/.complete ]]; then
    rm -rf "${CACHE:?}/lib" "${CACHE:?}/lib.partial"
    # Its output only matters when it fails (even -q prints colour resets).
    if ! mvn -q -B -Dstyle.color=never -f "$POM" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$CACHE/lib.partial" >"$CACHE/mvn.log" 2>&1; then
      cat "$CACHE/mvn.log" >&2
      die "mvn could not fetch org.apache.zookeeper:zookeeper:$VERSION (log: $CACHE/mvn.log)"
    fi
    touch "$CACHE/lib.partial/.complete"
    mv "$CACHE/lib.partial" "$CACHE/lib"
  fi
  exec 9>&-
}

# True when the server on PORT answers the `srvr` four-letter word.
answers() {
  local reply
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash.
  reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && cat <&3' \
    _ "$1" 2>/dev/null) || true
  [[ $reply == *"Zookeeper version"* ]]
}

# The pid in DIR/zk.pid if that process is still our server (its command line names DIR).
running_pid() {
  local dir=$1 pid
  [[ -f $dir/zk.pid ]] || return 1
  pid=$(<"$dir/zk.pid")
  [[ -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/zoo.cfg" || return 1
  echo "$pid"
}

start() {
  local port=$1 dir=$2 pid deadline
  [[ $port =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$port'"
  deps
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  if pid=$(running_pid "$dir"); then
    die "a server started on $dir is already running (pid $pid)"
  fi
  cat >"$dir/zoo.cfg" <<EOF
dataDir=$dir/data
clientPortAddress=127.0.0.1
clientPort=$port
tickTime=$TICK_MS
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,stat,ruok,cons,dump
EOF
  nohup java -Xmx256m -XX:+UseSerialGC \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
    -Dorg.slf4j.simpleLogger.showDateTime=true \
    -cp "$CACHE/lib/*" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    >"$dir/zk.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/zk.pid"
  deadline=$((SECONDS + START_TIMEOUT_S))
  until answers "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$dir/zk.log" >&2 || true
      die "ZooKeeper on 127.0.0.1:$port exited during startup (log: $dir/zk.log)"
    fi
    if ((SECONDS >= deadline)); then
      kill "$pid" 2>/dev/null || true
      die "ZooKeeper on 127.0.0.1:$port did not answer within ${START_TIMEOUT_S}s"
    fi
    sleep 0.2
  done
  if [[ -n ${ZK_WATCH_PID:-} ]]; then
    # shellcheck disable=SC2016 # expanded by the inner bash.
    nohup bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; "$2" stop "$3"' \
      _ "$ZK_WATCH_PID" "$ROOT/scripts/$PROG" "$dir" >/dev/null 2>&1 </dev/null &
  fi
  echo "zookeeper $VERSION listening on 127.0.0.1:$port (pid $pid, dir $dir)"
}

stop() {
  local dir=$1 pid deadline
  [[ -d $dir ]] || return 0
  dir=$(cd "$dir" && pwd)
  pid=$(running_pid "$dir") || return 0
  kill "$pid" 2>/dev/null || true
  deadline=$((SECONDS + STOP_TIMEOUT_S))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  rm -f "$dir/zk.pid"
}

case ${1:-} in
deps) deps ;;
start) (($# == 3)) || usage; start "$2" "$3" ;;
stop) (($# == 2)) || usage; stop "$2" ;;
*) usage ;;
esac
