#!/usr/bin/env bash
# Prepare a Linux host for ringlog's thread-per-core shards: show the CPU topology, set the
# cpufreq governor to performance, move NIC and NVMe IRQs off the shard cores, and print the
# `ringlog serve --cores ... --shards ...` line. Dry run unless --apply. See --help.
set -euo pipefail

PROG=${0##*/}
SYS=${PIN_CORES_SYSFS:-/sys}
PROC=${PIN_CORES_PROCFS:-/proc}
CPU_DIR=$SYS/devices/system/cpu

usage() {
  cat <<EOF
Usage: scripts/$PROG [OPTIONS]

Prepares this host for ringlog (one shard thread pinned per core) and prints the exact
'ringlog serve' line to use. Without --apply it changes nothing: every change it would make
is printed as the command it would run.

Steps:
  1. Shows the CPU topology (sockets, NUMA nodes, physical cores, SMT siblings; from lscpu
     and $CPU_DIR) and the cpufreq governor of every CPU.
  2. Sets the governor to 'performance' on every cpufreq policy that offers it. Skipped,
     with the reason, where cpufreq is absent (typical in VMs) or 'performance' is not offered.
  3. Moves the IRQs of the NVMe devices (nvme* in /proc/interrupts) and of the NIC(s) off the
     shard cores, by writing the housekeeping cores to /proc/irq/N/smp_affinity_list.
     If irqbalance is running it would undo this: the script says so and prints how to stop
     it, and stops it only with --apply --stop-irqbalance.
  4. Prints 'ringlog serve --cores LIST --shards N --data-dir DIR' and, with --bench-cores,
     the 'taskset -c LIST ringlog-bench writes ...' line for the benchmark client.

Cores ("CPUs" below are the online logical CPUs, SMT siblings counted separately):
  shard cores         run one ringlog shard each. Default: every CPU except CPU 0 when there
                      are 4 or more CPUs; every CPU when there are fewer (IRQ moves are then
                      skipped: there is no core left to move them to).
  bench cores         reserved for the benchmark client (--bench-cores); never shard cores.
  housekeeping cores  every other CPU (by default CPU 0): IRQs and the rest of the system.
                      If there are none but bench cores were given, IRQs go to the bench cores.

Options:
  --shard-cores LIST   CPUs for the shards, e.g. 1-7 or 2,4,6-9 (overrides the default).
  --bench-cores LIST   CPUs to reserve for the benchmark client; they are removed from the
                       default shard cores and must not overlap --shard-cores.
  --nic IFACE          NIC whose IRQs to move (repeatable, or comma-separated). Default: every
                       interface except lo that has a device (/sys/class/net/*/device).
  --data-dir DIR       Data directory to put in the printed 'ringlog serve' line
                       (default: the placeholder DATA_DIR).
  --apply              Make the changes (needs root). Without it: dry run.
  --stop-irqbalance    With --apply: stop irqbalance if it is running (systemctl stop, or kill
                       by pid when it is not a systemd service). Ignored in a dry run, which
                       prints the command instead.
  -h, --help           Show this help.

Notes:
  - Changes last until reboot (sysfs/procfs). Run it again after boot, or make them
    persistent (irqbalance banned CPUs, a cpufreq unit, isolcpus=managed_irq,... on the
    kernel command line).
  - NVMe I/O-queue IRQs are usually kernel-managed: the kernel refuses new affinity
    (write error EIO). They are reported as kept, not as failures. With one queue per CPU
    each shard's completions arrive on its own core anyway.
  - Safe without NVMe, cpufreq or a physical NIC (e.g. a VM): it says what it skipped.

Exit status: 0 on success (including steps skipped), 1 if --apply is used without root or a
change failed, 2 on a usage error.

Environment (for testing on a fake tree): PIN_CORES_SYSFS (default /sys) and
PIN_CORES_PROCFS (default /proc).

Examples:
  scripts/$PROG                                  # dry run with the defaults
  scripts/$PROG --bench-cores 6-7 --nic eth0     # reserve 6-7 for ringlog-bench
  sudo scripts/$PROG --apply --stop-irqbalance --data-dir /var/lib/ringlog
EOF
}

die_usage() {
  printf '%s: %s\n' "$PROG" "$1" >&2
  printf "Try '%s --help'.\n" "$PROG" >&2
  exit 2
}

# ---------- CPU list helpers: a "set" is a space-separated, sorted list of CPU numbers ----------

# expand_list "0-2,5" -> "0 1 2 5"; returns 1 on bad syntax.
expand_list() {
  local list=$1 part lo hi i out=()
  [[ $list =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || return 1
  local IFS=,
  for part in $list; do
    if [[ $part == *-* ]]; then
      lo=$((10#${part%-*})) hi=$((10#${part#*-}))
      ((lo <= hi)) || return 1
      for ((i = lo; i <= hi; i++)); do out+=("$i"); done
    else
      out+=("$((10#$part))")
    fi
  done
  printf '%s\n' "${out[@]}" | sort -n -u | tr '\n' ' ' | sed 's/ $//'
}

# compress_list "5 0 1 2" -> "0-2,5" (any order, duplicates allowed)
compress_list() {
  local cpu start=-1 prev=-1 text="" sorted
  sorted=$(tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n -u | tr '\n' ' ')
  for cpu in $sorted; do
    if ((start < 0)); then
      start=$cpu
    elif ((cpu != prev + 1)); then
      text+="${text:+,}$(range_text "$start" "$prev")"
      start=$cpu
    fi
    prev=$cpu
  done
  ((start < 0)) || text+="${text:+,}$(range_text "$start" "$prev")"
  printf '%s' "$text"
}

range_text() {
  if (($1 == $2)); then printf '%s' "$1"; else printf '%s-%s' "$1" "$2"; fi
}

in_set() { # in_set CPU "SET"
  case " $2 " in *" $1 "*) return 0 ;; *) return 1 ;; esac
}

set_minus() { # set_minus "A" "B" -> A \ B
  local cpu out=()
  for cpu in $1; do in_set "$cpu" "$2" || out+=("$cpu"); done
  printf '%s' "${out[*]:-}"
}

set_and() { # set_and "A" "B" -> A ∩ B
  local cpu out=()
  for cpu in $1; do in_set "$cpu" "$2" && out+=("$cpu"); done
  printf '%s' "${out[*]:-}"
}

numa_of() { # NUMA node of a device directory ("n/a" when the firmware gives none)
  local node
  node=$(read_file "$1/numa_node" "-1")
  if [[ $node == -1 ]]; then printf 'n/a'; else printf '%s' "$node"; fi
}

driver_of() { # driver name of a device directory, or "?"
  local link
  link=$(readlink -f "$1/driver" 2>/dev/null) || link=""
  if [[ -n $link && -e $link ]]; then printf '%s' "${link##*/}"; else printf '?'; fi
}

count_set() { # number of CPUs in a set
  local -a a
  read -r -a a <<<"$1"
  printf '%s' "${#a[@]}"
}

read_file() { # read_file PATH [DEFAULT]: first line of a file, or DEFAULT
  local line
  if [[ -r $1 ]] && IFS= read -r line <"$1" 2>/dev/null; then
    printf '%s' "$line"
  else
    printf '%s' "${2:-}"
  fi
}

# ---------- options ----------

original_args=("$@")
apply=0 stop_irqbalance=0 shard_arg="" bench_arg="" data_dir=DATA_DIR nics=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --apply) apply=1 ;;
    --stop-irqbalance) stop_irqbalance=1 ;;
    --shard-cores | --bench-cores | --nic | --data-dir)
      if (($# < 2)) || [[ -z $2 ]]; then die_usage "$1 needs a value"; fi
      case $1 in
        --shard-cores) shard_arg=$2 ;;
        --bench-cores) bench_arg=$2 ;;
        --data-dir) data_dir=$2 ;;
        --nic) IFS=, read -r -a more <<<"$2"; nics+=("${more[@]}") ;;
      esac
      shift ;;
    --shard-cores=* | --bench-cores=* | --nic=* | --data-dir=*)
      set -- "${1%%=*}" "${1#*=}" "${@:2}"
      continue ;;
    *) die_usage "unknown option: $1" ;;
  esac
  shift
