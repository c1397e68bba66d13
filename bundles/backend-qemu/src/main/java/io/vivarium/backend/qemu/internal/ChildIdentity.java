package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;

import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.ExecSpec;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.kit.guest.GuestExecResult;

/**
 * What makes a child restored from a snapshot its own: the snapshot's guest has the parent's
 * hostname, machine id and, worse, the parent's kernel random state, which every child would go
 * on from. The image's 6.1 cloud kernel has no vmgenid driver ({@code CONFIG_VIRT_DRIVERS} is not
 * set), so QEMU's {@code -device vmgenid} would not reach it: instead, right after the restore and
 * before anyone can exec, the host writes {@value #SEED_BYTES} bytes of its own randomness into
 * the guest's kernel: {@code vivarium-boot reseed} (guest-agent/boot) adds them to the input pool,
 * credits them ({@code RNDADDENTROPY}) and reseeds the generator at once ({@code RNDRESEEDCRNG}),
 * so that even a snapshot of a guest up for minutes, whose generator would otherwise reseed only
 * every 60 s, gives each child its own random stream from its first read. An image without that
 * helper (built before it, or a foreign one) gets the bytes written into {@code /dev/urandom}:
 * mixed in, but used only at the kernel's next reseed. The hostname becomes the sandbox id and
 * {@code /etc/machine-id} a new random id. Userspace generators seeded before the snapshot (a
 * process's own PRNG) are the same in every child; only what reads the kernel after is fresh. A
 * child on a template image's root ({@link VmRoot}) gets its hostname and entropy through the guest's
 * own busybox and helper in {@value VmRoot#TOOLS}; its {@code /etc} is the image's, read-only, so
 * its {@code /etc/hostname} and {@code /etc/machine-id} stay the image's. It runs as root, whoever
 * the client's commands run as.
 */
final class ChildIdentity {

    static final int SEED_BYTES = 64;
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final SecureRandom RANDOM = new SecureRandom();
    /** $1 the id, $2 the machine id, $3 the reseeding helper, $4 {@code read-only} for a root whose /etc stays as it is. */
    private static final String SCRIPT = "hostname \"$1\" && { [ \"$4\" = read-only ] || { echo \"$1\" > /etc/hostname"
            + " && echo \"$2\" > /etc/machine-id; }; }"
            + " && { if [ -x \"$3\" ]; then \"$3\" reseed; s=$?; else s=2; fi;"
            // 2: no helper, or one from before it could reseed (its usage error)
            + " if [ $s = 2 ]; then cat > /dev/urandom; else [ $s = 0 ]; fi; }";

    private ChildIdentity() {
    }

    static void give(QemuInstance vm, String id) throws IOException {
        byte[] seed = new byte[SEED_BYTES];
        RANDOM.nextBytes(seed);
        byte[] machineId = new byte[16];
        RANDOM.nextBytes(machineId);
        VmRoot root = vm.record().root();
        ExecSpec spec = VmRoot.script(root, SCRIPT, "sh", id, HexFormat.of().formatHex(machineId),
                        (root == null ? "/sbin" : VmRoot.TOOLS) + "/vivarium-boot", root == null ? "" : "read-only")
                .withStdin(HexFormat.of().formatHex(seed).getBytes(StandardCharsets.US_ASCII)).withTimeout(TIMEOUT);
        GuestExecResult r;
        try {
            r = vm.agent().exec(spec, Deadline.after(TIMEOUT.plusSeconds(5)));
        } catch (GuestAgentException e) {
            throw new IOException("giving the child its hostname, machine id and entropy failed: " + e.getMessage(), e);
        }
        if (r.exitCode() == null || r.exitCode() != 0) {
            throw new IOException("giving the child its hostname, machine id and entropy failed (exit " + r.exitCode()
                    + "): " + new String(r.stderr(), StandardCharsets.UTF_8));
        }
    }
}
