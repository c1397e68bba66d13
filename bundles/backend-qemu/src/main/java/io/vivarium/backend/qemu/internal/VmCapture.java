package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.FileClones;

/**
 * Captures a running VM into a snapshot image ({@link VmImage}) while its vCPUs are stopped: the
 * device state, the RAM and the disk, then it runs on. A VM that writes its own RAM file
 * ({@code share=on}: booted) migrates to a file with {@code x-ignore-shared}, which leaves the RAM
 * file out of the stream, and the RAM file is stored as it is (a reflink where the filesystem
 * clones). A forked child maps its snapshot's RAM privately ({@code share=off}), which QEMU 7.2
 * would copy into a migration stream whole: its device state is saved alone
 * ({@code xen-save-devices-state}, any accelerator), the pages it wrote are read while it is
 * stopped ({@link DirtyPages}), and once it runs again its RAM is stored as a flat file: the
 * parent's RAM materialised with those pages written over it, handed to the MEMORY strategy with
 * the parent artifact (a page-diff strategy then keeps only the differing pages).
 */
final class VmCapture {

    private static final System.Logger LOG = System.getLogger(VmCapture.class.getName());
    private static final FileClones CLONES = new FileClones();
    private static final Duration QMP = Duration.ofSeconds(30);
    private static final long POLL_MILLIS = 2;

    private VmCapture() {
    }

