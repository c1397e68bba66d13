package io.vivarium.kit.vmm;

import java.nio.file.Path;

/**
 * A guest as {@link VmmDriver#boot} configures it.
 *
 * @param vcpus virtual CPUs
 * @param memoryMib guest memory
 * @param kernel an ELF vmlinux
 * @param initramfs its initramfs
 * @param cmdline the whole kernel command line
 * @param workspace the workspace disk, a raw ext4 file (the guest's first disk, {@code /dev/vda})
 * @param vsockSocket the host side of the guest's vsock device, which the VMM binds
 * @param guestCid the guest's vsock CID
 */
public record VmmBoot(int vcpus, int memoryMib, Path kernel, Path initramfs, String cmdline, Path workspace,
        Path vsockSocket, long guestCid) {
}
