package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.testkit.FixedStorage;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the backend says of itself and how a create stores the VM's disk through core's storage,
 * without booting anything: QEMU is a script that leaves no VM running.
 */
class QemuBackendTest {

    @TempDir
    Path dir;
    private Path qemu;
    private QemuRuntime runtime;
    private QemuBackend backend;

    @BeforeEach
    void fakeQemu() throws IOException {
        qemu = dir.resolve("bin/qemu-system-x86_64");
        Files.createDirectories(qemu.getParent());
        // records that it ran, and daemonizes nothing: no pid file, so no VM
        Files.writeString(qemu, "#!/bin/sh\ntouch \"$0.ran\"\n");
        Files.setPosixFilePermissions(qemu, PosixFilePermissions.fromString("rwx------"));
        QemuSettings settings = new QemuSettings(qemu, dir.resolve("images"), "default", 16, 1, Duration.ofSeconds(5),
                dir.resolve("links"), dir.resolve("scratch"));
        runtime = new QemuRuntime(settings, Accelerator.detect(dir.resolve("none"), dir.resolve("none")));
        backend = new QemuBackend(runtime);
    }

    @AfterEach
    void letGo() {
        runtime.close();
    }

    /** A guest image whose files are there (none of them bootable). */
    private void image() throws IOException {
        Path image = Files.createDirectories(dir.resolve("images/default-01"));
        for (String file : List.of(GuestImage.KERNEL, GuestImage.INITRAMFS, GuestImage.WORKSPACE)) {
            Files.writeString(image.resolve(file), file);
        }
        Files.writeString(image.resolve(GuestImage.DESCRIPTION), "{\"cmdline\": \"console=ttyS0\", \"agent\": \"vivarium\"}");
        Files.createSymbolicLink(dir.resolve("images/default"), image.getFileName());
    }

    private InstanceSpec spec(String id) throws IOException {
        return new InstanceSpec(id, Files.createDirectories(dir.resolve("state").resolve(id)), null);
    }

    private static OperationContext context() {
        return OperationContext.until(Instant.now().plusSeconds(30));
    }

    @Test
    void reportsWhatOnlyItKnowsAndStoresDisks() {
        Set<String> always = Set.of(Capability.EXEC, Capability.EVAL, Capability.MEMORY_LIMIT, Capability.IMAGE,
                Capability.VOLUMES, Capability.VOLUME_DISKS, Capability.ROOT_IMAGE);
        boolean network = io.vivarium.common.net.SandboxNetworks.unsupportedReason() == null
                && Files.exists(Path.of("/dev/net/tun"));
        Set<String> expected = new java.util.HashSet<>(always);
        if (network) {
            expected.add(Capability.NETWORK_EGRESS);
        }
        assertEquals(expected, backend.capabilities(), "network_egress only where a root daemon has ip, nft and a tun device");
        assertTrue(Capability.REPORTED.containsAll(backend.capabilities()), "reports no derived capability");
        assertTrue(backend.machine(), "its instances are VMs");
        assertEquals(Set.of(ArtifactKind.DISK), backend.storedKinds(), "so core says it is unavailable without a disk strategy");
        assertEquals("qemu", backend.name());
    }

    @Test
    void availabilityNamesWhatIsMissingAndDetailsSayHowItRuns() throws IOException {
        Files.delete(qemu);
        Availability noQemu = backend.availability();
        assertFalse(noQemu.available());
        assertTrue(noQemu.reason().startsWith(qemu + " is missing"), noQemu.reason());

        fakeQemu();
        Availability noImage = backend.availability();
        assertFalse(noImage.available());
        assertTrue(noImage.reason().contains("no guest image default"), noImage.reason());

        image();
        assertTrue(backend.availability().available(), backend.availability().reason());
        assertTrue(backend.details().get(SandboxBackend.DETAIL_ACCELERATOR).startsWith("tcg ("),
                backend.details().toString());
        assertEquals("q35", backend.details().get(SandboxBackend.DETAIL_PLATFORM));
        assertEquals(dir.resolve("images").toString(), backend.details().get("images"));
        assertEquals(Set.of(SandboxBackend.DETAIL_ACCELERATOR, SandboxBackend.DETAIL_PLATFORM,
                SandboxBackend.DETAIL_ISOLATION, SandboxBackend.DETAIL_AGENT, "images"), backend.details().keySet());
    }

