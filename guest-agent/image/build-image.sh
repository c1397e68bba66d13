#!/usr/bin/env bash
# Builds a Vivarium guest image from Debian packages (apt-get download + dpkg -x, never
# installed) and our static agent: DIR/VARIANT-<16 hex of the inputs hash>/ with kernel,
# initramfs.cpio.gz, workspace.qcow2, image.json and README; DIR/VARIANT links to the newest.
# Unchanged inputs: nothing is built, the path is printed. Progress on stderr, the path on stdout.
# The layout and the guest's /init are described in README.md beside this script.
set -euo pipefail

usage() {
  cat >&2 <<'USAGE'
usage: build-image.sh [--out DIR] [--variant default|qemu-ga|python|bare]
       build-image.sh --candidates [--variant VARIANT]
  DIR defaults to ${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images}
  --candidates: each package's pinned version beside the one apt would install today (to move a pin)
USAGE
  exit 2
}

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
agent_dir="$(dirname "$here")"
out="${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images}"
variant=default
show_candidates=
while (( $# > 0 )); do
  case "$1" in
    --out) (( $# >= 2 )) || usage; out="$2"; shift 2 ;;
    --variant) (( $# >= 2 )) || usage; variant="$2"; shift 2 ;;
    --candidates) show_candidates=1; shift ;;
    -h|--help) usage ;;
    *) echo "build-image: unknown argument '$1'" >&2; usage ;;
  esac
done

log() { printf 'build-image: %s\n' "$*" >&2; }
die() { printf 'build-image: %s\n' "$*" >&2; exit 1; }

# Every package an image is made of, at the version it is built from: the kernel and Python under
# test change when a pin here is moved, never with the archive. The images' names are hashes of
# their inputs, these versions included, so moving a pin rebuilds the images that use the package
# once, everywhere (CI too).
#
# Moving a pin: `apt-get update`, then `build-image.sh --candidates --variant VARIANT` lists each
# package's pin beside the version apt would install today. For the kernel, the new ABI's package
# is the one `apt-cache depends linux-image-cloud-amd64` names (linux-image-6.1.N-cloud-amd64): put
# its name in kernel_pkg and its version in the table. Edit the versions here, build the variants
# (`./vivarium image VARIANT`) and run the VM tests (guest-agent and backend-qemu, the itests'
# Qemu*/Vm* classes). A pinned version the archive no longer has (a Debian point release replaces
# it) stops the build with that message: move the pin then.
kernel_pkg=linux-image-6.1.0-57-cloud-amd64
declare -A pinned=(
  [linux-image-6.1.0-57-cloud-amd64]=6.1.192-3
  [busybox-static]=1:1.35.0-4+deb12u1+b1
  # python
  [python3.11-minimal]=3.11.2-6+deb12u9
  [libpython3.11-minimal]=3.11.2-6+deb12u9
  [libpython3.11-stdlib]=3.11.2-6+deb12u9
  [libc6]=2.36-9+deb12u14
  [zlib1g]=1:1.2.13.dfsg-1+deb12u1
  [libexpat1]=2.5.0-1+deb12u5
  [libbz2-1.0]=1.0.8-5+b1
  [libcrypt1]=1:4.4.33-2
  [libssl3]=3.0.22-1~deb12u2
  [libffi8]=3.4.4-1
  [liblzma5]=5.4.1-1+deb12u2
  [libsqlite3-0]=3.40.1-2+deb12u2
  [libuuid1]=2.38.1-5+deb12u3
  [libncursesw6]=6.4-4
  [libtinfo6]=6.4-4
  [libreadline8]=8.2-1.3
  # qemu-ga
  [qemu-guest-agent]=1:7.2+dfsg-7+deb12u18+b3
  [libglib2.0-0]=2.74.6-2+deb12u9
  [libpcre2-8-0]=10.42-1+deb12u2
  [libnuma1]=2.0.16-1
  [libudev1]=252.39-1~deb12u2
  [liburing2]=2.3-3
)

# The guest's kernel modules, in load order: virtio over PCI (q35; microvm would add virtio_mmio
# after virtio_pci). ext4, jbd2, mbcache and crc32c are built into this kernel (CONFIG_EXT4_FS=y,
# checked below).
modules=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console virtio_blk)
# Loaded once the agent runs (a panic before then is a reset, which the backend reports too): the
# driver of the backend's `-device pvpanic` (ISA, ACPI id QEMU0001), so a panic is GUEST_PANICKED;
# virtio-net (and the failover modules it needs) for the NIC of a VM with an egress network, whose
# eth0 the backend configures through the agent (bundles/backend-qemu VmNetwork).
late_modules=(pvpanic pvpanic-mmio failover net_failover virtio_net)
# Loaded before the agent starts only in a guest whose kernel command line says
# vivarium.channel=vsock:PORT (a Firecracker or Cloud Hypervisor guest, which has no virtio-serial):
# vsock over virtio, and virtio over MMIO (Firecracker's devices, which it lists in ACPI: this
# kernel has no CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES).
vsock_modules=(virtio_mmio vsock vmw_vsock_virtio_transport_common vmw_vsock_virtio_transport)
port=org.qemu.guest_agent.0
cmdline="console=ttyS0 panic=-1 quiet"