done

for nic in "${nics[@]}"; do
  [[ -e $SYS/class/net/$nic ]] || die_usage "--nic $nic: no such interface in $SYS/class/net"
done

is_root=0
[[ $(id -u) -eq 0 ]] && is_root=1
if ((apply && !is_root)); then
  printf '%s: --apply needs root (it writes to %s and /proc/irq).\n' "$PROG" "$CPU_DIR" >&2
  printf 'Run: sudo %s\n' "$0${original_args[*]:+ ${original_args[*]}}" >&2
  printf 'Or run without --apply to see what would change.\n' >&2
  exit 1
fi

# ---------- CPUs and roles ----------

online_raw=$(read_file "$CPU_DIR/online")
[[ -n $online_raw ]] || online_raw=0-$(($(getconf _NPROCESSORS_ONLN) - 1))
online=$(expand_list "$online_raw") || { printf '%s: cannot parse %s/online: %s\n' "$PROG" "$CPU_DIR" "$online_raw" >&2; exit 1; }
ncpu=$(count_set "$online")

parse_cores() { # parse_cores OPTION LIST -> set, or usage error
  local set bad
  set=$(expand_list "$2") || die_usage "$1: not a CPU list: '$2' (use e.g. 1-7 or 2,4,6-9)"
  bad=$(set_minus "$set" "$online")
  [[ -z $bad ]] || die_usage "$1: CPU(s) $(compress_list "$bad") not online (online: $(compress_list "$online"))"
  printf '%s' "$set"
}

