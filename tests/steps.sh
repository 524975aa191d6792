#!/usr/bin/env bash
# Runs `make test`'s steps one after another, each as `$MAKE <step>`, and ends with a table of each
# step's wall time and the load average (/proc/loadavg, 1 minute) at its start and end, and the
# disk space left, printed even when a step fails (the failing step is named and the exit status
# is non-zero).
#
#   tests/steps.sh [--keep-going] STEP...
#
# A STEP is a make target, or targets joined by `+` (`a+b`): those run at the same time, each with
# its output prefixed by its name, and the next step starts when all of them have ended. A member
# of such a group may be a lane of targets joined by `,` (`a,b+c`: a then b, beside c); each target
# is timed on its own. A step that ended is passed to the later steps' makes as `-o STEP` (made
# already), as one make would run a prerequisite once. Without --keep-going (make's -k) the first
# failed step ends the run and the steps after it are listed as not run.
set -uo pipefail

make_cmd=${MAKE:-make}
keep_going=0
if [[ ${1:-} == --keep-going ]]; then keep_going=1; shift; fi
[[ $# -gt 0 ]] || { echo "usage: $0 [--keep-going] STEP..." >&2; exit 2; }

now() { date +%s.%N; }
load() { cut -d' ' -f1 /proc/loadavg; }

names=() starts=() walls=() cpus=() load_start=() load_end=() results=()
done_flags=()
failed=()
total_ticks=0
run_start=$(now)

# record NAME START END LOAD0 LOAD1 RESULT [CPU_TICKS]
record() {
  names+=("$1"); load_start+=("$4"); load_end+=("$5"); results+=("$6")
  if [[ -z $3 ]]; then starts+=(-); walls+=(-); cpus+=(-); return; fi
  starts+=("+$(fmt_time "$(awk -v a="$2" -v b="$run_start" 'BEGIN { printf "%.1f", a - b }')")")
  walls+=("$(fmt_time "$(awk -v a="$3" -v b="$2" 'BEGIN { printf "%.1f", a - b }')")")
  if [[ -n ${7:-} ]]; then
    total_ticks=$((total_ticks + $7))
    cpus+=("$(fmt_time "$(awk -v t="$7" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')")")
  else
    cpus+=(-)
  fi
}

# child_ticks VAR: the CPU time (user + system, in clock ticks) of this shell's children that have
# ended and been waited for (/proc/PID/stat's cutime and cstime), read without forking.
child_ticks() {
  local stat fields
  read -r stat <"/proc/$BASHPID/stat"
  read -r -a fields <<<"${stat##*) }"
  printf -v "$1" '%d' $((fields[13] + fields[14]))
}

# Seconds as m:ss.s.
fmt_time() { awk -v s="$1" 'BEGIN { m = int(s / 60); printf "%d:%04.1f", m, s - 60 * m }'; }

table() {
  local total i
  total=$(awk -v a="$(now)" -v b="$run_start" 'BEGIN { printf "%.1f", a - b }')
  echo
  echo "make test: steps (wall time; cpu = user + system time of the step's processes that ended;"
  echo "load = /proc/loadavg 1-minute average at the step's start -> end; $(nproc) CPUs)"
  printf '%-22s %8s %9s %9s %15s  %s\n' step start wall cpu load result
  for i in "${!names[@]}"; do
    printf '%-22s %8s %9s %9s %15s  %s\n' "${names[$i]}" "${starts[$i]}" "${walls[$i]}" "${cpus[$i]}" \
      "${load_start[$i]} -> ${load_end[$i]}" "${results[$i]}"
  done
  local cpu busy
  cpu=$(awk -v t="$total_ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')
  busy=$(awk -v c="$cpu" -v w="$total" -v n="$(nproc)" 'BEGIN { printf "%.0f", (w > 0 ? 100 * c / (w * n) : 0) }')
  printf '%-22s %8s %9s %9s  %s\n' total "" "$(fmt_time "$total")" "$(fmt_time "$cpu")" \
    "CPUs busy $busy % of the wall time; load now $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
  # A build that fails for want of disk says so only deep in its log: the space left, beside it.
  echo "disk: $(df -h --output=avail . 2>/dev/null | tail -n 1 | tr -d ' ') available where the build writes ($(pwd))"
  local passed=0 failed_count=0 r
  for r in "${results[@]}"; do
    case $r in ok) passed=$((passed + 1)) ;; FAILED* | INTERRUPTED) failed_count=$((failed_count + 1)) ;; esac
  done
  if [[ ${#failed[@]} -gt 0 ]]; then echo "make test: failed step(s): ${failed[*]}"; fi
  echo "steps: $passed passed, $failed_count failed"
}

# run_one STEP PREFIX: runs the step's make; with PREFIX, its output lines carry the step's name.
run_one() {
  local step=$1 prefix=$2 status
  if [[ -n $prefix ]]; then
    $make_cmd --no-print-directory "${done_flags[@]}" "$step" 2>&1 | sed -u "s/^/[$step] /"
    status=${PIPESTATUS[0]}
  else
    $make_cmd --no-print-directory "${done_flags[@]}" "$step"
    status=$?
  fi
  return "$status"
}

# The process and its descendants, children first stopped from forking.
kill_tree() {
  local child
  kill -STOP "$1" 2>/dev/null
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null
  kill -CONT "$1" 2>/dev/null
}

# Interrupted (CI's timeout, ^C): the table so far, the running step named.
current="" pids=()
interrupted() {
  trap - INT TERM
  local pid
  for pid in "${pids[@]}"; do kill_tree "$pid"; done
  [[ -n $current ]] && record "$current" "$current_t0" "$(now)" "$current_l0" "$(load)" "INTERRUPTED" && failed+=("$current")
  table
  exit 130
}
trap interrupted INT TERM

stop=0
for group in "$@"; do
  IFS=+ read -r -a members <<<"$group"
  if [[ $stop -eq 1 ]]; then
    for step in ${group//[+,]/ }; do record "$step" "" "" - - "not run"; done
    continue
  fi
  # Lanes at once, the steps of a lane one after another (a later step of a lane takes the
  # earlier ones as made), each lane in the background so that a signal is handled at once (bash
  # defers traps until a foreground child ends); each step writes its start, end, loads, status
  # and CPU ticks to a file of its own, and a lane stops at its first failed step. A step alone
  # keeps its output as make prints it; beside others, its lines carry its name.
  if [[ $group == *[+,]* ]]; then
    echo "==> ${members[*]//,/ then } (at the same time)"
  else
    echo "==> $group"
  fi
  dir=$(mktemp -d)
  pids=()
  current="${members[*]}" current_t0=$(now) current_l0=$(load)
  for lane in "${members[@]}"; do
    (
      IFS=, read -r -a lane_steps <<<"$lane"
      for step in "${lane_steps[@]}"; do
        prefix=$step
        [[ $group == *[+,]* ]] || prefix=""
        t0=$(now) l0=$(load)
        child_ticks ticks0
        run_one "$step" "$prefix"
        status=$?
        child_ticks ticks1
        echo "$t0 $(now) $l0 $(load) $status $((ticks1 - ticks0))" >"$dir/$step"
        [[ $status -eq 0 ]] || break
        done_flags+=(-o "$step")
      done
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  current=""
  lanes="${members[*]}"
  IFS=, read -r -a members <<<"${lanes// /,}"
  for step in "${members[@]}"; do
    if [[ ! -e $dir/$step ]]; then record "$step" "" "" - - "not run"; continue; fi
    read -r t0 t1 l0 l1 status ticks <"$dir/$step" || { t0=$(now) t1=$t0 l0=- l1=- status=1 ticks=""; }
    if [[ $status -eq 0 ]]; then
      record "$step" "$t0" "$t1" "$l0" "$l1" ok "$ticks"
    else
      record "$step" "$t0" "$t1" "$l0" "$l1" "FAILED (exit $status)" "$ticks"
      failed+=("$step")
    fi
  done
  rm -rf "$dir"
  for step in "${members[@]}"; do done_flags+=(-o "$step"); done
  if [[ ${#failed[@]} -gt 0 && $keep_going -eq 0 ]]; then stop=1; fi
done

table
[[ ${#failed[@]} -eq 0 ]]