    @Test
    void aCreateMakesTheDiskWithTheStrategyCoreChoosesForDisksInTheInstancesDirectory() throws IOException {
        image();
        Recording disks = new Recording();
        InstanceSpec spec = spec("chosen");

        ApiException e = assertThrows(ApiException.class, () -> backend.create(spec, disks, context()));

        assertEquals(List.of("choose DISK in " + spec.dir(), "materialise " + dir.resolve("images/default-01")
                .toRealPath().resolve(GuestImage.WORKSPACE) + " at " + spec.dir().resolve("disk.qcow2")), disks.calls);
        assertTrue(Files.exists(qemu.resolveSibling(qemu.getFileName() + ".ran")), "then QEMU was started");
        assertEquals(500, e.status());
        assertTrue(e.getMessage().contains("failed to start: QEMU exited right after it started"), e.getMessage());
        assertNothingLeft(spec);
    }

    @Test
    void withoutAStrategyForDisksACreateIs503AndLeavesNothing() throws IOException {
        image();
        InstanceSpec spec = spec("nostorage");

        ApiException e = assertThrows(ApiException.class, () -> backend.create(spec, FixedStorage.of(), context()));

        assertEquals(503, e.status());
        assertTrue(e.getMessage().contains("DISK"), e.getMessage());
        assertFalse(Files.exists(qemu.resolveSibling(qemu.getFileName() + ".ran")), "QEMU was never started");
        assertNothingLeft(spec);
    }

    @Test
    void aDiskStrategyThatSaidItDoesNotWorkHereAndFailsIs503() throws IOException {
        image();
        InstanceSpec spec = spec("unsupported");

        ApiException e = assertThrows(ApiException.class, () -> backend.create(spec, new Recording(false), context()));

        assertEquals(503, e.status());
        assertTrue(e.getMessage().contains("the storage strategy recording cannot make VM disks in " + spec.dir()
                + " on this host: qemu-img is missing"), e.getMessage());
        assertNothingLeft(spec);
    }

    @Test
    void limitsItCannotEnforceAre501() throws IOException {
        image();
        Path instance = spec("limits").dir();
        assertEquals(501, assertThrows(ApiException.class, () -> backend.create(
                new InstanceSpec("limits", instance, null, null, null, 32, null), new Recording(), context())).status());
        assertEquals(501, assertThrows(ApiException.class, () -> backend.create(
                new InstanceSpec("limits", instance, null, null, null, null, 32), new Recording(), context())).status());
    }

    private void assertNothingLeft(InstanceSpec spec) throws IOException {
        try (Stream<Path> left = Files.list(spec.dir())) {
            assertEquals(List.of(), left.toList(), "no file of " + spec.id() + " is left");
        }
        assertFalse(Files.exists(dir.resolve("links").resolve(spec.id()), LinkOption.NOFOLLOW_LINKS), "no link is left");
        try (Stream<Path> scratch = Files.list(dir.resolve("scratch"))) {
            assertEquals(List.of(), scratch.toList(), "nothing of it is left in memory");
        }
    }

    /**
     * Storage that records what the backend asks of it, and whose one strategy for disks writes a
     * file, or, where it says it does not work, fails.
     */
    private static final class Recording implements StorageStrategies, StorageStrategy {
        final List<String> calls = new CopyOnWriteArrayList<>();
        private final boolean works;

        Recording() {
            this(true);
        }

        Recording(boolean works) {
            this.works = works;
        }

        @Override
        public StorageStrategy choose(ArtifactKind kind, Path in) {
            calls.add("choose " + kind + " in " + in);
            return this;
        }

        @Override
        public StorageStrategy reader(StoredArtifact artifact) {
            calls.add("reader " + artifact.mode());
            return this;
        }

        @Override
        public String name() {
            return "recording";
        }

        @Override
        public Set<ArtifactKind> kinds() {
            return Set.of(ArtifactKind.DISK);
        }

        @Override
        public Set<String> modes() {
            return Set.of("recorded");
        }

        @Override
        public boolean supports(ArtifactKind kind, Path in) {
            return works;
        }

        @Override
        public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
                OperationContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context)
                throws IOException {
            calls.add("materialise " + stored.path() + " at " + target);
            if (!works) {
                throw new IOException("qemu-img is missing");
            }
            Files.writeString(target, "overlay");
            return new StoredArtifact(ArtifactKind.DISK, target, "recorded", 7, null, stored, 1);
        }

        @Override
        public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void verify(StoredArtifact stored) {
        }

        @Override
        public void delete(StoredArtifact stored) {
        }
    }
}