bench=""
[[ -z $bench_arg ]] || bench=$(parse_cores --bench-cores "$bench_arg")
default_note=""
if [[ -n $shard_arg ]]; then
  shards=$(parse_cores --shard-cores "$shard_arg")
  overlap=$(set_and "$shards" "$bench")
  [[ -z $overlap ]] || die_usage "--shard-cores and --bench-cores overlap on CPU(s) $(compress_list "$overlap")"
  shard_source="--shard-cores"
elif ((ncpu >= 4)); then
  first=${online%% *}
  shards=$(set_minus "$(set_minus "$online" "$first")" "$bench")
  shard_source="default: every CPU except CPU $first${bench:+ and the bench cores}"
else
  shards=$(set_minus "$online" "$bench")
  shard_source="default: every CPU${bench:+ except the bench cores} (fewer than 4 CPUs)"
  [[ -n $bench ]] || default_note="only $ncpu CPUs: every CPU runs a shard, none is left for IRQs"
fi
[[ -n $shards ]] || die_usage "no shard cores left (online: $(compress_list "$online"), bench: $(compress_list "$bench"))"
housekeeping=$(set_minus "$(set_minus "$online" "$shards")" "$bench")
irq_target=$housekeeping
irq_target_note="housekeeping cores"
if [[ -z $irq_target && -n $bench ]]; then
  irq_target=$bench
  irq_target_note="the bench cores, as there are no housekeeping cores"
fi

# ---------- output helpers ----------

failures=0
section() { printf '\n== %s ==\n' "$1"; }
note() { printf '  %s\n' "$*"; }

# change DESCRIPTION FILE VALUE: write VALUE to FILE (--apply) or print the command (dry run).
# Returns 0 on success/dry run, 1 on failure; the write error text is left in $change_error.
change_error=""
change() {
  local what=$1 file=$2 value=$3
  change_error=""
  if ((!apply)); then
    printf '  would run: echo %s > %s   # %s\n' "$value" "$file" "$what"
    return 0
  fi
  printf '  run: echo %s > %s   # %s\n' "$value" "$file" "$what"
  if ! change_error=$({ printf '%s\n' "$value" >"$file"; } 2>&1); then
    change_error=${change_error##*: }
    return 1
  fi
  return 0
}

role_of() {
  if in_set "$1" "$shards"; then printf 'shard'
  elif in_set "$1" "$bench"; then printf 'bench'
  else printf 'housekeeping'; fi
}

# ---------- 1. topology ----------

if ((apply)); then
  printf 'pin-cores: APPLYING changes (running as root).\n'
else
  printf 'pin-cores: DRY RUN, nothing is changed. Re-run with --apply%s to make the changes below.\n' \
    "$( ((is_root)) || printf ' (as root: sudo)')"
fi

section "CPU topology"
if [[ $SYS == /sys ]] && command -v lscpu >/dev/null 2>&1; then
  lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|On-line CPU|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node|Hypervisor vendor)' |
    sed 's/^/  /' || true
