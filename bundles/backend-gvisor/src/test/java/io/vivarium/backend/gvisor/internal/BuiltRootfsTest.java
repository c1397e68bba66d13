package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A container on the root filesystem build-rootfs.sh builds: Debian's python3 runs, the root stays read-only. */
class BuiltRootfsTest {

    @TempDir
    Path tmp;

    @Test
    void python3RunsOnTheBuiltReadOnlyRoot() {
        GvisorHost.assumeRunsc();
        Path rootfs = GvisorHost.assumeBuiltRootfs();
        InstanceSpec spec = new InstanceSpec("built", tmp.resolve("built"), null);
        try (Revision revision = GvisorHost.revision(tmp, Optional.of(rootfs))) {
            SandboxInstance i = revision.create(spec);
            try {
                ExecResult py = i.channel().exec(new ExecRequest(List.of("python3", "-c", "print(6 * 7)"), 20,
                        Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 16));
                assertEquals("42\n", py.stdout(), py.stderr());
                ExecResult write = i.channel().exec(new ExecRequest(List.of("/bin/sh", "-c", "echo x > /etc/x"), 20,
                        Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 16));
                assertNotEquals(0, write.exitCode(), "the root filesystem is read-only");
            } finally {
                revision.backend().destroy(spec, i.state());
            }
        }
    }
}
