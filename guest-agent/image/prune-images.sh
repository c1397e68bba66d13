#!/usr/bin/env bash
# Removes the guest images and root filesystems nothing uses any more from DIR
# (${VIVARIUM_IMAGES:-~/.cache/vivarium/images}): every VARIANT-<16 hex> directory none of whose
# paths (the directory itself or anything inside it) is
#   - where a link in DIR points (DIR/VARIANT, or a link to a file inside one, as gvisor-rootfs's),
#   - the backing file of a qcow2 overlay under one of the STATE_DIRs given (a VM's disk),
#   - named in a record under one of the STATE_DIRs (a gVisor container's OCI config, a snapshot's
#     description: any text file naming it),
#   - held by a running process: named on its command line (QEMU's kernel, initramfs or disk), its
#     root, working directory or executable, an open file, a mapped file, or the source of a mount
#     in its mount namespace (a runsc gofer serving a container's root filesystem, a bwrap bind).
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

# Every path something uses, one per line; an image is in use when one of them is it or lies inside it.
uses="$(mktemp)"
trap 'rm -f "$uses"' EXIT
{
  # the links in DIR, resolved
  for l in "$out"/*; do
    [[ -L $l ]] && readlink -f "$l"
  done
  for s in "${states[@]}"; do
    # the backing files of the overlays under the state directories (-U: a running VM holds a lock)
    while IFS= read -r -d '' disk; do
      backing="$(qemu-img info -U --output=json "$disk" 2>/dev/null |
        sed -n 's/^ *"full-backing-filename": "\(.*\)",\{0,1\}$/\1/p')"
      [[ -n $backing ]] && readlink -f "$backing"
    done < <(find "$s" -name '*.qcow2' -type f -print0 2>/dev/null)
    # any record naming a path under DIR, by the path it names (through a link in DIR, too)
    grep -rIhoa --exclude='*.qcow2' -e "$out/[^\"[:space:]]*" "$s" 2>/dev/null | while IFS= read -r named; do
      readlink -f "$named" || echo "$named"
    done
  done
  # what running processes hold: command lines, root, cwd, exe, open files, mapped files, mount sources
  for p in /proc/[0-9]*; do
    tr '\0' '\n' <"$p/cmdline" 2>/dev/null | tr ',=' '\n\n'
    readlink "$p/root" "$p/cwd" "$p/exe" 2>/dev/null
    find "$p/fd" -mindepth 1 -maxdepth 1 -type l -printf '%l\n' 2>/dev/null
    awk 'NF >= 6 && $6 ~ /^\// {print $6}' "$p/maps" 2>/dev/null
    awk '{print $4}' "$p/mountinfo" 2>/dev/null
  done
} 2>/dev/null | grep -F "$out/" | sort -u >"$uses" || true

declare -A used=()
for d in "${images[@]}"; do
  if grep -qxF -e "$d" "$uses" || grep -qF -e "$d/" "$uses"; then
    used[$d]=1
  fi
done

for d in "${images[@]}"; do
  [[ -n ${used[$d]:-} ]] && continue
  echo "$d"
  [[ -n $dry ]] || { chmod -R u+w "$d"; rm -rf "$d"; }
done