fi

declare -A cpu_core cpu_pkg cpu_node cpu_sib cpu_gov cpu_policy
packages="" sibling_groups="" nodes=""
for cpu in $online; do
  d=$CPU_DIR/cpu$cpu
  cpu_core[$cpu]=$(read_file "$d/topology/core_id" "?")
  cpu_pkg[$cpu]=$(read_file "$d/topology/physical_package_id" "?")
  sib=$(read_file "$d/topology/thread_siblings_list" "$cpu")
  cpu_sib[$cpu]=$sib
  node="-"
  for n in "$d"/node[0-9]*; do [[ -e $n ]] && node=${n##*/node}; done
  cpu_node[$cpu]=$node
  in_set "${cpu_pkg[$cpu]}" "$packages" || packages+=" ${cpu_pkg[$cpu]}"
  in_set "$sib" "$sibling_groups" || sibling_groups+=" $sib"
  [[ $node == - ]] || in_set "$node" "$nodes" || nodes+=" $node"
  if [[ -r $d/cpufreq/scaling_governor ]]; then
    cpu_gov[$cpu]=$(read_file "$d/cpufreq/scaling_governor" "?")
    cpu_policy[$cpu]=$(readlink -f "$d/cpufreq")
  else
    cpu_gov[$cpu]="n/a"
    cpu_policy[$cpu]=""
  fi
done
smt=$(read_file "$CPU_DIR/smt/control" "unknown")
note "online CPUs: $(compress_list "$online") ($ncpu)   sockets: $(count_set "$packages")   physical cores: $(count_set "$sibling_groups")   NUMA nodes: $(count_set "$nodes")   SMT: $smt"
for n in $nodes; do
  note "NUMA node $n CPUs: $(read_file "$SYS/devices/system/node/node$n/cpulist" "?")"
done
printf '  %-5s %-6s %-5s %-5s %-10s %-12s %s\n' CPU SOCKET NODE CORE SIBLINGS GOVERNOR ROLE
for cpu in $online; do
  printf '  %-5s %-6s %-5s %-5s %-10s %-12s %s\n' "$cpu" "${cpu_pkg[$cpu]}" "${cpu_node[$cpu]}" \
    "${cpu_core[$cpu]}" "${cpu_sib[$cpu]}" "${cpu_gov[$cpu]}" "$(role_of "$cpu")"
done

section "Core roles"
nshards=$(count_set "$shards")
note "shard cores:        $(compress_list "$shards") ($nshards shard$( ((nshards == 1)) || printf s); $shard_source)"
if [[ -n $bench ]]; then bench_text=$(compress_list "$bench"); else bench_text="none (--bench-cores not given)"; fi
note "bench cores:        $bench_text"
if [[ -n $housekeeping ]]; then hk_text=$(compress_list "$housekeeping"); else hk_text="none"; fi
note "housekeeping cores: $hk_text"
[[ -z $default_note ]] || note "note: $default_note"
# SMT: two shards on one physical core, or a shard sharing a core with IRQs/bench.
shared_shards="" shared_other="" one_per_core=""
for sib in $sibling_groups; do
  group=$(expand_list "$sib" 2>/dev/null) || continue
  in_group=$(set_and "$group" "$shards")
  [[ -n $in_group ]] || continue
  one_per_core+=" ${in_group%% *}"
  (($(count_set "$in_group") > 1)) && shared_shards+=" $in_group"
  [[ -z $(set_minus "$group" "$shards") ]] || shared_other+=" $in_group"
done
if [[ -n $shared_shards ]]; then
  note "note: SMT siblings both run shards (CPUs $(compress_list "$shared_shards")); for one shard per physical core use --shard-cores $(compress_list "$one_per_core")"
fi
if [[ -n $shared_other ]]; then
  note "note: shard CPU(s) $(compress_list "$shared_other") share a physical core (SMT) with a housekeeping or bench CPU"
fi
if (($(count_set "$nodes") > 1)); then
  shard_nodes=""
  for cpu in $shards; do in_set "${cpu_node[$cpu]}" "$shard_nodes" || shard_nodes+=" ${cpu_node[$cpu]}"; done
  (($(count_set "$shard_nodes") <= 1)) || note "note: shards span NUMA nodes $(compress_list "$shard_nodes"); the NVMe/NIC NUMA nodes are listed below"
fi

# ---------- 2. governor ----------

section "CPU frequency governor"
if [[ ! -d $CPU_DIR/cpufreq ]] || [[ -z $(for cpu in $online; do [[ -n ${cpu_policy[$cpu]} ]] && printf x; done) ]]; then
  note "skipped: no cpufreq on this machine (no $CPU_DIR/cpu*/cpufreq; usual in a VM, or no cpufreq driver loaded). Frequency is left to the hypervisor/firmware."
else
  seen_policies=""
  for cpu in $online; do
    policy=${cpu_policy[$cpu]}
    if [[ -z $policy ]]; then
      note "CPU $cpu: skipped, no cpufreq"
      continue
    fi
    in_set "$policy" "$seen_policies" && continue
    seen_policies+=" $policy"
    cpus=$(read_file "$policy/affected_cpus" "$cpu")
    gov=$(read_file "$policy/scaling_governor" "?")
    avail=$(read_file "$policy/scaling_available_governors" "")
    label="${policy##*/} (CPUs $cpus)"
    if [[ $gov == performance ]]; then
      note "$label: already performance"
    elif ! in_set performance "$avail"; then
      note "$label: skipped, governor '$gov'; 'performance' not offered (available: ${avail:-unknown})"
    elif ((apply)) && [[ ! -w $policy/scaling_governor ]]; then
      note "$label: skipped, $policy/scaling_governor is not writable (governor '$gov')"
    elif change "$label: $gov -> performance" "$policy/scaling_governor" performance; then
      :
    else
      note "  FAILED: $change_error"
      failures=$((failures + 1))
    fi
  done
fi

# ---------- 3. IRQs ----------

section "irqbalance"
irqb_pids=""
if command -v pgrep >/dev/null 2>&1; then
  irqb_pids=$(pgrep -x irqbalance | tr '\n' ' ' || true)
else
  for c in "$PROC"/[0-9]*/comm; do
    [[ $(read_file "$c") == irqbalance ]] && { p=${c%/comm}; irqb_pids+="${p##*/} "; }
  done
fi
irqb_pids=${irqb_pids% }
irqb_systemd=0
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet irqbalance 2>/dev/null; then
  irqb_systemd=1
fi
if [[ -z $irqb_pids ]] && ((!irqb_systemd)); then
  note "not running: nothing will undo the IRQ affinity below."
else
  if ((irqb_systemd)); then stop_cmd="systemctl stop irqbalance"; else stop_cmd="kill $irqb_pids"; fi
  note "irqbalance is RUNNING (pid ${irqb_pids:-?}): it re-spreads IRQs every few seconds and would undo the moves below."
  note "stop it:             $stop_cmd"
  note "or keep it off the shard cores: IRQBALANCE_BANNED_CPULIST=$(compress_list "$shards") in /etc/default/irqbalance (irqbalance >= 1.8), then restart it"
  if ((!apply)); then
    if ((stop_irqbalance)); then note "would run: $stop_cmd"; else note "not stopped (with --apply --stop-irqbalance it would run: $stop_cmd)"; fi
  elif ((stop_irqbalance)); then
    note "run: $stop_cmd"
    # shellcheck disable=SC2086 # $stop_cmd is a command line built above
    if $stop_cmd; then note "stopped (it restarts at boot unless disabled: systemctl disable irqbalance)"; else note "FAILED to stop irqbalance"; failures=$((failures + 1)); fi
  else
    note "left running (pass --stop-irqbalance to stop it): the IRQ moves below may not last."
  fi
fi

section "IRQ affinity (NVMe and NIC)"

# IRQ number -> name, from /proc/interrupts (the last column; the action dirs in /proc/irq/N/
# name every handler when an IRQ is shared).
declare -A irq_name
if [[ -r $PROC/interrupts ]]; then
  while read -r irq name; do irq_name[$irq]=$name; done < <(
    awk 'NR > 1 && $1 ~ /^[0-9]+:$/ { sub(":", "", $1); print $1, $NF }' "$PROC/interrupts"
  )
fi
irq_names() { # every handler name of IRQ $1
  local d names=""
  for d in "$PROC/irq/$1"/*/; do [[ -d $d ]] && { d=${d%/}; names+="${names:+,}${d##*/}"; }; done
  printf '%s' "${names:-${irq_name[$1]:-?}}"
}

