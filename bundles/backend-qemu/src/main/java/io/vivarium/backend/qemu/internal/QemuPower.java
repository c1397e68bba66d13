package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentException;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Powering a VM off and booting it again: it is stopped in its QEMU and started in the same one,
 * or in a new one for an image with the PVH loader ({@link #bootAgain}). A boot in a new QEMU that
 * does not finish leaves the VM stopped with its disk, for a start again or a delete.
 */
@Component(service = PowerControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME)
public class QemuPower implements PowerControl {

    private static final System.Logger LOG = System.getLogger(QemuPower.class.getName());
    private static final Duration GRACEFUL_STOP = Duration.ofSeconds(10);
    /** Why a VM is stopped whose boot in a new QEMU did not finish ({@link VmFiles#poweredOff}). */
    private static final String POWERED_OFF = "powered off; its last start, in a new QEMU, did not finish";

    private final QemuRuntime runtime;

    @Activate
    public QemuPower(@Reference QemuRuntime runtime) {
        this.runtime = runtime;
    }

    /**
     * Powers the guest off, its QEMU kept (as a guest that powers off itself): the agent syncs and
     * powers off; if that has not happened within {@link #GRACEFUL_STOP}, a reset, which
     * {@code -no-reboot} turns into a shutdown, stops it at once. A daemon that adopts it later
     * reads QEMU's run state and finds it stopped again.
     */
    @Override
    public SandboxInstance stop(SandboxInstance instance, OperationContext context) {
        QemuInstance vm = runtime.instances().own(instance);
        if (vm.status() == SandboxStatus.STOPPED) {
            return vm;
        }
        try {
            vm.agent().shutdown("powerdown", Deadline.after(QemuInstance.PING_WAIT));
        } catch (GuestAgentException e) {
            LOG.log(Level.DEBUG, "sandbox " + vm.id() + ": the agent did not power off (" + e.getMessage()
                    + "); resetting");
        }
        try {
            if (!awaitStopped(vm, Instant.now().plus(GRACEFUL_STOP), context)) {
                vm.qmp().execute("system_reset", null, QemuInstance.QMP_TIMEOUT);
                if (!awaitStopped(vm, context.deadline(), context)) {
                    throw new IOException("it is still " + vm.status().wire());
                }
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot stop sandbox " + vm.id() + ": " + e.getMessage(), e);
        }
        return vm;
    }

    private static boolean awaitStopped(QemuInstance vm, Instant deadline, OperationContext context) throws IOException {
        while (vm.status() != SandboxStatus.STOPPED) {
            if (!vm.alive() || !Instant.now().isBefore(deadline)) {
                return false;
            }
            context.checkpoint("waiting for the guest to power off");
            QemuInstance.sleep(QemuInstance.RETRY_MILLIS, "waiting for the guest to power off");
        }
        return true;
    }

    /**
     * Boots the powered-off guest again from its kernel and its disk: in the same QEMU, whose reset
     * loads the kernel again; or, for an image with the PVH loader, in a new QEMU, since that kernel
     * is written into guest RAM by the backend and the old QEMU's TCG would run its stale
     * translations of the code that ran before (only QEMU's own writes invalidate them).
     */
    @Override
    public SandboxInstance start(SandboxInstance instance, OperationContext context) {
        QemuInstance vm = runtime.instances().own(instance);
        if (vm.status() == SandboxStatus.RUNNING) {
            return vm;
        }
        VmRecord record = vm.record();
        // a new QEMU also when the old one is gone (a boot in a new QEMU that did not finish)
        if (!record.process().isRunning() || Files.isRegularFile(record.image().resolve(GuestImage.LOADER))) {
            try {
                return bootAgain(vm, context);
            } catch (IOException e) {
                throw ApiException.internal("cannot start sandbox " + vm.id() + ": " + e.getMessage(), e);
            }
        }
        try {
            vm.runsAgain();
            // a guest booted again after a power-off resets once more early on (seen here after
            // SeaBIOS), which must not become a shutdown: the reboot action stays reset until it answers
            RunState.resetOutOfShutdown(vm.qmp(), context, () -> {
                RunState.cont(vm.qmp());
                vm.awaitAgent(context.deadline(), context.remaining(), context);
                // the guest booted afresh: its mounts of the volumes are gone with its old memory
                VmVolumes.mount(vm.agent(), record.volumes(), record.root());
            });
        } catch (IOException e) {
            throw ApiException.internal("cannot start sandbox " + vm.id() + ": " + e.getMessage(), e);
        }
        return vm;
    }

    /**
     * Boots the powered-off {@code stopped} again in a new QEMU with the same files (disk, checkpoints'
     * RAM states), its RAM file made afresh with the kernel in it ({@link GuestKernel}): a new
     * process, so a new record for core to persist. Everything that can be checked is checked before
     * the old QEMU goes; a boot that fails after that leaves no QEMU running, the VM's files in place,
     * the error saying so and the VM stopped ({@link VmFiles#poweredOff}): start it again or delete it.
     */
    private QemuInstance bootAgain(QemuInstance stopped, OperationContext context) throws IOException {
        VmRecord old = stopped.record();
        if (old.memory() == null) {
            throw new IOException("it was started by a daemon that did not record its memory size; delete it");
        }
        GuestImage image;
        try {
            image = GuestImage.load(old.image().getParent(), old.image().getFileName().toString());
        } catch (GuestImage.MissingImageException e) {
            throw new IOException(e.getMessage(), e);
        }
        int mib = old.memory().mib();
        Optional<GuestKernel> kernel = QemuLauncher.kernelOf(image);
        if (kernel.isPresent()) {
            kernel.get().checkFits((long) mib << 20);
        }
        VmFiles files = old.files();
        context.checkpoint("booting again");
        QemuInstance.markPoweredOff(old, POWERED_OFF);
        stopped.close();
        QemuLauncher.end(null, files, old.process());
        if (old.process().isRunning()) {
            Files.deleteIfExists(files.poweredOff());
            throw new IOException("its QEMU (pid " + old.process().pid() + ") did not exit, so it was not booted again");
        }
        QemuInstance started;
        try {
            Files.deleteIfExists(files.ram());
            Files.deleteIfExists(files.pidFile());
            Files.deleteIfExists(files.failure());
            Instant boot = Instant.now().plus(runtime.settings().bootTimeout());
            // a fork child boots as a VM of its own RAM; its disk still stands on the snapshot's
            started = runtime.launcher().boot(stopped.id(), image, kernel, files,
                    new VmRecord.Memory(mib, old.memory().vcpus(), null, old.memory().snapshot()), old.volumes(), old.root(),
                    old.network(), boot.isBefore(context.deadline()) ? boot : context.deadline(), context);
        } catch (IOException | RuntimeException e) {
            QemuLauncher.launched(files).ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
            stopped.poweredOff(POWERED_OFF);
            IOException stays = new IOException(e.getMessage() + "; it could not be booted again and stays stopped "
                    + "with its disk (start it again, or delete it); the console's last lines: "
                    + VmFiles.tail(files.console(), QemuLauncher.CONSOLE_TAIL_BYTES), e);
            try {
                // what the failed boot recorded: the VM is stopped, and this error says why
                Files.deleteIfExists(files.failure());
            } catch (IOException left) {
                stays.addSuppressed(left);
            }
            throw stays;
        }
        // the marker stays until an adoption finds a QEMU running: it names the old QEMU, so it does
        // not hold for the new record, and a daemon stopped before core records the new QEMU finds
        // the VM stopped (its record says so) rather than failed
        return started;
    }
}
