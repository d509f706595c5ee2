#!/usr/bin/env bash
# `make disk-pressure` (issue 33 item 3, "a bookie with reclaimable space must not turn
# read-only"): for each pace of DISK_PRESSURE_PACES, makes a fresh small ext4 file system on a
# loop device, mounts it, and runs the interop scenario `disk-churn` with one bookie whose data
# directory is on it: the real Java client writes two streams interleaved entry by entry
# (E1/W1/A1, 4 KiB entries, 32 MiB ledgers), short-lived ledgers deleted as soon as they close
# and long-lived ones of which the newest KEPT (half the file system: 46 on 3 GiB) are kept,
# until DISK_PRESSURE_GIB are acknowledged; no add may fail and the bookie never be read-only;
# the kept ledgers are read back byte for byte before and after a SIGKILL restart
# (interop/src/main/java/ringlog/interop/DiskChurn.java). The file system is unmounted and the
# loop device detached after each run and on every exit.
# Results: RESULTS/disk-pressure-<bookie>-<yyyymmdd-hhmmss>/: <pace>.json (the scenario's
# numbers and per-second series), <pace>.txt (its output), summary.md, machine.txt.
# Usage: scripts/disk_pressure.sh RELEASE_DIR [SIZE_MIB]   (default 3072; run from anywhere)
# Env: DISK_PRESSURE_GIB (10): total acknowledged GiB per run;
#      DISK_PRESSURE_PACES ("full 60"): full = OUTSTANDING adds in flight, a number = MiB/s;
#      DISK_PRESSURE_OUTSTANDING (500): the outstanding cap, at every pace;
#      DISK_PRESSURE_KEPT: long ledgers kept (default: half the file system, 32 MiB each);
#      DISK_PRESSURE_RINGLOG_ARGS: more `ringlog serve` flags ("--flag value ...", for A/B);
#      DISK_PRESSURE_WA_MAX: fail a run whose write amplification is above it (default: off);
#      BOOKIE (ringlog) or java; JAVA_TUNED=1: the Java bookie with transactional minor
#      compaction at 0.6 every 2 s (else its defaults, both with gcWaitTime=2000);
#      DISK_PRESSURE_DIR (/tmp): where the image and run directory go (not on the image);
#      DISK_PRESSURE_RESULTS (results/ in the repo);
#      REQUIRE_LOOP=1 makes a skip (not root, no loop device) a failure;
#      INTEROP_ARGS: more -D options for the suite (e.g. -Dkeep=true).
# Exit status: 1 if a ringlog run failed (a Java bookie run's FAIL is reported, not fatal).
set -euo pipefail
export LC_ALL=C
release=$(realpath "${1:?release dir}")
size_mib=${2:-3072}
cd "$(dirname "$0")/.."
root=$PWD
gib=${DISK_PRESSURE_GIB:-10}
paces=${DISK_PRESSURE_PACES:-full 60}
outstanding=${DISK_PRESSURE_OUTSTANDING:-500}
bookie=${BOOKIE:-ringlog}

die() {
  echo "disk-pressure: $*" >&2
  exit 1
}
skip() {
  echo "SKIP disk-pressure: $1"
  if [[ ${REQUIRE_LOOP:-0} == 1 ]]; then exit 1; fi
  exit 0
}
case $bookie in
  ringlog | java) ;;
  *) die "BOOKIE must be ringlog or java, not '$bookie'" ;;