declare -A irq_dev # IRQ -> device label, e.g. "nvme0" or "NIC eth0"
irq_order=()
add_irq() { # add_irq IRQ LABEL
  [[ -n ${irq_dev[$1]:-} ]] && return 0
  irq_dev[$1]=$2
  irq_order+=("$1")
}
device_irqs() { # IRQs of a device directory: its MSI/MSI-X vectors, else its legacy IRQ
  local dir=$1 f irq
  if [[ -d $dir/msi_irqs ]]; then
    for f in "$dir"/msi_irqs/[0-9]*; do [[ -e $f ]] && printf '%s\n' "${f##*/}"; done
  else
    irq=$(read_file "$dir/irq" 0)
    [[ $irq == 0 ]] || printf '%s\n' "$irq"
  fi
}

# NVMe: handlers named nvme<N>q<M>, and the vectors of every /sys/class/nvme/*/device.
nvme_found=0
for irq in "${!irq_name[@]}"; do
  if [[ ,$(irq_names "$irq") =~ ,(nvme[0-9]+)q[0-9]+ ]]; then
    add_irq "$irq" "${BASH_REMATCH[1]}"
    nvme_found=1
  fi
done
for ctrl in "$SYS"/class/nvme/nvme[0-9]*; do
  [[ -e $ctrl/device ]] || continue
  nvme_found=1
  dev=$(readlink -f "$ctrl/device")
  note "${ctrl##*/}: $(read_file "$ctrl/model" "NVMe" | sed 's/ *$//') at ${dev##*/}, NUMA node $(numa_of "$dev"), local CPUs $(read_file "$dev/local_cpulist" "?")"
  while read -r irq; do [[ -n $irq ]] && add_irq "$irq" "${ctrl##*/}"; done < <(device_irqs "$dev")
