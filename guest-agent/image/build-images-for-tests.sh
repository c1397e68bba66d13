#!/bin/sh
# Maven's hook (guest-agent/pom.xml, generate-test-resources): the guest images the VM tests
# boot (python: the eval tests' guests), built into ${VIVARIUM_IMAGES:-$HOME/.cache/vivarium/images} or found there unchanged.
# Without QEMU no test can boot them, so nothing is built.
set -eu
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
  echo "guest images: not built, qemu-system-x86_64 is not installed (apt-get install qemu-system-x86 qemu-utils); the VM tests will be skipped"
  exit 0
fi
here="$(dirname "$0")"
for variant in default qemu-ga python; do
  "$here/build-image.sh" --variant "$variant" >/dev/null
done
