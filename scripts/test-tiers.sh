#!/usr/bin/env bash
# Run make targets as the tiers of `make test`, time each one and print a
# table of the times at the end, so every CI log shows where the budget goes.
#
#   scripts/test-tiers.sh image-twin,molecule-default+image-vm,lint,sanity+unit twin-test vm-test
#
# The arguments run one after the other.  Within one, "a,b" runs a then b, and
# "x+a,b" runs the lanes x and a,b side by side (each lane's output goes to
# out/tiers/<lane's first target>.log and is printed when every lane is done,
# so the log stays readable): the node images are mostly downloads and disk,
# the unit tests, ansible-lint and sanity mostly CPU.
# A tier that fails does not stop the ones after it (each brings up its own
# labs), so one run shows every failure; the exit status is 0 when every tier
# passed.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=out/tiers
mkdir -p "$logs"
rows=()
failed=0
npassed=0
nfailed=0
start_all=$(date +%s)

fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# one lane: its targets in order; a line "<target> <seconds> <status>" each on fd 3
lane() {
  local t began status
  IFS=, read -r -a targets <<<"$1"
  for t in "${targets[@]}"; do
    echo "=== tier $t"
    began=$(date +%s)
    make --no-print-directory "$t"
    status=$?
    echo "$t $(($(date +%s) - began)) $status" >&3
  done
}

for group in "$@"; do
  IFS=+ read -r -a lanes <<<"$group"
  times="$logs/times.$$"
  : >"$times"
  if [ ${#lanes[@]} -eq 1 ]; then
    lane "${lanes[0]}" 3>>"$times"
  else
    pids=()
    for l in "${lanes[@]}"; do
      echo "=== side by side: ${l//,/ then } (output below when every lane of '$group' is done)"
      lane "$l" 3>>"$times" >"$logs/${l%%,*}.log" 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}"
    for l in "${lanes[@]}"; do
      echo "=== output of ${l//,/, }"
      cat "$logs/${l%%,*}.log"
    done
  fi
  while read -r t secs status; do
    result=passed
    if [ "$status" -ne 0 ]; then result="FAILED (exit $status)"; failed=1; nfailed=$((nfailed + 1)); else npassed=$((npassed + 1)); fi
    side=""
    [ ${#lanes[@]} -gt 1 ] && side="  (side by side: ${group//+/ | })"
    rows+=("$(printf '%-18s %8s  %s%s' "$t" "$(fmt "$secs")" "$result" "$side")")
  done <"$times"
  rm -f "$times"
done

echo
echo "=== time per tier"
printf '%s\n' "${rows[@]}"
printf '%-18s %8s\n' "total" "$(fmt $(($(date +%s) - start_all)))"
echo "tiers: $npassed passed, $nfailed failed"
exit $failed
