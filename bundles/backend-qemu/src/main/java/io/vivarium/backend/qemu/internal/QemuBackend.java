package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.common.net.SandboxNetworks;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Sandboxes as QEMU virtual machines booted from a built guest image ({@link GuestImage}), each
 * a daemonized QEMU that outlives the daemon and is found again from its record ({@link VmRecord}).
 * Inside, the image's agent on a virtio-serial port is the way in ({@link VmChannel}); QMP tells
 * how the VM stands ({@link QemuInstance}). The lifecycle: create (the disk an overlay made through
 * core's storage strategies), adopt, destroy.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME,
        // the seams of this bundle, referenced so that DS registers the backend after them (and unregisters it first)
        reference = {
            @Reference(name = "images", service = Images.class, target = QemuBackend.SEAM_TARGET),
            @Reference(name = "checkpoints", service = Checkpoints.class, target = QemuBackend.SEAM_TARGET),
            @Reference(name = "power", service = PowerControl.class, target = QemuBackend.SEAM_TARGET),
            @Reference(name = "pause", service = PauseControl.class, target = QemuBackend.SEAM_TARGET),
            @Reference(name = "hibernation", service = Hibernation.class, target = QemuBackend.SEAM_TARGET)
        })
public class QemuBackend implements SandboxBackend {

    static final String NAME = "qemu";
    private static final String TUN = "/dev/net/tun";
    static final String SEAM_TARGET = "(" + SandboxBackend.NAME_PROPERTY + "=" + NAME + ")";

    private final QemuRuntime runtime;
    private final QemuLauncher launcher;

    @Activate
    public QemuBackend(@Reference QemuRuntime runtime) {
        this.runtime = runtime;
        this.launcher = runtime.launcher();
    }

    @Override
    public String name() {
        return NAME;
    }

    /**
     * Commands, eval, a memory limit, guest images, volumes as disks of their own, a template's root
     * image; network {@code egress} where the host can give it: a root daemon with {@code ip},
     * {@code nft} and {@value #TUN} (each VM's tap, {@link VmNetwork}).
     */
    @Override
    public Set<String> capabilities() {
        Set<String> always = Set.of(Capability.EXEC, Capability.EVAL, Capability.MEMORY_LIMIT, Capability.IMAGE,
                Capability.VOLUMES, Capability.VOLUME_DISKS, Capability.ROOT_IMAGE);
        if (SandboxNetworks.unsupportedReason() != null || !Files.exists(Path.of(TUN))) {
            return always;
        }
        Set<String> all = new HashSet<>(always);
        all.add(Capability.NETWORK_EGRESS);
        return Set.copyOf(all);
    }

    @Override
    public boolean machine() {
        return true;
    }

    @Override
    public Availability availability() {
        return runtime.probe().availability();
    }

    @Override
    public Map<String, String> details() {
        return runtime.probe().details();
    }

    /** A VM's disk, an overlay on its image's workspace. */
    @Override
    public Set<ArtifactKind> storedKinds() {
        return Set.of(ArtifactKind.DISK);
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        Availability availability = availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
        if (spec.pidsLimit() != null) {
            throw ApiException.notImplemented("pids_limit is not supported by qemu: a guest's processes are "
                    + "bounded by its memory_limit_mib; omit it");
        }
        if (spec.diskLimitMib() != null) {
            throw ApiException.notImplemented("disk_limit_mib is not supported by qemu: the workspace is the "
                    + "image's disk; omit it");
        }
        QemuSettings settings = runtime.settings();
        GuestImage image = launcher.image(spec.image() == null ? settings.defaultImage() : spec.image());
        int memoryMib = spec.memoryLimitMib() == null ? settings.defaultMemoryMib() : spec.memoryLimitMib();
        int vcpus = spec.vcpus() == null ? settings.defaultVcpus() : spec.vcpus();
        VmFiles planned = launcher.plan(spec);
        Instant bootDeadline = Instant.now().plus(settings.bootTimeout());
        VmFiles files = planned;
        VmNetwork network = VmNetwork.of(spec);
        try {
            files = launcher.prepare(planned);
            context.checkpoint("making the disk overlay");
            makeDisk(storage.choose(ArtifactKind.DISK, spec.dir()), image, files, spec, context);
            VmRoot root = runtime.rootDisks().rootOf(spec.root(), image, context);
            return launcher.boot(spec.id(), image, QemuLauncher.kernelOf(image), files,
                    new VmRecord.Memory(memoryMib, vcpus, null, null), VmVolume.of(spec.volumes()), root, network,
                    bootDeadline, context);
        } catch (IOException | RuntimeException e) {
            launcher.abandon(null, planned, network, e);
            if (e instanceof ApiException api) {
                throw api;
            }
            throw ApiException.internal("sandbox " + spec.id() + " failed to start: " + e.getMessage()
                    + "; the console's last lines: " + VmFiles.tail(files.console(), QemuLauncher.CONSOLE_TAIL_BYTES), e);
        }
    }