esac
[[ $size_mib =~ ^[1-9][0-9]*$ ]] || die "SIZE_MIB must be a positive integer, not '$size_mib'"
[[ $gib =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "DISK_PRESSURE_GIB must be a number, not '$gib'"
[[ $outstanding =~ ^[1-9][0-9]*$ ]] || die "DISK_PRESSURE_OUTSTANDING must be a positive integer"
read -ra pace_list <<<"$paces"
((${#pace_list[@]} > 0)) || die "DISK_PRESSURE_PACES is empty"
for pace in "${pace_list[@]}"; do
  [[ $pace == full || $pace =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
    die "a pace is full or a MiB/s number, not '$pace'"
done
if [[ $bookie == ringlog ]]; then
  [[ -x $release/ringlog ]] || die "$release/ringlog missing: cargo build --release --workspace"
fi
[[ $(id -u) == 0 ]] || skip "needs root to attach a loop device and mount it"
for tool in losetup mkfs.ext4 mount umount python3; do
  command -v "$tool" >/dev/null || skip "$tool not found"
done
[[ -f interop/target/classpath.txt ]] ||
  die "no interop/target/classpath.txt: run (cd interop && mvn -B -q compile)"

label=$bookie
if [[ $bookie == java && ${JAVA_TUNED:-0} == 1 ]]; then label=java-tuned; fi
results="${DISK_PRESSURE_RESULTS:-$root/results}/disk-pressure-$label-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$results"

run='' mount_dir='' device=''
# shellcheck disable=SC2317 # run by the EXIT trap and between runs
cleanup() {
  if [[ -n $mount_dir ]] && mountpoint -q "$mount_dir"; then
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
  if [[ -n $run ]]; then rm -rf "$run"; fi
  run='' mount_dir='' device=''
}
trap cleanup EXIT

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
  echo "repo: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "bookie: $label"
  if [[ $bookie == ringlog ]]; then
    echo "ringlog: $release/ringlog ($(sha256sum "$release/ringlog" | cut -c1-16))"
    echo "ringlog extra flags: ${DISK_PRESSURE_RINGLOG_ARGS:-none}"
  fi
  echo "fs: ${size_mib} MiB ext4 -m 0 on a loop device, image under ${DISK_PRESSURE_DIR:-/tmp}"
  echo "total: ${gib} GiB per run; paces: $paces; outstanding: $outstanding"
  echo "kept: ${DISK_PRESSURE_KEPT:-half the file system}; interop args: ${INTEROP_ARGS:-none}"
} >"$results/machine.txt"

failed_ringlog=0
for pace in "${pace_list[@]}"; do
  run=$(mktemp -d "${DISK_PRESSURE_DIR:-/tmp}/ringlog-disk-pressure.XXXXXX")
  image=$run/fs.img mount_dir=$run/mnt
  truncate -s "${size_mib}M" "$image"
  # -m 0: no blocks reserved for root, so what statvfs calls available is what the bookie
  # (root here) can allocate.
  mkfs.ext4 -q -m 0 "$image"
  device=$(losetup -f --show "$image") || skip "no free loop device (losetup -f failed)"
  mkdir -p "$mount_dir"
  mount "$device" "$mount_dir"
  echo "# disk-pressure: $label pace=$pace ${gib} GiB; ${size_mib} MiB ext4 on $device at" \
    "$mount_dir; $(df -h --output=size,avail "$mount_dir" | tail -n 1 | xargs)"
  java_args=(-Dbookie="$bookie" -Dringlog.bin="$release/ringlog" -Donly=disk-churn
    -Ddiskchurn.dir="$mount_dir" -Ddiskchurn.pace="$pace" -Ddiskchurn.total.gib="$gib"
    -Ddiskchurn.outstanding="$outstanding" -Ddiskchurn.json="$results/$pace.json"
    -Dinterop.dir="$run")
  if [[ -n ${DISK_PRESSURE_KEPT:-} ]]; then java_args+=(-Ddiskchurn.kept="$DISK_PRESSURE_KEPT"); fi
  if [[ -n ${DISK_PRESSURE_RINGLOG_ARGS:-} ]]; then
    java_args+=("-Ddiskchurn.ringlog.args=$DISK_PRESSURE_RINGLOG_ARGS")
  fi
  if [[ -n ${DISK_PRESSURE_WA_MAX:-} ]]; then
    java_args+=(-Ddiskchurn.wa.max="$DISK_PRESSURE_WA_MAX")
  fi
  if [[ ${JAVA_TUNED:-0} == 1 ]]; then java_args+=(-Ddiskchurn.java.tuned=true); fi
  status=0
  # shellcheck disable=SC2086 # INTEROP_ARGS is a list of -D options, split on purpose.
  java -cp "interop/target/classes:$(cat interop/target/classpath.txt)" "${java_args[@]}" \
    ${INTEROP_ARGS:-} ringlog.interop.Main 2>&1 | tee "$results/$pace.txt" || status=$?
  if ((status != 0)) && [[ $bookie == ringlog ]]; then failed_ringlog=1; fi
  if [[ ! -s $results/$pace.json ]]; then
    echo "# disk-pressure: pace=$pace wrote no JSON (exit status $status)" | tee -a "$results/$pace.txt"
  fi
  cleanup
done

python3 - "$results" "$label" "$size_mib" "$gib" "${pace_list[@]}" <<'EOF'
import json, os, sys
results, label, size_mib, gib, paces = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows = []
for pace in paces:
    path = os.path.join(results, pace + ".json")
    if not os.path.exists(path):
        rows.append(f"| {pace} | no result (see {pace}.txt) |" + " |" * 12)
        continue
    r = json.load(open(path))
    rows.append("| {pace} | {res} | {acked:.2f} | {failed} | {err} | {s:.0f} | {mibs:.1f} | "
                "{peak} ({frac:.0%}) | {wa:.2f} | {fswa:.2f} | {slowed} | {kept} | {v1}/{v2} | {ro} |".format(
        pace=r["pace"], res="PASS" if r["pass"] else "FAIL",
        acked=r["total_bytes_acked"] / 2**30, failed=r["adds_failed"],
        err=(r["first_error"] or "").replace("|", "/")[:80], s=r["seconds"],
        mibs=r["mib_per_s"], peak=r["peak_used_mib"], frac=r["peak_used_fraction"],
        wa=r["wa"], fswa=r["fs_wa"], slowed=r["slowed_seconds"], kept=r["kept_ledgers"],
        v1=r["entries_verified"], v2=r["entries_verified_after_restart"],
        ro="yes, %.0f s in at %d MiB" % (r["readonly_first_s"], r["readonly_at_acked_mib"])
        if r["readonly_seen"] else "no"))
with open(os.path.join(results, "summary.md"), "w") as out:
    out.write(f"# disk-pressure: {label}, {size_mib} MiB ext4, {gib} GiB per run\n\n")
    out.write("Two interleaved streams (E1/W1/A1, 4 KiB entries, 32 MiB ledgers): short-lived "
              "ledgers deleted at close, the newest KEPT long-lived ones kept. wa = bookie "
              "write_bytes (/proc/PID/io) / acked bytes; fs_wa = ext4 lifetime_write_kbytes / "
              "acked (the Java bookie's journal is not on the file system); slowed = seconds "
              "below half the median second. See machine.txt and <pace>.txt.\n\n")
    out.write("| pace | result | acked GiB | adds failed | first error | s | MiB/s | peak used MiB "
              "| wa | fs_wa | slowed s | kept | entries verified before/after restart | read-only |\n")
    out.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    out.write("\n".join(rows) + "\n")
EOF
cat "$results/summary.md"
echo "# disk-pressure: results in $results"
exit "$failed_ringlog"