    static CapturedImage capture(QemuInstance vm, Path imageDir, StorageStrategies storage, OperationContext context) {
        VmRecord record = vm.record();
        VmRecord.Memory memory = record.memory();
        if (memory == null) {
            throw ApiException.conflict("sandbox " + vm.id() + " was started before guest RAM was kept in a file and "
                    + "cannot be captured; create it again");
        }
        if (vm.status() != SandboxStatus.RUNNING && vm.status() != SandboxStatus.PAUSED) {
            throw ApiException.conflict("sandbox " + vm.id() + " is " + vm.status().wire() + ": only a running or paused "
                    + "VM can be captured");
        }
        if (!memory.shared()) {
            String gone = VmImage.missing(memory.snapshot());
            if (gone != null) {
                throw ApiException.conflict("sandbox " + vm.id() + " runs on, but a branch of it needs the snapshot it was "
                        + "forked from, whose RAM and disk it is stored on, and " + gone
                        + " (the snapshot was deleted with force?)");
            }
        }
        StorageStrategy memoryStore = storage.choose(ArtifactKind.MEMORY, imageDir);
        StorageStrategy diskStore = storage.choose(ArtifactKind.DISK, imageDir);
        QmpClient qmp = vm.qmp();
        Path devices = imageDir.resolve(VmImage.DEVICES);
        Path frozenRam = record.files().branchRam();
        Path frozenDisk = record.files().frozenDisk();
        try {
            Files.deleteIfExists(frozenRam);
            Files.deleteIfExists(frozenDisk);
            context.checkpoint("pausing sandbox " + vm.id());
            boolean running = "running".equals(RunState.of(qmp));
            long start = System.nanoTime();
            DirtyPages dirty = null;
            qmp.execute("stop", null, QMP);
            try {
                // the disk was flushed by the stop; the migration's end would touch it again, so it goes first
                if (memory.shared()) {
                    migrateDevicesTo(qmp, devices, context);
                } else {
                    qmp.execute("xen-save-devices-state", JsonNodeFactory.instance.objectNode()
                            .put("filename", devices.toString()).put("live", false), QMP);
                }
                // while stopped, only clones (or, where the filesystem has none, copies) of what changes are
                // made, side by side; the strategies store them (and hash, or diff them) once the VM runs again
                CompletableFuture<String> disk = CompletableFuture.supplyAsync(() -> {
                    try {
                        return CLONES.cloneOrCopy(record.files().disk(), frozenDisk,
                                () -> HostCommand.timeFor(context.remaining()));
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }, Thread::startVirtualThread);
                if (memory.shared()) {
                    CLONES.cloneOrCopy(record.files().ram(), frozenRam, () -> HostCommand.timeFor(context.remaining()));
                } else {
                    dirty = DirtyPages.read(record.process().pid(), memory.base());
                }
                join(disk);
            } finally {
                if (running) {
                    qmp.execute("cont", null, QMP);
                }
            }
            long pauseMillis = (System.nanoTime() - start) / 1_000_000;
            StoredArtifact ram = dirty == null
                    ? memoryStore.store(ArtifactKind.MEMORY, frozenRam, null, imageDir.resolve(VmImage.RAM), context)
                    : storeChildRam(vm, dirty, imageDir, storage, memoryStore, context);
            StoredArtifact disk = diskStore.store(ArtifactKind.DISK, frozenDisk, null, imageDir.resolve(VmImage.DISK),
                    context);
            new VmImage(memory.mib(), memory.vcpus(), record.image(), record.agent(),
                    memory.shared() ? QemuCommand.Incoming.MIGRATION : QemuCommand.Incoming.DEVICES, ram, disk)
                    .write(imageDir);
            return new CapturedImage(List.of(ram, disk), pauseMillis, Images.FILES_AND_MEMORY);
        } catch (IOException e) {
            throw ApiException.internal("cannot capture sandbox " + vm.id() + ": " + e.getMessage(), e);
        } finally {
            deleteQuietly(frozenRam);
            deleteQuietly(frozenDisk);
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot delete " + file + " after a capture: " + e.getMessage());
        }
    }

    private static <T> T join(CompletableFuture<T> stored) throws IOException {
        try {
            return stored.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof UncheckedIOException u ? u.getCause() : e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new IOException(cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while cloning the disk", e);
        }
    }

    /** Device state and the small RAM blocks (firmware, ROMs) to {@code target}; the RAM file stays out. */
    private static void migrateDevicesTo(QmpClient qmp, Path target, OperationContext context) throws IOException {
        ignoreShared(qmp, true);
        try {
            qmp.execute("migrate", JsonNodeFactory.instance.objectNode().put("uri", "exec:cat > " + shellQuoted(target)),
                    QMP);
            awaitMigration(qmp, "saving the device state", Instant.now().plus(QMP), context);
        } finally {
            ignoreShared(qmp, false);
        }
    }

    /** {@code x-ignore-shared} only around a capture or a restore: a checkpoint (savevm) must save the RAM. */
    static void ignoreShared(QmpClient qmp, boolean on) throws IOException {
        ObjectNode capability = JsonNodeFactory.instance.objectNode().put("capability", "x-ignore-shared").put("state", on);
        ObjectNode arguments = JsonNodeFactory.instance.objectNode();
        arguments.putArray("capabilities").add(capability);
        qmp.execute("migrate-set-capabilities", arguments, QMP);
    }

    /** Loads the migration stream in {@code stream} into a QEMU waiting with {@code -incoming defer}; waits until it is in. */
    static void loadIncoming(QmpClient qmp, Path stream, String what, Instant deadline, OperationContext context)
            throws IOException {
        context.checkpoint(what);
        qmp.execute("migrate-incoming", JsonNodeFactory.instance.objectNode().put("uri", "exec:cat " + shellQuoted(stream)),
                QMP);
        awaitMigration(qmp, what, deadline, context);
    }

    /** Waits for the migration (out or in) to complete; its error otherwise. */
    static void awaitMigration(QmpClient qmp, String what, Instant deadline, OperationContext context) throws IOException {
        while (true) {
            JsonNode state = qmp.execute("query-migrate", null, QMP);
            String status = state.path("status").asText();
            switch (status) {
                case "completed" -> {
                    return;
                }
                case "failed", "cancelled" -> throw new IOException(what + " failed: "
                        + state.path("error-desc").asText(status));
                default -> { }
            }
            if (Instant.now().isAfter(deadline)) {
                throw new IOException(what + " did not complete in time (" + status + ")");
            }
            context.checkpoint(what);
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while " + what, e);
            }
        }
    }

    private static StoredArtifact storeChildRam(QemuInstance vm, DirtyPages dirty, Path imageDir,
            StorageStrategies storage, StorageStrategy memoryStore, OperationContext context) throws IOException {
        VmRecord record = vm.record();
        StoredArtifact parent = VmImage.read(record.memory().snapshot()).memory();
        Path flat = record.files().branchRam();
        context.checkpoint("assembling the RAM of sandbox " + vm.id());
        storage.reader(parent).materialise(parent, flat, context);
        dirty.writeOver(flat);
        return memoryStore.store(ArtifactKind.MEMORY, flat, parent, imageDir.resolve(VmImage.RAM), context);
    }

    /** {@code path} in single quotes for the shell QEMU runs an {@code exec:} migration in. */
    static String shellQuoted(Path path) {
        return "'" + path.toString().replace("'", "'\\''") + "'";
    }
}