init_file=init
case "$variant" in
  default) agent=vivarium; extra_packages=() ;;
  # default plus Debian's python3.11 and the libraries of its binary and extension modules
  python) agent=vivarium
          extra_packages=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libc6 zlib1g libexpat1
                          libbz2-1.0 libcrypt1 libssl3 libffi8 liblzma5 libsqlite3-0 libuuid1 libncursesw6
                          libtinfo6 libreadline8) ;;
  # BootBenchmark's baseline: busybox and an /init that prints one line and powers off
  bare) agent=none; extra_packages=(); init_file=init-bare; modules=(); late_modules=(); vsock_modules=() ;;
  # qemu-ga and the packages of every library it loads (checked: the build fails on a missing one)
  qemu-ga) agent=qemu-ga
           extra_packages=(qemu-guest-agent libc6 libglib2.0-0 libpcre2-8-0 libnuma1 libudev1 liburing2) ;;
  *) die "unknown variant '$variant' (default, qemu-ga, python, bare)" ;;
esac

packages=("$kernel_pkg" busybox-static "${extra_packages[@]}")
declare -A version=()
for p in "${packages[@]}"; do
  version[$p]="${pinned[$p]:-}"
  [[ -n ${version[$p]} ]] || die "$p has no pinned version: add it to the table at the top of build-image.sh"
done

if [[ -n $show_candidates ]]; then
  printf '%-36s %-28s %s\n' PACKAGE PINNED "APT'S CANDIDATE"
  for p in "${packages[@]}"; do
    printf '%-36s %-28s %s\n' "$p" "${version[$p]}" \
      "$(apt-cache policy "$p" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')"
  done
  echo "kernel: linux-image-cloud-amd64 depends on $(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')"
  exit 0
fi

for tool in apt-cache apt-get dpkg-deb readelf gzip lz4 od qemu-img sha256sum flock; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (qemu-img: apt-get install qemu-utils; readelf: binutils; lz4: lz4)"
done
mkfs_ext4="$(PATH="$PATH:/sbin:/usr/sbin" command -v mkfs.ext4)" || die "mkfs.ext4 is missing: apt-get install e2fsprogs"

# Every pinned version must be one apt can fetch: its lists lack one, update them once (as root).
unknown_pins() {
  local p
  for p in "${packages[@]}"; do
    apt-cache show "$p=${version[$p]}" >/dev/null 2>&1 || echo "$p=${version[$p]}"
  done
}
missing="$(unknown_pins)"
if [[ -n $missing && $(id -u) -eq 0 ]]; then
  log "apt-get update (the package lists lack $(echo $missing))"
  apt-get update -qq >&2
  missing="$(unknown_pins)"
fi
[[ -z $missing ]] || die "apt cannot fetch $(echo $missing)$([[ $(id -u) -eq 0 ]] || echo " (apt-get update as root?)"):" \
  "a pinned version the archive no longer has; move the pin (see the top of build-image.sh)"

