#!/usr/bin/env bash
# Builds the gvisor backend's default root filesystem: Debian (the host's suite, minbase) with
# python3, by mmdebstrap from the host's apt sources. Content-addressed like guest-agent/image:
# DIR/gvisor-rootfs-<16 hex of the inputs hash>/ (rootfs/ in it), DIR/gvisor-rootfs a link to
# the newest's rootfs. Unchanged inputs: nothing is built, the path is printed. Progress on
# stderr, the rootfs path on stdout. Needs root (mmdebstrap --mode=root) and the network to the
# mirror. About 25 s on a 2-core machine with a warm mirror.
set -euo pipefail

usage() {
  echo "usage: build-rootfs.sh [--out DIR]   (DIR defaults to \${VIVARIUM_IMAGES:-\$HOME/.cache/vivarium/images})" >&2
  exit 2
}

out="${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images}"
while (( $# > 0 )); do
  case "$1" in
    --out) (( $# >= 2 )) || usage; out="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "build-rootfs: unknown argument '$1'" >&2; usage ;;
  esac
done

log() { printf 'build-rootfs: %s\n' "$*" >&2; }
die() { printf 'build-rootfs: %s\n' "$*" >&2; exit 1; }

command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap is missing: apt-get install mmdebstrap"
[[ $(id -u) -eq 0 ]] || die "run it as root (mmdebstrap --mode=root keeps the files' owners)"
# shellcheck disable=SC1091
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
[[ -n $suite ]] || die "cannot tell the host's Debian suite from /etc/os-release"
packages=(python3 python3-numpy)
# The inputs: this script, the suite, the package list. The packages' versions are the mirror's of
# the day; a rebuild with the same inputs is skipped (remove the directory to refresh it).
hash="$( { cat "${BASH_SOURCE[0]}"; echo "$suite"; printf '%s\n' "${packages[@]}"; } | sha256sum | cut -c1-16)"
name="gvisor-rootfs-$hash"
mkdir -p "$out"
# the lock guest-agent/image/prune-images.sh takes too, by the same name as build-image.sh's
exec 9>"$out/.lock-gvisor-rootfs"
flock 9
if [[ -d $out/$name/rootfs/usr ]]; then
  log "up to date: $out/$name"
else
  tmp="$(mktemp -d "$out/.$name.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  log "mmdebstrap $suite (minbase, ${packages[*]}) into $tmp"
  start=$SECONDS
  mmdebstrap --quiet --mode=root --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
    "$suite" "$tmp/rootfs" >&2
  # no package manager state or caches the sandboxes could not use anyway (the root is read-only)
  rm -rf "$tmp/rootfs/var/cache/apt" "$tmp/rootfs/var/lib/apt/lists"
  printf '{"suite":"%s","packages":"%s","built":"%s"}\n' "$suite" "${packages[*]}" "$(date -u +%FT%TZ)" >"$tmp/rootfs.json"
  rm -rf "${out:?}/$name"
  mv "$tmp" "$out/$name"
  trap - EXIT
  log "built $out/$name in $((SECONDS - start)) s"
fi
ln -sfn "$name/rootfs" "$out/.gvisor-rootfs.new"
mv -T "$out/.gvisor-rootfs.new" "$out/gvisor-rootfs"
echo "$out/gvisor-rootfs"
