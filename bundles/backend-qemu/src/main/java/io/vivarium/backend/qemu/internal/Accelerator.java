package io.vivarium.backend.qemu.internal;

import io.vivarium.kit.vmm.HostKvm;
import java.nio.file.Path;
import java.util.List;

/**
 * KVM or TCG, and why: KVM where the kit's {@link HostKvm} says it runs a stock guest (see
 * GUEST-FACTS for the paravirtual {@code /dev/kvm} that opens but does not), TCG otherwise.
 *
 * @param args QEMU's options for it
 * @param reason the choice and its reason, shown as the backend's {@code accelerator} detail
 */
record Accelerator(String name, List<String> args, String reason) {

    static Accelerator detect(Path cpuinfo, Path kvm) {
        HostKvm host = HostKvm.check(cpuinfo, kvm);
        return host.runsGuests() ? new Accelerator("kvm", List.of("-accel", "kvm", "-cpu", "host"), "kvm (" + host.reason() + ")")
                : new Accelerator("tcg", List.of("-accel", "tcg", "-cpu", "max"), "tcg (" + host.reason() + ")");
    }
}
