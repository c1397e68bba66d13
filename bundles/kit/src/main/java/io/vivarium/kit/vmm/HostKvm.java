package io.vivarium.kit.vmm;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whether this host's KVM runs a stock guest kernel, and why (not): only when the CPU flags show
 * hardware virtualisation ({@code vmx} or {@code svm}) and {@code /dev/kvm} opens for reading and
 * writing. A paravirtual {@code /dev/kvm} without those flags opens too, but a stock guest stops
 * under it with "KVM internal error": a VMM that needs KVM (Firecracker, Cloud Hypervisor) cannot
 * run there, and QEMU falls back to TCG.
 *
 * @param runsGuests true when a guest can run under KVM here
 * @param reason the facts behind it, e.g. {@code "the CPU has vmx and /dev/kvm opens"}
 */
public record HostKvm(boolean runsGuests, String reason) {
    private static final Pattern HW_FLAG = Pattern.compile("^flags\\s*:.*\\b(vmx|svm)\\b.*", Pattern.MULTILINE);

    /** This host's: {@code /proc/cpuinfo} and {@code /dev/kvm}. */
    public static HostKvm check() {
        return check(Path.of("/proc/cpuinfo"), Path.of("/dev/kvm"));
    }

    /** From the CPU flags in {@code cpuinfo} and the device {@code kvm}. */
    public static HostKvm check(Path cpuinfo, Path kvm) {
        String flags;
        try {
            flags = Files.readString(cpuinfo);
        } catch (IOException e) {
            return new HostKvm(false, "cannot read " + cpuinfo + ": " + e.getMessage());
        }
        Matcher flag = HW_FLAG.matcher(flags);
        if (!flag.find()) {
            return new HostKvm(false, "the CPU flags show no vmx or svm, so " + kvm + " (if any) cannot run a stock guest");
        }
        try (FileChannel ignored = FileChannel.open(kvm, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return new HostKvm(true, "the CPU has " + flag.group(1) + " and " + kvm + " opens");
        } catch (IOException | UnsupportedOperationException e) {
            return new HostKvm(false, "the CPU has " + flag.group(1) + " but " + kvm + " does not open: " + e.getMessage());
        }
    }
}