# Our agent and vivarium-boot (the set-up /init runs before the agent), rebuilt by make if their
# sources changed (a no-op otherwise).
agent_bin="$agent_dir/build/vivarium-agent"
boot_bin="$agent_dir/build/vivarium-boot"
if [[ $init_file == init ]]; then
  make -s -C "$agent_dir" --no-print-directory >&2 || die "make -C $agent_dir failed (the agent and vivarium-boot are needed)"
  [[ -x $agent_bin && -x $boot_bin ]] || die "make did not produce $agent_bin and $boot_bin"
fi
# What QEMU boots in place of the vmlinux, in every variant (see extract_vmlinux below).
loader_bin="$agent_dir/build/vivarium-pvh-loader"
make -s -C "$agent_dir" --no-print-directory build/vivarium-pvh-loader >&2 || die "make -C $agent_dir build/vivarium-pvh-loader failed"

# Everything the image is made of; its hash names the image.
sha() { sha256sum "$1" | cut -d' ' -f1; }
inputs="$(
  echo "variant $variant"
  echo "cmdline $cmdline"
  echo "modules ${modules[*]}"
  echo "late modules ${late_modules[*]}"
  echo "vsock modules ${vsock_modules[*]}"
  for p in "${packages[@]}"; do echo "package $p ${version[$p]}"; done
  echo "file build-image.sh $(sha "$here/build-image.sh")"
  echo "file $init_file $(sha "$here/$init_file")"
  [[ $agent != vivarium ]] || echo "file vivarium-agent $(sha "$agent_bin")"
  [[ $init_file != init ]] || echo "file vivarium-boot $(sha "$boot_bin")"
  echo "file vivarium-pvh-loader $(sha "$loader_bin")"
)"
inputs_sha="$(printf '%s\n' "$inputs" | sha256sum | cut -d' ' -f1)"
name="$variant-${inputs_sha:0:16}"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
final="$out/$name"

# Point DIR/VARIANT at $name: a temporary link renamed over the old one.
link_newest() {
  [[ "$(readlink "$out/$variant" 2>/dev/null || true)" == "$name" ]] && return 0
  ln -sfn "$name" "$out/.link-$variant-$$"
  mv -Tf "$out/.link-$variant-$$" "$out/$variant"
}

# One build per variant at a time; a second caller waits and then finds the image built.
exec 9>"$out/.lock-$variant"
flock 9
if [[ -f $final/image.json ]]; then
  log "$name is up to date"
  link_newest
  echo "$final"
  exit 0
fi

# staging left by a build that was killed (we hold the lock, so none is running)
rm -rf "$out/.staging-$variant-"*
started=$SECONDS
log "building $name in $out"
work="$(mktemp -d "$out/.staging-$name-XXXXXX")"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT HUP
trap 'exit 143' TERM  # a signal ends the script through the EXIT trap
mkdir "$work/debs" "$work/x" "$work/root" "$work/image"

log "apt-get download ${packages[*]}"
specs=()
for p in "${packages[@]}"; do specs+=("$p=${version[$p]}"); done
# as root apt would hand the download to its _apt user, which cannot write under a private $HOME
apt_opts=()
[[ $(id -u) -ne 0 ]] || apt_opts=(-o APT::Sandbox::User=root)
(cd "$work/debs" && apt-get "${apt_opts[@]}" download -q=2 "${specs[@]}" >&2) ||
  die "apt-get download ${specs[*]} failed (network to deb.debian.org? a pin the archive dropped?)"
for p in "${packages[@]}"; do
  deb=("$work"/debs/"$p"_*.deb)
  [[ -f ${deb[0]} ]] || die "apt-get download left no ${p}_*.deb"
  got="$(dpkg-deb -f "${deb[0]}" Version)"
  [[ $got == "${version[$p]}" ]] || die "$p: downloaded $got, expected ${version[$p]}"
  dpkg-deb -x "${deb[0]}" "$work/x/$p"
done

root="$work/root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,work,root,etc/vivarium,lib/modules}
chmod 1777 "$root/tmp"
chmod 700 "$root/root"