done
((nvme_found)) || note "no NVMe devices (no nvme* in $PROC/interrupts, no $SYS/class/nvme): nothing to move for NVMe."

# NICs: --nic, or every interface but lo with a device.
if ((${#nics[@]} == 0)); then
  for n in "$SYS"/class/net/*; do
    [[ ${n##*/} != lo && -e $n/device ]] && nics+=("${n##*/}")
  done
  nic_source="every interface with a device"
else
  nic_source="--nic"
fi
if ((${#nics[@]} == 0)); then
  note "no NIC with a device in $SYS/class/net (only virtual interfaces): nothing to move for the NIC."
fi
for nic in "${nics[@]}"; do
  if [[ ! -e $SYS/class/net/$nic/device ]]; then
    note "NIC $nic: virtual interface (no device), no IRQs of its own: skipped"
    continue
  fi
  dev=$(readlink -f "$SYS/class/net/$nic/device")
  # A virtio-net device has its vectors on the PCI function above it.
  if [[ ! -d $dev/msi_irqs && ! -e $dev/irq && $(readlink -f "$dev/subsystem") == */virtio ]]; then
    dev=${dev%/*}
  fi
  found=0
  while read -r irq; do
    [[ -n $irq ]] || continue
    add_irq "$irq" "NIC $nic"
    found=1
  done < <(device_irqs "$dev")
  # Drivers that name their vectors after the interface (eth0-TxRx-0, ens5f0-rx-1, ...).
  for irq in "${!irq_name[@]}"; do
    if [[ ,$(irq_names "$irq"), =~ ,${nic}[-@:_,] ]]; then add_irq "$irq" "NIC $nic"; found=1; fi
  done
  note "NIC $nic ($nic_source): device ${dev##*/}, driver $(driver_of "$SYS/class/net/$nic/device"), NUMA node $(numa_of "$dev")$( ((found)) || printf ', no IRQs found')"
done

if ((${#irq_order[@]} == 0)); then
  note "no NVMe or NIC IRQs found: nothing to move."
elif [[ -z $irq_target ]]; then
  note "skipped: every online CPU is a shard core, so there is no other core to move these IRQs to."
  note "(with 4 or more CPUs the default keeps CPU 0 for IRQs; or pass --shard-cores / --bench-cores)"
  for irq in "${irq_order[@]}"; do
    note "IRQ $irq ($(irq_names "$irq"), ${irq_dev[$irq]}): affinity $(read_file "$PROC/irq/$irq/smp_affinity_list" "?"), left as is"
  done
else
  target_list=$(compress_list "$irq_target")
  note "target: CPU(s) $target_list ($irq_target_note); only IRQs whose affinity includes a shard core are changed"
  managed=0 moved=0 kept=0
  mapfile -t irq_sorted < <(printf '%s\n' "${irq_order[@]}" | sort -n)
  for irq in "${irq_sorted[@]}"; do
    f=$PROC/irq/$irq/smp_affinity_list
    label="IRQ $irq ($(irq_names "$irq"), ${irq_dev[$irq]})"
    if [[ ! -e $f ]]; then
      note "$label: skipped, no $f"
      continue
    fi
    cur=$(read_file "$f" "?")
    eff=$(read_file "$PROC/irq/$irq/effective_affinity_list" "")
    cur_set=$(expand_list "$cur" 2>/dev/null) || cur_set=""
    if [[ -n $cur_set && -z $(set_and "$cur_set" "$shards") ]]; then
      note "$label: affinity $cur already off the shard cores"
      kept=$((kept + 1))
      continue
    fi
    if change "$label: $cur${eff:+ (effective $eff)} -> $target_list" "$f" "$target_list"; then
      moved=$((moved + 1))
    elif [[ $change_error == *"Input/output error"* ]]; then
      note "  kept: kernel-managed IRQ (the kernel sets its affinity; per-queue NVMe vectors are like this)"
      managed=$((managed + 1))
    else
      note "  FAILED: $change_error"
      failures=$((failures + 1))
    fi
  done
  if ((apply)); then
    note "moved $moved, already off the shard cores $kept, kernel-managed (kept) $managed"
  elif [[ -n $(for irq in "${irq_order[@]}"; do [[ ${irq_dev[$irq]} == nvme* ]] && printf x; done) ]]; then
    note "note: NVMe I/O-queue vectors (nvmeNqM, M >= 1) are usually kernel-managed; --apply then reports them as kept."
  fi
fi

# ---------- 4. the command line ----------

section "Run ringlog with"
shard_list=$(compress_list "$shards")
printf '  ringlog serve --cores %s --shards %s --data-dir %s\n' "$shard_list" "$nshards" "$data_dir"
if [[ -n $bench ]]; then
  printf '  taskset -c %s ringlog-bench writes ...\n' "$(compress_list "$bench")"
  note "(replace ... with the writes options; the bench client stays off the shard cores)"
fi
[[ $data_dir != DATA_DIR ]] || note "(DATA_DIR: your data directory; pass --data-dir DIR to fill it in)"

if ((failures)); then
  printf '\n%s: %s change(s) FAILED (see above).\n' "$PROG" "$failures" >&2
  exit 1
fi
if ((!apply)); then
  printf '\nDry run: nothing was changed.\n'
fi
exit 0
