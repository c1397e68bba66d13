package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;

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
 * process's own PRNG) are the same in every child; only what reads the kernel after is fresh.
 */
final class ChildIdentity {

    static final int SEED_BYTES = 64;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String SCRIPT = "hostname \"$1\" && echo \"$1\" > /etc/hostname && echo \"$2\" > /etc/machine-id"
            + " && { if [ -x /sbin/vivarium-boot ]; then /sbin/vivarium-boot reseed; s=$?; else s=2; fi;"
            // 2: no helper, or one from before it could reseed (its usage error)
            + " if [ $s = 2 ]; then cat > /dev/urandom; else [ $s = 0 ]; fi; }";

    private ChildIdentity() {
    }

    static void give(QemuInstance vm, String id) throws IOException {
        byte[] seed = new byte[SEED_BYTES];
        RANDOM.nextBytes(seed);
        byte[] machineId = new byte[16];
        RANDOM.nextBytes(machineId);
        ExecResult r = vm.channel().exec(new ExecRequest(List.of("sh", "-c", SCRIPT, "sh", id,
                HexFormat.of().formatHex(machineId)), 10, Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "/",
                HexFormat.of().formatHex(seed), 65536));
        if (r.exitCode() != 0 || r.timedOut()) {
            throw new IOException("giving the child its hostname, machine id and entropy failed (exit " + r.exitCode()
                    + "): " + r.stderr());
        }
    }
}
