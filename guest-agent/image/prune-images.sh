#!/usr/bin/env bash
# Removes the guest images nothing uses any more from DIR (${VIVARIUM_IMAGES:-~/.cache/vivarium/images}):
# every VARIANT-<16 hex> directory that is not
#   - what a variant's link (DIR/VARIANT) points at,
#   - the backing file of a qcow2 overlay under one of the STATE_DIRs given (a VM's disk),
#   - named on the command line of a running QEMU (its kernel, initramfs or workspace).
# Each variant's build lock is held meanwhile, so a build cannot re-point a link under it.
# Prints each directory it removes (or would, with --dry-run) on stdout.
set -euo pipefail

usage() {
  echo "usage: prune-images.sh [--out DIR] [--dry-run] [STATE_DIR]..." >&2
  exit 2
}

out="${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images}"
dry=
states=()
while (( $# > 0 )); do
  case "$1" in
    --out) (( $# >= 2 )) || usage; out="$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage ;;
    -*) echo "prune-images: unknown option '$1'" >&2; usage ;;
    *) [[ -d $1 ]] || { echo "prune-images: no state directory $1" >&2; exit 2; }
       states+=("$1"); shift ;;
  esac
done
[[ -d $out ]] || exit 0
out="$(cd "$out" && pwd -P)"
command -v qemu-img >/dev/null || { echo "prune-images: qemu-img is missing (apt-get install qemu-utils)" >&2; exit 1; }

images=()
for d in "$out"/*-*; do
  [[ -d $d && ! -L $d && $(basename "$d") =~ ^[a-z0-9-]+-[0-9a-f]{16}$ ]] && images+=("$d")
done
(( ${#images[@]} > 0 )) || exit 0

# the build lock of every variant present, for the rest of this script
fd=10
declare -A locked=()
for d in "${images[@]}"; do
  name="$(basename "$d")"
  variant="${name%-*}"
  [[ -n ${locked[$variant]:-} ]] && continue
  eval "exec $fd>\"\$out/.lock-\$variant\""
  flock "$fd"
  locked[$variant]=1
  fd=$((fd + 1))
done

declare -A used=()
# the links
for l in "$out"/*; do
  [[ -L $l ]] && used["$(readlink -f "$l")"]=1
done
# the backing files of the overlays under the state directories (-U: a running VM holds a lock)
for s in "${states[@]}"; do
  while IFS= read -r -d '' disk; do
    backing="$(qemu-img info -U --output=json "$disk" 2>/dev/null |
      sed -n 's/^ *"full-backing-filename": "\(.*\)",\{0,1\}$/\1/p')"
    [[ -n $backing ]] && used["$(dirname "$(readlink -f "$backing")")"]=1
  done < <(find "$s" -name '*.qcow2' -type f -print0 2>/dev/null)
done
# what a running QEMU names
for cmdline in /proc/[0-9]*/cmdline; do
  tr '\0' '\n' <"$cmdline" 2>/dev/null | grep -q qemu-system || continue
  while IFS= read -r arg; do
    for d in "${images[@]}"; do
      [[ $arg == *"$d/"* ]] && used[$d]=1
    done
  done < <(tr '\0' '\n' <"$cmdline" 2>/dev/null | tr ',=' '\n\n')
done

for d in "${images[@]}"; do
  [[ -n ${used[$d]:-} ]] && continue
  echo "$d"
  [[ -n $dry ]] || { chmod -R u+w "$d"; rm -rf "$d"; }
done
