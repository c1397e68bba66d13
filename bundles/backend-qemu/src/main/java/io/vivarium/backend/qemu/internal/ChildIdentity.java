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
 * the guest's {@code /dev/urandom} (mixed into the input pool) and, where the image has the
 * {@code vivarium-reseed} helper, credits them and forces a reseed of the kernel's generator
 * ({@code RNDADDENTROPY}, {@code RNDRESEEDCRNG}); the hostname becomes the sandbox id and
 * {@code /etc/machine-id} a new random id.
 */
final class ChildIdentity {

    static final int SEED_BYTES = 64;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String SCRIPT = "hostname \"$1\" && echo \"$1\" > /etc/hostname && echo \"$2\" > /etc/machine-id"
            + " && if [ -x /sbin/vivarium-reseed ]; then /sbin/vivarium-reseed; else cat > /dev/urandom; fi";

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
