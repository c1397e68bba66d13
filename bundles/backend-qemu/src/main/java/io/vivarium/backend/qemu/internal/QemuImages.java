package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;


import io.vivarium.api.ApiException;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StoredArtifact;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * A VM's images: files and memory. A capture stops the vCPUs for the device state, RAM and disk
 * ({@link VmCapture}); a compaction makes a standalone copy ({@link VmCompaction}); a fork starts a
 * child that resumes where the VM was.
 */
@Component(service = Images.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME)
public class QemuImages implements Images {

    private final QemuRuntime runtime;

    @Activate
    public QemuImages(@Reference QemuRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String captures() {
        return FILES_AND_MEMORY;
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        return VmCapture.capture(runtime.instances().own(instance), imageDir, storage, context);
    }

    /** Also the device state, and a new {@value VmImage#MANIFEST} naming the compacted RAM and disk ({@link VmCompaction}). */
    @Override
    public CapturedImage compact(Path from, Path to, List<StoredArtifact> artifacts, StorageStrategies storage,
            OperationContext context) throws IOException {
        return VmCompaction.compact(from, to, storage, context);
    }

    @Override
    public String missingArtifact(Path imageDir) {
        return VmImage.missing(imageDir);
    }

    /**
     * A child of the snapshot in {@code imageDir}: its disk an overlay on the snapshot's, its RAM the
     * snapshot's RAM file mapped {@code share=off} (every child shares the file's pages until it
     * writes one; a chained RAM image is first materialised as the child's own flat file), started
     * with {@code -incoming} from the snapshot's device state, then given an identity and fresh
     * entropy of its own ({@link ChildIdentity}).
     */
    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        VmImage snapshot;
        try {
            snapshot = VmImage.read(imageDir);
        } catch (IOException e) {
            throw ApiException.conflict("the VM snapshot in " + imageDir + " cannot be read: " + e.getMessage());
        }
        if (spec.memoryLimitMib() != null && spec.memoryLimitMib() != snapshot.memoryMib()) {
            throw ApiException.badRequest("a child of this snapshot has its " + snapshot.memoryMib() + " MiB of RAM; "
                    + "omit memory_limit_mib");
        }
        GuestImage image = QemuLauncher.image(snapshot.guestImage().getParent(),
                snapshot.guestImage().getFileName().toString());
        QemuLauncher launcher = runtime.launcher();
        VmFiles planned = launcher.plan(spec);
        Instant deadline = Instant.now().plus(runtime.settings().bootTimeout());
        QemuInstance vm = null;
        VmFiles files = planned;
        VmNetwork network = VmNetwork.of(spec);
        try {
            files = launcher.prepare(planned);
            context.checkpoint("making the disk overlay");
            storage.reader(snapshot.disk()).materialise(snapshot.disk(), files.disk(), context);
            // a snapshot of a template's VM: the same root disk, as the device state expects it
            VmRoot root = runtime.rootDisks().rootOf(spec.root(), image, context);
            Path ram = snapshot.memory().path();
            if (snapshot.memory().depth() > 0) {
                context.checkpoint("assembling the snapshot's RAM");
                storage.reader(snapshot.memory()).materialise(snapshot.memory(), files.ram(), context);
                ram = files.ram();
            } else if (!Files.isRegularFile(ram)) {
                // QEMU would make a missing mem-path file, in the image, and run the child on zeroed RAM
                throw new IOException("the snapshot's RAM " + ram + " is gone");
            }
            context.checkpoint("starting QEMU");
            QemuProcess process = launcher.launch(image, files, snapshot.memoryMib(), snapshot.vcpus(),
                    new QemuCommand.Memory(ram, false), snapshot.incoming(), List.of(), root, network);
            vm = new QemuInstance(spec.id(), new VmRecord(process, files, image.dir(), image.agent(),
                    new VmRecord.Memory(snapshot.memoryMib(), snapshot.vcpus(), ram, imageDir), List.of(), root, network));
            vm.watch();
            restoreDevices(vm, imageDir.resolve(VmImage.DEVICES), snapshot.incoming(), deadline, context);
            vm.awaitAgent(deadline, runtime.settings().bootTimeout(), context);
            ChildIdentity.give(vm, spec.id());
            // its RAM holds its parent's address
            QemuLauncher.configureNetwork(vm, context);
            return launcher.register(vm);
        } catch (IOException | RuntimeException e) {
            launcher.abandon(vm, planned, network, e);
            if (e instanceof ApiException api) {
                throw api;
            }
            throw ApiException.internal("sandbox " + spec.id() + " could not be forked from " + imageDir + ": "
                    + e.getMessage() + "; QEMU's last words: " + VmFiles.tail(files.qemuLog(),
                            QemuLauncher.CONSOLE_TAIL_BYTES), e);
        }
    }

    /** Loads the device state into the QEMU waiting with {@code -incoming defer}, and runs the guest. */
    private static void restoreDevices(QemuInstance vm, Path devices, QemuCommand.Incoming incoming, Instant deadline,
            OperationContext context) throws IOException {
        QmpClient qmp = vm.qmp();
        if (incoming == QemuCommand.Incoming.MIGRATION) {
            VmCapture.ignoreShared(qmp, true);
        }
        VmCapture.loadIncoming(qmp, devices, "loading the device state", deadline, context);
        if (incoming == QemuCommand.Incoming.MIGRATION) {
            VmCapture.ignoreShared(qmp, false);
        }
        RunState.cont(qmp);
    }
}
