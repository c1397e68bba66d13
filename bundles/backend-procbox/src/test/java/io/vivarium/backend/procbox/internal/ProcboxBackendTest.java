package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.Capability;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.FakeBackend;
import io.vivarium.testkit.FixedStorage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What works without bubblewrap or root. */
class ProcboxBackendTest {

    @TempDir
    Path dir;

    private ProcboxBackend backend(Path bwrap) {
        return new ProcboxBackend(new ProcboxRuntime(new ProcboxSettings(bwrap, 65534, 65534, dir.resolve("no-cgroups"),
                false)));
    }

    @Test
    void saysHowToInstallBubblewrapWhenItIsMissing() {
        Availability availability = backend(Path.of("/nonexistent/bwrap")).availability();

        assertFalse(availability.available());
        assertEquals("bubblewrap is not installed at /nonexistent/bwrap: apt-get install bubblewrap",
                availability.reason());
    }

    @Test
    void advertisesMemoryAndPidsLimitsOnlyWithTheirCgroups() {
        Set<String> capabilities = backend(Path.of("/usr/bin/bwrap")).capabilities();

        assertFalse(capabilities.contains(Capability.MEMORY_LIMIT), capabilities.toString());
        assertFalse(capabilities.contains(Capability.PIDS_LIMIT), capabilities.toString());
    }

    @Test
    void reportsExecAndEvalAndNothingCoreDerives() {
        ProcboxBackend backend = backend(Path.of("/usr/bin/bwrap"));
        Set<String> capabilities = backend.capabilities();

        assertTrue(capabilities.containsAll(Set.of(Capability.EXEC, Capability.EVAL)), capabilities.toString());
        assertTrue(Capability.REPORTED.containsAll(capabilities), capabilities.toString());
        assertFalse(capabilities.contains(Capability.IMAGE), "procbox starts no image: " + capabilities);
        assertFalse(backend.machine(), "a process sandbox is no machine");
    }

    @Test
    void adoptingAnInstanceWhoseInitIsGoneFails() {
        InstanceState state = new InstanceState(Long.MAX_VALUE, new ProcboxRecord(
                new InitProcess(Long.MAX_VALUE, "1"), 65534, 65534, null, null, false).toData());

        assertThrows(InstanceGoneException.class,
                () -> backend(Path.of("/usr/bin/bwrap")).adopt(new InstanceSpec("x", dir, null), state));
    }

    @Test
    void destroyingAnUnknownOrGoneInstanceIsANoOp() throws IOException {
        ProcboxBackend backend = backend(Path.of("/usr/bin/bwrap"));
        InstanceSpec spec = new InstanceSpec("x", dir, null);
        Path kept = Files.writeString(Files.createDirectories(dir.resolve("work")).resolve("kept"), "k");

        assertDoesNotThrow(() -> backend.destroy(spec, new InstanceState(0, Map.of())));
        assertDoesNotThrow(() -> backend.destroy(spec, new InstanceState(Long.MAX_VALUE, new ProcboxRecord(
                new InitProcess(Long.MAX_VALUE, "1"), 65534, 65534, null, null, false).toData())));
        assertEquals("k", Files.readString(kept), "the workspace is core's to delete");
    }

    @Test
    void theSeamsRefuseAnInstanceOfAnotherBackend() {
        ProcboxRuntime runtime = new ProcboxRuntime(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                dir.resolve("no-cgroups"), false));
        SandboxInstance foreign = new FakeBackend().create(new InstanceSpec("f", dir, null), FixedStorage.of(),
                OperationContext.until(Instant.now().plusSeconds(60)));
        ExecRequest request = new ExecRequest(List.of("true"), 5, Map.of(), "/work", null, 100);

        assertThrows(IllegalArgumentException.class, () -> new ProcboxScratchRuns(runtime).run(foreign, request));
        assertThrows(IllegalArgumentException.class, () -> new ProcboxImages(runtime).capture(foreign,
                dir.resolve("image"), FixedStorage.of(), OperationContext.until(Instant.now().plusSeconds(60))));
    }

    @Test
    void aDaemonThatCannotMountTheWalkViewSaysTheWalkIsDegraded() {
        Optional<String> degraded = WalkView.degradation(dir.resolve("missing"));

        assertTrue(degraded.isPresent());
        assertTrue(degraded.get().startsWith("walk degraded: "), degraded.get());
    }

}
