package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.Optional;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.files.AtomicFiles;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * The cold tier of a VM (docs/tiers.md): {@link #save} migrates the whole state of the paused VM,
 * RAM included, to {@code <dir>/cold.state} (written beside, fsynced, then renamed; a VM that would
 * run on after its state was taken would write its disk past it, so it must be paused); {@link #release} quits its QEMU and removes its RAM file, so what it held in memory is freed
 * (its disk stays); {@link #wake} starts a QEMU with the same devices waiting for that stream
 * ({@code -incoming defer}), loads it and runs the guest, its clock set. A cold VM's record names the
 * stream ({@link VmRecord#cold()}), and {@link QemuBackend#adopt} of it ends whatever of the VM still
 * runs (a daemon killed after the record but before the release, or during a wake).
 */
@Component(service = Hibernation.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME)
public class QemuHibernation implements Hibernation {

    static final String STREAM = "cold.state";

    private final QemuRuntime runtime;

    @Activate
    public QemuHibernation(@Reference QemuRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public InstanceState save(SandboxInstance instance, OperationContext context) {
        QemuInstance vm = runtime.instances().own(instance);
        vm.requireQemu();
        if (!VmVolumes.writableRoots(vm.record().volumes()).isEmpty()) {
            throw ApiException.conflict("sandbox " + vm.id() + " has a writable volume as a disk: its guest holds what "
                    + "it wrote there, which a cold state would keep from the volume; it stays warm");
        }
        if (vm.status() != SandboxStatus.PAUSED) {
            throw ApiException.conflict("sandbox " + vm.id() + " is " + vm.status().wire() + ": only a paused VM is saved "
                    + "cold (one that ran on would write its disk past the state taken)");
        }
        Path stream = vm.record().files().dir().resolve(STREAM);
        Path partial = stream.resolveSibling(STREAM + ".partial");
        QmpClient qmp = vm.qmp();
        try {
            Files.deleteIfExists(partial);
            VmCapture.ignoreShared(qmp, false);
            context.checkpoint("saving the VM's state");
            qmp.execute("migrate", JsonNodeFactory.instance.objectNode()
                    .put("uri", "exec:cat > " + VmCapture.shellQuoted(partial)), QemuInstance.QMP_TIMEOUT);
            VmCapture.awaitMigration(qmp, "saving the VM's state", context.deadline(), context);
            AtomicFiles.fsync(partial);
            Files.move(partial, stream, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(partial);
            } catch (IOException left) {
                e.addSuppressed(left);
            }
            if (e instanceof ApiException api) {
                throw api;
            }
            throw ApiException.internal("cannot save the state of sandbox " + vm.id() + ": " + e.getMessage(), e);
        }
        VmRecord cold = vm.record().coldIn(stream);
        return new InstanceState(cold.process().pid(), cold.toData());
    }

    @Override
    public SandboxInstance release(SandboxInstance instance, InstanceState saved) {
        QemuInstance vm = runtime.instances().own(instance);
        VmRecord cold = VmRecord.fromData(saved.data());
        vm.goingCold(true);
        try {
            end(vm, cold);
        } catch (RuntimeException e) {
            vm.goingCold(false);
            throw e;
        }
        return runtime.launcher().register(new QemuInstance(vm.id(), cold));
    }

    /** Quits the QEMU of a VM saved cold (the one its record names, or a wake's the pid file names) and frees its RAM file. */
    static void end(QemuInstance live, VmRecord cold) {
        VmFiles files = cold.files();
        if (live != null) {
            live.close();
        }
        if (cold.process().isRunning()) {
            QemuLauncher.end(live, files, cold.process());
        }
        QemuLauncher.launched(files).ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
        try {
            Files.deleteIfExists(files.ram());
            Files.deleteIfExists(files.pidFile());
        } catch (IOException e) {
            throw ApiException.internal("cannot free the RAM file of cold sandbox " + (live == null ? files.dir() : live.id())
                    + ": " + e.getMessage(), e);
        }
    }

    @Override
    public SandboxInstance wake(SandboxInstance instance, OperationContext context) {
        QemuInstance cold = runtime.instances().own(instance);
        VmRecord record = cold.record();
        if (record.cold() == null) {
            return cold;
        }
        VmFiles files = record.files();
        QemuLauncher launcher = runtime.launcher();
        GuestImage image = QemuLauncher.image(record.image().getParent(), record.image().getFileName().toString());
        VmRecord.Memory memory = new VmRecord.Memory(record.memory().mib(), record.memory().vcpus(), null,
                record.memory().snapshot());
        QemuInstance vm = null;
        try {
            context.checkpoint("starting QEMU for the saved state");
            files.prepare();
            Files.deleteIfExists(files.ram());
            Files.deleteIfExists(files.pidFile());
            QemuLauncher.reserveRam(files, memory.mib());
            QemuProcess process = launcher.launch(image, files, memory.mib(), memory.vcpus(),
                    new QemuCommand.Memory(files.ram(), true), QemuCommand.Incoming.MIGRATION, record.volumes(), record.root(),
                    record.network());
            vm = new QemuInstance(cold.id(), new VmRecord(process, files, record.image(), record.agent(), memory,
                    record.volumes(), record.root(), record.network()));
            vm.watch();
            QmpClient qmp = vm.qmp();
            VmCapture.ignoreShared(qmp, false);
            VmCapture.loadIncoming(qmp, record.cold(), "loading the saved state", context.deadline(), context);
            RunState.cont(qmp);
            vm.awaitAgent(context.deadline(), runtime.settings().bootTimeout(), context);
            vm.channel().setTime(Instant.now());
            // a tap made again (the host rebooted while it slept) may be another /30
            QemuLauncher.configureNetwork(vm, context);
            return launcher.register(vm);
        } catch (IOException | RuntimeException e) {
            Optional.ofNullable(vm).ifPresent(QemuInstance::close);
            QemuLauncher.launched(files).ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
            try {
                Files.deleteIfExists(files.ram());
            } catch (IOException left) {
                e.addSuppressed(left);
            }
            throw ApiException.internal("QEMU could not load " + record.cold() + ": " + e.getMessage(), e);
        }
    }

    /** Deletes the stream the VM was woken from: core recorded it running, no adoption reads it again. */
    @Override
    public void discardSaved(SandboxInstance woken) {
        QemuInstance vm = runtime.instances().own(woken);
        try {
            Files.deleteIfExists(vm.record().files().dir().resolve(STREAM));
        } catch (IOException e) {
            throw ApiException.internal("cannot delete the saved state of sandbox " + vm.id() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public boolean cold(SandboxInstance instance) {
        return runtime.instances().own(instance).record().cold() != null;
    }
}
