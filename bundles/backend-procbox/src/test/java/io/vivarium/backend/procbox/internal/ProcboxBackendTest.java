package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;

import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What works without bubblewrap or root. */
class ProcboxBackendTest {

    @TempDir
    Path dir;

    private ProcboxBackend backend(Path bwrap) {
        return new ProcboxBackend(new ProcboxSettings(bwrap, 65534, 65534, dir.resolve("no-cgroups"), false));
    }

    @Test
    void saysHowToInstallBubblewrapWhenItIsMissing() {
        Availability availability = backend(Path.of("/nonexistent/bwrap")).availability();

        assertFalse(availability.available());
        assertEquals("bubblewrap is not installed at /nonexistent/bwrap: apt-get install bubblewrap",
                availability.reason());
    }

    @Test
    void advertisesMemoryLimitsOnlyWithAMemoryCgroup() {
        assertFalse(backend(Path.of("/usr/bin/bwrap")).capabilities().memoryLimit());
    }

    @Test
    void adoptingAnInstanceWhoseInitIsGoneFails() {
        InstanceState state = new InstanceState(Long.MAX_VALUE, new SandboxRecord(
                new InitProcess(Long.MAX_VALUE, "1"), 65534, 65534, null, null, false).toData());

        assertThrows(InstanceGoneException.class,
                () -> backend(Path.of("/usr/bin/bwrap")).adopt(new InstanceSpec("x", dir, null), state));
    }

    @Test
    void destroyingAnUnknownOrGoneInstanceIsANoOp() {
        ProcboxBackend backend = backend(Path.of("/usr/bin/bwrap"));
        InstanceSpec spec = new InstanceSpec("x", dir, null);

        backend.destroy(spec, new InstanceState(0, Map.of()));
        backend.destroy(spec, new InstanceState(Long.MAX_VALUE, new SandboxRecord(
                new InitProcess(Long.MAX_VALUE, "1"), 65534, 65534, null, null, false).toData()));
    }
}
