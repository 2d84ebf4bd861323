#!/usr/bin/env bash
# Checks strata's include rules by reading the #include lines of the library sources.
#
# Library rules (DESIGN.md, layers): traces <- models <- {sim, real_exec}:
#   traces/    includes nothing of models, sim, real_exec or SimGrid;
#   models/    nothing of sim, real_exec or SimGrid;
#   real_exec/ nothing of sim or SimGrid (it builds without SimGrid);
#   sim/       nothing of real_exec.
# Room rules inside real_exec (one concept per folder, no upward include):
#   core <- kernels <- exec <- transport <- train <- calibrate: a room includes its own and lower
#   rooms only; data (data sets) needs core only and may be used by kernels, train, calibrate
#   and reference; reference (the drivers that serve as test oracles) may use core, data and
#   kernels, and no other room includes it; no transport includes the ADMM or GCN kernels.
#   The optional parts sit in the rooms of what they are: mpi/ is a transport; in cuda/ the
#   backend, device arrays, error checks and matrix_scale (the backend's GEMM edge case) are
#   core, the kernels kernels, the task runner exec and the peak measurement calibrate.
#
# Usage: tools/check_includes.sh [repository root]   (default: the root above this script)
# Prints one line per violation, "file:line: rule: #include ...", and exits 1 if there is any.
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"

# The rank of each real_exec room in the order above; data and reference sit apart.
declare -A rank=([core]=0 [kernels]=1 [exec]=2 [transport]=3 [train]=4 [calibrate]=5)

# room_of PATH: the room of a real_exec file, by its repository path or its include path
# (strata/real/...); empty when PATH is not part of real_exec.
room_of() {
  local p="$1" name
  case "$p" in
    real_exec/mpi/* | strata/real/mpi_transport.hpp) echo transport; return ;;
    real_exec/cuda/* | strata/real/cuda_* | strata/real/device_array.hpp)
      name="$(basename "$p")"
      case "$name" in
        cuda_task_runner.*) echo exec ;;
        cuda_calibrate.* | cuda_module.*) echo calibrate ;;
        cuda_kernels.* | kernels_* | launch.cuh) echo kernels ;;
        *) echo core ;;
      esac
      return
      ;;
  esac
  if [[ "$p" =~ ^real_exec/(src|include/strata/real)/([a-z_]+)/ ]]; then
    echo "${BASH_REMATCH[2]}"
  elif [[ "$p" =~ ^strata/real/([a-z_]+)/ ]]; then
    echo "${BASH_REMATCH[1]}"
  elif [[ "$p" =~ ^(real_exec/src|real_exec/include/strata/real|strata/real)/[^/]+$ ]]; then
    echo top  # a file outside any room
  fi
}

# room_allows FROM TO: whether room FROM may include room TO.
room_allows() {
  local from="$1" to="$2"
  [[ "$from" == "$to" ]] && return 0
  case "$to" in
    reference) return 1 ;;
    data) [[ "$from" =~ ^(kernels|train|calibrate|reference)$ ]] && return 0 || return 1 ;;
  esac
  case "$from" in
    data) [[ "$to" == core ]] && return 0 || return 1 ;;
    reference) [[ "$to" =~ ^(core|kernels)$ ]] && return 0 || return 1 ;;
  esac
  [[ -n "${rank[$from]:-}" && -n "${rank[$to]:-}" ]] || return 1
  ((rank[$to] <= rank[$from]))
}

violations=0
report() {  # file line rule text
  printf '%s:%s: %s: %s\n' "$1" "$2" "$3" "$4"
  violations=$((violations + 1))
}

# The include target as written, and as a repository path when it is a relative include.
check_file() {
  local file="$1" lib="$2" line text target resolved from to
  from=""
  [[ "$lib" == real_exec ]] && from="$(room_of "$file")"
  while IFS=: read -r line text; do
    [[ "$text" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"\<]([^\"\>]+)[\"\>] ]] || continue
    target="${BASH_REMATCH[1]}"
    case "$lib:$target" in
      traces:strata/models/* | traces:strata/sim/* | traces:strata/real/*)
        report "$file" "$line" "traces includes no models, sim or real_exec" "$text" ;;
      models:strata/sim/* | models:strata/real/*)
        report "$file" "$line" "models includes no sim or real_exec" "$text" ;;
      real_exec:strata/sim/*)
        report "$file" "$line" "real_exec includes no sim" "$text" ;;
      sim:strata/real/*)
        report "$file" "$line" "sim includes no real_exec" "$text" ;;
    esac
    if [[ "$target" == simgrid/* || "$target" == xbt/* ]] && [[ "$lib" != sim ]]; then
      report "$file" "$line" "only sim includes SimGrid" "$text"
    fi
    [[ "$lib" == real_exec && -n "$from" ]] || continue
    if [[ "$target" == strata/real/* ]]; then
      to="$(room_of "$target")"
    elif [[ "$target" == */* || -e "$(dirname "$file")/$target" ]]; then
      resolved="$(realpath -m --relative-to=. "$(dirname "$file")/$target")"
      to="$(room_of "$resolved")"
    else
      continue
    fi
    [[ -z "$to" ]] && continue
    if [[ "$from" == transport && "$target" =~ kernels/(admm|gcn)\.hpp$ ]]; then
      report "$file" "$line" "no transport includes the ADMM or GCN kernels" "$text"
    elif [[ "$from" == top || "$to" == top ]]; then
      continue  # a folder's entry point, outside the rooms
    elif ! room_allows "$from" "$to"; then
      report "$file" "$line" "real_exec room $from may not include room $to" "$text"
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$file" || true)
}

for lib in traces models sim real_exec; do
  [[ -d "$lib" ]] || continue
  while IFS= read -r -d '' file; do
    check_file "$file" "$lib"
  done < <(find "$lib" -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 | sort -z)
done

if ((violations > 0)); then
  echo "check_includes: $violations violation(s) of the include rules" >&2
  exit 1
fi
echo "check_includes: every include of traces, models, sim and real_exec follows the rules"
