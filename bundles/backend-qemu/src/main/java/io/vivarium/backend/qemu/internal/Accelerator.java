package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.regex.Pattern;

/**
 * KVM or TCG, and why. KVM only when the CPU flags show hardware virtualisation ({@code vmx} or
 * {@code svm}) and {@code /dev/kvm} opens: a paravirtual {@code /dev/kvm} without them opens too,
 * but a stock guest kernel stops under it with "KVM internal error" (see GUEST-FACTS).
 *
 * @param args QEMU's options for it
 * @param reason the choice and its reason, shown as the backend's {@code accelerator} detail
 */
record Accelerator(String name, List<String> args, String reason) {

    private static final Pattern HW_FLAG = Pattern.compile("^flags\\s*:.*\\b(vmx|svm)\\b.*", Pattern.MULTILINE);

    static Accelerator detect(Path cpuinfo, Path kvm) {
        String flags;
        try {
            flags = Files.readString(cpuinfo);
        } catch (IOException e) {
            return tcg("cannot read " + cpuinfo + ": " + e.getMessage());
        }
        var flag = HW_FLAG.matcher(flags);
        if (!flag.find()) {
            return tcg("the CPU flags show no vmx or svm, so " + kvm + " (if any) cannot run a stock guest");
        }
        try (FileChannel ignored = FileChannel.open(kvm, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return new Accelerator("kvm", List.of("-accel", "kvm", "-cpu", "host"),
                    "kvm (the CPU has " + flag.group(1) + " and " + kvm + " opens)");
        } catch (IOException | UnsupportedOperationException e) {
            return tcg("the CPU has " + flag.group(1) + " but " + kvm + " does not open: " + e.getMessage());
        }
    }

    private static Accelerator tcg(String why) {
        return new Accelerator("tcg", List.of("-accel", "tcg", "-cpu", "max"), "tcg (" + why + ")");
    }
}
