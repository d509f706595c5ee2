#!/usr/bin/env bash
# `make disk-full` (issue 14 item 4, "a full disk recovers by itself"): makes a small ext4 file
# system on a loop device, mounts it, and runs the interop scenario `disk-full` with one ringlog
# bookie whose data directory is on it: the real Java client writes ledgers until adds fail,
# the bookie must be listed under available/readonly, most ledgers are deleted, and without a
# restart free space must come back, the bookie be writable again and the kept ledgers read
# back byte for byte (interop/src/main/java/ringlog/interop/DiskFull.java). The file system is
# unmounted and the loop device detached on every exit.
# Usage: scripts/disk_full.sh RELEASE_DIR [SIZE_MIB]   (default 1024; run from anywhere)
# Env: DISK_FULL_DIR (default /tmp): where the image and run directory go (not on the image);
#      REQUIRE_LOOP=1 makes a skip (not root, no loop device) a failure;
#      INTEROP_ARGS: more -D options for the suite (e.g. -Dkeep=true).
set -euo pipefail
release=$(realpath "${1:?release dir}")
size_mib=${2:-1024}
cd "$(dirname "$0")/.."

skip() {
  echo "SKIP disk-full: $1"
  if [[ ${REQUIRE_LOOP:-0} == 1 ]]; then exit 1; fi
  exit 0
}
[[ $(id -u) == 0 ]] || skip "needs root to attach a loop device and mount it"
for tool in losetup mkfs.ext4 mount umount; do
  command -v "$tool" >/dev/null || skip "$tool not found"
done
[[ -f interop/target/classpath.txt ]] || {
  echo "disk-full: no interop/target/classpath.txt: run (cd interop && mvn -B -q compile)" >&2
  exit 1
}

run=$(mktemp -d "${DISK_FULL_DIR:-/tmp}/ringlog-disk-full.XXXXXX")
image=$run/fs.img mount_dir=$run/mnt device=''
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if mountpoint -q "$mount_dir"; then
    # Only a bookie the suite left running (it was interrupted) can hold the mount: its
    # command line names this run's unique directory, so nothing else is touched.
    for cmdline in /proc/[0-9]*/cmdline; do
      if grep -qF "$mount_dir" "$cmdline" 2>/dev/null; then
        pid=${cmdline#/proc/} pid=${pid%/cmdline}
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
    umount "$mount_dir" 2>/dev/null || { sleep 1; umount "$mount_dir" || umount -l "$mount_dir"; }
  fi
  if [[ -n $device ]]; then losetup -d "$device" || true; fi
  rm -rf "$run"
}
trap cleanup EXIT

truncate -s "${size_mib}M" "$image"
# -m 0: no blocks reserved for root, so what statvfs calls available is what the bookie (root
# here) can allocate, and the file system fills where ringlog's own reserve says it does.
mkfs.ext4 -q -m 0 "$image"
device=$(losetup -f --show "$image") || skip "no free loop device (losetup -f failed)"
mkdir -p "$mount_dir"
mount "$device" "$mount_dir"
echo "# disk-full: ${size_mib} MiB ext4 on $device at $mount_dir; $(df -h --output=size,avail \
  "$mount_dir" | tail -n 1 | xargs)"

status=0
# shellcheck disable=SC2086 # INTEROP_ARGS is a list of -D options, split on purpose.
java -cp "interop/target/classes:$(cat interop/target/classpath.txt)" -Dbookie=ringlog \
  -Dringlog.bin="$release/ringlog" -Donly=disk-full -Ddiskfull.dir="$mount_dir" \
  -Dinterop.dir="$run" ${INTEROP_ARGS:-} ringlog.interop.Main || status=$?
exit "$status"