    /**
     * The VM's disk, an overlay on (or a copy of) the image's workspace; a 503 when the strategy
     * chosen said beforehand that it does not work here (qcow2 without qemu-img) and it did not.
     */
    private static void makeDisk(StorageStrategy disks, GuestImage image, VmFiles files, InstanceSpec spec,
            OperationContext context) throws IOException {
        try {
            disks.materialise(image.storedWorkspace(), files.disk(), context);
        } catch (IOException e) {
            if (disks.supports(ArtifactKind.DISK, spec.dir())) {
                throw e;
            }
            throw new ApiException(503, "the storage strategy " + disks.name() + " cannot make VM disks in "
                    + spec.dir() + " on this host: " + e.getMessage(), null, e);
        }
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        VmRecord record;
        try {
            record = VmRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        if (record.cold() != null) {
            // whatever of it still runs: its QEMU (a daemon killed before the release), or a wake's
            QemuHibernation.end(null, record);
            return launcher.register(new QemuInstance(spec.id(), record));
        }
        if (!record.process().isRunning()) {
            Optional<String> off = QemuInstance.poweredOffWithoutQemu(record);
            if (off.isEmpty()) {
                throw new InstanceGoneException(QemuInstance.exitReason(record));
            }
            // a boot in a new QEMU that a daemon stop cut short, before or after it ran: core never
            // recorded that QEMU, and its record says stopped, so the VM is stopped
            QemuLauncher.launched(record.files()).ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
            QemuInstance vm = new QemuInstance(spec.id(), record);
            vm.poweredOff(off.get());
            return launcher.register(vm);
        }
        QemuInstance vm = new QemuInstance(spec.id(), record);
        try {
            // a daemon stopped before a boot in a new QEMU let this one go: it is still the VM's
            Files.deleteIfExists(record.files().poweredOff());
            // the link lives in a temporary directory, which a reboot of the host could have emptied
            record.files().prepare();
            vm.watch();
        } catch (IOException e) {
            vm.close();
            throw ApiException.internal("cannot reach the monitor of sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
        return launcher.register(vm);
    }

    /**
     * Freezes the VM's writable volumes before its QEMU goes ({@link VmVolumes#freezeBeforeEnd}),
     * through the VM this revision watches, else (a delete before an adoption) one it watches for this.
     */
    private static void freezeVolumes(String id, QemuInstance live, VmRecord record) {
        if (live != null) {
            VmVolumes.freezeBeforeEnd(live);
            return;
        }
        try (QemuInstance vm = new QemuInstance(id, record)) {
            vm.watch();
            VmVolumes.freezeBeforeEnd(vm);
        } catch (IOException e) {
            throw new ApiException(409, "cannot reach the monitor of sandbox " + id + " to freeze its writable volumes "
                    + "before it stops: " + e.getMessage() + "; it keeps running, its volumes reserved; retry, or delete it with "
                    + "?force=true (without the freeze: what its guest had not written back is lost)", null, e);
        }
    }

    /** Asks QEMU to quit (its writable volumes frozen first), kills it if it does not, and removes the VM's files. */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        destroy(spec, state, true);
    }

    /** {@link #destroy} without the freeze of the writable volumes: what the guest had not written back is lost. */
    @Override
    public void destroyForcibly(InstanceSpec spec, InstanceState state) {
        destroy(spec, state, false);
    }

    private void destroy(InstanceSpec spec, InstanceState state, boolean freeze) {
        QemuInstance live = runtime.instances().get(spec.id()).orElse(null);
        VmRecord record;
        try {
            record = VmRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            // no recorded state: the daemon stopped before create returned
            record = null;
        }
        VmFiles files = record != null ? record.files() : launcher.plan(spec);
        // with no record, or a recorded QEMU that is gone: the one the pid file names (a create or a
        // boot in a new QEMU that a daemon stop cut short, which no record names), if it runs
        Optional<QemuProcess> process = record != null && record.process().isRunning() ? Optional.of(record.process())
                : QemuLauncher.launched(files);
        if (process.filter(QemuProcess::isRunning).isPresent()) {
            if (freeze && record != null && !record.volumes().isEmpty()) {
                freezeVolumes(spec.id(), live, record);
            }
            QemuLauncher.end(live, files, process.get());
        }
        // lets go of the VM's connections, which the quit above went through
        runtime.instances().remove(spec.id());
        // with no record: the network a create cut short may have made
        launcher.removeNetwork(record != null ? record.network() : VmNetwork.of(spec));
        try {
            files.remove();
        } catch (IOException e) {
            throw ApiException.internal("cannot remove the files of sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
        if (process.filter(QemuProcess::isRunning).isPresent()) {
            throw ApiException.internal("QEMU of sandbox " + spec.id() + " (pid " + process.get().pid()
                    + ") did not exit", null);
        }
    }
}
