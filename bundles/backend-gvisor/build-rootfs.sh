#!/usr/bin/env bash
# Builds the gvisor backend's default root filesystem: Debian (the host's suite) with python3 and
# python3-numpy, exactly the packages and versions pinned in rootfs-packages.pin beside this script,
# by mmdebstrap from deb.debian.org. Content-addressed like guest-agent/image:
# DIR/gvisor-rootfs-<16 hex of the inputs hash>/ (rootfs/ in it), DIR/gvisor-rootfs a link to
# the newest's rootfs. Unchanged inputs: nothing is built, the path is printed. Progress on
# stderr, the rootfs path on stdout. Needs root (mmdebstrap --mode=root) and the network to the
# mirror. About 25 s on a 2-core machine with a warm mirror.
#
# The pins: the Python (and everything else) under test changes when the pin file changes, never
# with the archive. Moving the pins: `build-rootfs.sh --repin` installs minbase with the packages
# below from the archive of the day (apt's candidates) into a scratch directory and rewrites
# rootfs-packages.pin with what it installed; review the diff, build (`build-rootfs.sh`) and run
# the gvisor tests (backend-gvisor, the itests' Gvisor* classes). The rootfs's name is a hash of its
# inputs, the pin file included, so a new pin file rebuilds it once, everywhere (CI too). A pinned
# version the archive no longer has (a Debian point release replaces it) stops the build, saying so:
# repin then.
set -euo pipefail

usage() {
  cat >&2 <<'USAGE'
usage: build-rootfs.sh [--out DIR]   (DIR defaults to ${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images})
       build-rootfs.sh --repin       (rewrites rootfs-packages.pin from the archive of the day)
USAGE
  exit 2
}

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
pins="$here/rootfs-packages.pin"
out="${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images}"
repin=
while (( $# > 0 )); do
  case "$1" in
    --out) (( $# >= 2 )) || usage; out="$2"; shift 2 ;;
    --repin) repin=1; shift ;;
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
# What the root filesystem is for; the pin file holds these and everything they need.
wanted=(python3 python3-numpy)

# pkg=version of every package installed in the root filesystem at $1, sorted.
installed() {
  dpkg-query --admindir="$1/var/lib/dpkg" -W -f='${db:Status-Abbrev} ${Package}=${Version}\n' |
    awk '$1 == "ii" { print $2 }' | LC_ALL=C sort
}

if [[ -n $repin ]]; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  log "mmdebstrap $suite (minbase, ${wanted[*]}: the archive's candidates) into $scratch"
  mmdebstrap --quiet --mode=root --variant=minbase --include="$(IFS=,; echo "${wanted[*]}")" \
    "$suite" "$scratch/rootfs" >&2
  {
    echo "# The gvisor backend's default root filesystem, package by package (pkg=version, sorted): what"
    echo "# mmdebstrap --variant=minbase --include=$(IFS=,; echo "${wanted[*]}") installed from $suite on $(date -u +%F)."
    echo "# build-rootfs.sh installs exactly these and nothing else; \`build-rootfs.sh --repin\` rewrites this file"
    echo "# from the archive of the day (see the script)."
    installed "$scratch/rootfs"
  } >"$pins.new"
  mv "$pins.new" "$pins"
  log "rewrote $pins ($(grep -vc '^#' "$pins") packages): review the diff, then build"
  exit 0
fi

mapfile -t pinned < <(grep -v '^#' "$pins" | grep -v '^$')
(( ${#pinned[@]} > 0 )) || die "$pins pins no package"
# The inputs: this script, the suite, the pinned packages.
hash="$( { cat "${BASH_SOURCE[0]}"; echo "$suite"; printf '%s\n' "${pinned[@]}"; } | sha256sum | cut -c1-16)"
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
  log "mmdebstrap $suite (${#pinned[@]} pinned packages for ${wanted[*]}) into $tmp"
  start=$SECONDS
  # custom: exactly the packages listed (the pin file holds minbase's too), at their versions
  mmdebstrap --quiet --mode=root --variant=custom --include="$(IFS=,; echo "${pinned[*]}")" \
    "$suite" "$tmp/rootfs" >&2 ||
    die "mmdebstrap failed: the network to deb.debian.org, or a pinned version the archive no longer has" \
        "(then repin: see the top of this script)"
  got="$(installed "$tmp/rootfs")"
  [[ $got == "$(printf '%s\n' "${pinned[@]}" | LC_ALL=C sort)" ]] ||
    die "the root filesystem is not the pinned package set: $(diff <(printf '%s\n' "${pinned[@]}" | LC_ALL=C sort) \
        <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
  # no package manager state or caches the sandboxes could not use anyway (the root is read-only)
  rm -rf "$tmp/rootfs/var/cache/apt" "$tmp/rootfs/var/lib/apt/lists"
  printf '{"suite":"%s","for":"%s","packages":"%s","built":"%s"}\n' "$suite" "${wanted[*]}" "${pinned[*]}" \
    "$(date -u +%FT%TZ)" >"$tmp/rootfs.json"
  rm -rf "${out:?}/$name"
  mv "$tmp" "$out/$name"
  trap - EXIT
  log "built $out/$name in $((SECONDS - start)) s"
fi
ln -sfn "$name/rootfs" "$out/.gvisor-rootfs.new"
mv -T "$out/.gvisor-rootfs.new" "$out/gvisor-rootfs"
echo "$out/gvisor-rootfs"