busybox="$work/x/busybox-static/bin/busybox"
[[ -x $busybox ]] || die "busybox-static has no bin/busybox"
cp "$busybox" "$root/bin/busybox"
# an applet link for every busybox command (linuxrc is for initrds, not an initramfs)
while read -r applet; do
  [[ $applet == linuxrc || -e $root/$applet || -L $root/$applet ]] || ln -s /bin/busybox "$root/$applet"
done < <("$busybox" --list-full)

kmod_root=("$work/x/$kernel_pkg"/lib/modules/*)
[[ -d ${kmod_root[0]} ]] || die "$kernel_pkg has no lib/modules/"
kconfig=("$work/x/$kernel_pkg"/boot/config-*)
for opt in CONFIG_EXT4_FS CONFIG_JBD2 CONFIG_FS_MBCACHE CONFIG_CRYPTO_CRC32C CONFIG_DEVTMPFS CONFIG_SERIAL_8250 CONFIG_RD_GZIP \
           CONFIG_PVH CONFIG_KERNEL_LZ4; do
  grep -qx "$opt=y" "${kconfig[0]}" ||
    die "$kernel_pkg: $opt is not built in; add its module to the list in build-image.sh"
done
! grep -qx CONFIG_MODULE_SIG_FORCE=y "${kconfig[0]}" ||
  die "$kernel_pkg enforces module signatures (CONFIG_MODULE_SIG_FORCE=y): keep them (strip_signature)"
# Debian signs its modules (a signature appended to the .ko: the signature, a 12-byte
# struct module_signature whose last 4 bytes are the signature's length, big-endian, and the
# 28-byte magic). The guest kernel does not enforce signatures (no module.sig_enforce, no
# lockdown), and verifying one (SHA-512 and RSA) costs it about 4-5 ms per module under TCG, on
# the boot's critical path; the packages were verified by apt on the host. So the copies are
# unsigned (the kernel loads them and marks itself tainted 'E', quietly).
strip_signature() {
  local ko="$1" size siglen
  [[ "$(tail -c 28 "$ko")" == "~Module signature appended~" ]] || return 0  # $() drops the magic's newline
  size=$(stat -c %s "$ko")
  siglen=$(tail -c 32 "$ko" | head -c 4 | od -An -tu4 --endian=big | tr -d ' ')
  (( siglen > 0 && siglen + 40 < size )) || die "$ko: a module signature of $siglen bytes in $size"
  truncate -s $((size - 40 - siglen)) "$ko"
}
# copy_modules LIST_FILE MODULE...: the modules, unsigned, into /lib/modules and their names, in
# order, into the list
copy_modules() {
  local list="$root/etc/vivarium/$1" m ko
  shift
  : >"$list"
  for m in "$@"; do
    ko="$(find "${kmod_root[0]}/kernel" -name "$m.ko" -print -quit)"
    [[ -n $ko ]] || die "$kernel_pkg has no module $m.ko"
    cp "$ko" "$root/lib/modules/$m.ko"
    strip_signature "$root/lib/modules/$m.ko"
    echo "$m" >>"$list"
  done
}
copy_modules modules "${modules[@]}"
copy_modules modules-late "${late_modules[@]}"
copy_modules modules-vsock "${vsock_modules[@]}"

echo "$agent" >"$root/etc/vivarium/agent"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\ntty:x:5:\n' >"$root/etc/group"
echo vivarium >"$root/etc/hostname"
install -m 755 "$here/$init_file" "$root/init"
[[ $init_file != init ]] || install -m 755 "$boot_bin" "$root/sbin/vivarium-boot"

# Shared libraries from the downloaded packages (never the host's): the loader, and for an ELF
# file every DT_NEEDED library, transitively, into /lib/x86_64-linux-gnu.
libdirs=()
for p in "${extra_packages[@]}"; do
  for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
    [[ -d $work/x/$p/$d ]] && libdirs+=("$work/x/$p/$d")
  done
done
find_lib() {
  local d
  for d in "${libdirs[@]}"; do [[ -e $d/$1 ]] && { echo "$d/$1"; return 0; }; done
  return 1
}
# The libraries ELF needs that are not in the image yet, transitively, one per line.
missing_libs() {
  local pending=("$1") elf lib src
  declare -A seen=()
  while (( ${#pending[@]} > 0 )); do
    elf="${pending[0]}"; pending=("${pending[@]:1}")
    while read -r lib; do
      [[ -n ${seen[$lib]:-} || -e $root/lib/x86_64-linux-gnu/$lib ]] && continue
      seen[$lib]=1
      echo "$lib"
      src="$(find_lib "$lib")" && pending+=("$src")
    done < <(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  done
}
# Copies what ELF needs; false (copying nothing) when a package lacks one, named on stderr.
copy_libs() {
  local libs lib src
  mapfile -t libs < <(missing_libs "$1")
  for lib in "${libs[@]}"; do
    find_lib "$lib" >/dev/null || { echo "$lib" >&2; return 1; }
  done
  mkdir -p "$root/lib/x86_64-linux-gnu" "$root/lib64"
  if [[ ! -e $root/lib64/ld-linux-x86-64.so.2 ]]; then
    src="$(find_lib ld-linux-x86-64.so.2)" || die "libc6 has no ld-linux-x86-64.so.2"
    cp -L "$src" "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
  fi
  for lib in "${libs[@]}"; do
    cp -L "$(find_lib "$lib")" "$root/lib/x86_64-linux-gnu/$lib"
  done
}

if [[ $agent == vivarium ]]; then
  install -m 755 "$agent_bin" "$root/sbin/vivarium-agent"
elif [[ $agent == qemu-ga ]]; then
  install -m 755 "$work/x/qemu-guest-agent/usr/sbin/qemu-ga" "$root/usr/sbin/qemu-ga"
  lib="$(copy_libs "$root/usr/sbin/qemu-ga" 2>&1)" ||
    die "no package in (${extra_packages[*]}) has $lib, which qemu-ga needs"
fi

if [[ $variant == python ]]; then
  log "python3.11 and its standard library"
  install -m 755 "$work/x/python3.11-minimal/usr/bin/python3.11" "$root/usr/bin/python3.11"
  ln -s python3.11 "$root/usr/bin/python3"
  lib="$(copy_libs "$root/usr/bin/python3.11" 2>&1)" ||
    die "no package in (${extra_packages[*]}) has $lib, which python3.11 needs"
  py="$root/usr/lib/python3.11"
  mkdir -p "$py"
  for p in libpython3.11-minimal libpython3.11-stdlib; do
    cp -a "$work/x/$p/usr/lib/python3.11/." "$py/"
  done
  # CPython's own tests are not for guests
  rm -rf "$py/test" "$py"/lib-dynload/{_test,_ctypes_test,_xxtestfuzz,xxlimited}*
  # an extension module whose libraries no listed package has (dbm: libdb, nis: libnsl) is left out
  for so in "$py"/lib-dynload/*.so; do
    if ! lib="$(copy_libs "$so" 2>&1)"; then
      log "leaving out $(basename "$so"): it needs $lib"
      rm "$so"
    fi
  done
fi

# Reproducible archive: fixed times, sorted names, owner root.
find "$root" -exec touch -h -d @0 {} +
log "initramfs.cpio.gz"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
  "$busybox" cpio -o -H newc -R 0:0 --renumber-inodes --ignore-devno 2>/dev/null) |
  gzip -n -9 >"$work/image/initramfs.cpio.gz"

# The kernel is the ELF vmlinux inside the package's vmlinuz (bzImage), which QEMU boots through
# its PVH entry (CONFIG_PVH, checked above): no SeaBIOS option ROM copying a compressed kernel into
# the guest and no decompression at every boot. The bzImage's copy and its decompressor's work
# stayed in the guest's free RAM as about 28 MiB of non-zero pages, which every checkpoint
# (savevm) wrote and every restore read back; and the boot is shorter (docs/benchmarks.md).
# Without the decompressor there is no KASLR in the guest: its root runs every command anyway.
# QEMU is given pvh-loader-ram as the kernel, and the backend writes the vmlinux's segments into
# the guest's RAM file before QEMU starts: an ELF kernel is loaded as ROM blobs that every system
# reset writes back into guest RAM, a checkpoint restore's included (44 MiB, 65-245 ms under TCG);
# the loader (guest-agent/boot/pvh-loader.c) only jumps to the kernel it finds in RAM.
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }  # FILE OFFSET: a little-endian u32
extract_vmlinux() {
  local bz="$1" out="$2" setup start len size
  [[ "$(od -An -c -j $((0x202)) -N4 "$bz" | tr -d ' ')" == HdrS ]] || die "$bz is not a bzImage"
  setup=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz" | tr -d ' ')  # setup_sects (0 means 4)
  (( setup > 0 )) || setup=4
  start=$(( (setup + 1) * 512 + $(u32 "$bz" $((0x248))) ))  # payload_offset
  len=$(u32 "$bz" $((0x24c)))  # payload_length: the lz4 stream, then the vmlinux's size (u32)
  size=$(u32 "$bz" $((start + len - 4)))
  head -c $((start + len - 4)) "$bz" | tail -c $((len - 4)) | lz4 -dcq >"$out" || die "lz4 could not unpack the kernel in $bz"
  [[ $(stat -c %s "$out") == "$size" ]] || die "the vmlinux unpacked from $bz is not the $size bytes its header says"
  # the PVH entry point is an ELF note of type XEN_ELFNOTE_PHYS32_ENTRY (18)
  readelf -n "$out" | grep -q '(0x00000012)' || die "the vmlinux in $bz has no PVH entry note"
}
kernel=("$work/x/$kernel_pkg"/boot/vmlinuz-*)
extract_vmlinux "${kernel[0]}" "$work/image/kernel"
install -m 444 "$loader_bin" "$work/image/pvh-loader-ram"

log "workspace.qcow2 (ext4, 1 GiB, label work)"
truncate -s 1G "$work/workspace.raw"
"$mkfs_ext4" -q -F -L work -m 0 -E root_owner=0:0 "$work/workspace.raw" >&2
qemu-img convert -f raw -O qcow2 "$work/workspace.raw" "$work/image/workspace.qcow2"

json_inputs=""
for p in "${packages[@]}"; do json_inputs+="${json_inputs:+, }\"$p\": \"${version[$p]}\""; done
[[ $agent != vivarium ]] || json_inputs+=", \"vivarium-agent\": \"sha256:$(sha "$agent_bin")\""
cat >"$work/image/image.json" <<JSON
{
  "name": "$name",
  "variant": "$variant",
  "agent": "$agent",
  "agent_port": "$port",
  "cmdline": "$cmdline",
  "machine_hint": "q35",
  "inputs": {$json_inputs},
  "inputs_sha256": "$inputs_sha",
  "built_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
JSON
case "$agent" in
  vivarium) agent_text="our static vivarium-agent"
            [[ $variant != python ]] || agent_text+=" (and python3.11 ${version[python3.11-minimal]} with its standard library)" ;;
  qemu-ga) agent_text="Debian's qemu-guest-agent ${version[qemu-guest-agent]} with its shared libraries" ;;
  *) agent_text="no agent (the /init of this benchmark baseline prints a line and powers off)" ;;
esac
cat >"$work/image/README" <<README
Vivarium guest image '$variant' ($name): Debian's $kernel_pkg ${version[$kernel_pkg]} kernel,
an initramfs with busybox-static ${version[busybox-static]}, the virtio modules, /init and
$agent_text on the virtio-serial port $port (or on vsock port N, its modules loaded
first, where the kernel command line says vivarium.channel=vsock:N), and an empty ext4 workspace disk
(1 GiB, label work) that /init mounts at /work. Built by guest-agent/image/build-image.sh from
packages fetched with apt-get download and unpacked with dpkg -x; the inputs are in image.json.
The directory is immutable: boot it with an overlay on workspace.qcow2, never write to it.
README
chmod 444 "$work/image"/*

mv -T "$work/image" "$final"
link_newest
log "built $name in $((SECONDS - started)) s ($(du -sh --apparent-size "$final/initramfs.cpio.gz" | cut -f1) initramfs)"
echo "$final"
