package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.FileClones;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Sandboxes as QEMU virtual machines booted from a built guest image ({@link GuestImage}), each
 * a daemonized QEMU that outlives the daemon and is found again from its record ({@link VmRecord}).
 * Inside, the image's agent on a virtio-serial port is the way in ({@link VmChannel}); QMP tells
 * how the VM stands ({@link QemuInstance}).
 */
final class QemuBackend implements SandboxBackend, Images, AutoCloseable {

    static final String NAME = "qemu";

    /** A guest's RAM file in the scratch directory in memory is {@code <id>} followed by this. */
    static final String RAM_IN_MEMORY_SUFFIX = ".memory.ram";
    private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration QUIT_WAIT = Duration.ofSeconds(3);
    private static final int CONSOLE_TAIL_BYTES = 2000;
    /** Why a VM is stopped whose boot in a new QEMU did not finish ({@link VmFiles#poweredOff}). */
    private static final String POWERED_OFF = "powered off; its last start, in a new QEMU, did not finish";
    private static final System.Logger LOG = System.getLogger(QemuBackend.class.getName());
    private static final FileClones CLONES = new FileClones();
    /** A VM's console and QEMU log: past 1 MiB, cut to the last 256 KiB, looked at every 5 s. */
    private static final BoundedLog LOG_BOUND = new BoundedLog(1 << 20, 256 << 10);
    private static final long CAP_EVERY_SECONDS = 5;

    private final QemuSettings settings;
    private final Accelerator accelerator;
    private final DiskStorage disks;
    /** The VMs this revision created or adopted, let go of when it closes. */
    private final Map<String, QemuInstance> instances = new ConcurrentHashMap<>();
    private final ScheduledExecutorService logCapper = Executors.newSingleThreadScheduledExecutor(
            Thread.ofVirtual().name("qemu log cap").factory());

    QemuBackend(QemuSettings settings, Accelerator accelerator, DiskStorage disks) {
        this.settings = settings;
        this.accelerator = accelerator;
        this.disks = disks;
        logCapper.scheduleWithFixedDelay(this::capLogs, CAP_EVERY_SECONDS, CAP_EVERY_SECONDS, TimeUnit.SECONDS);
    }

    private void capLogs() {
        for (QemuInstance vm : instances.values()) {
            VmFiles files = vm.record().files();
            for (Path log : List.of(files.console(), files.qemuLog())) {
                try {
                    LOG_BOUND.cap(log);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot cut " + log + " of sandbox " + vm.id() + ": " + e.getMessage());
                }
            }
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Capabilities capabilities() {
        return new Capabilities(true, false, false, false, false, false, true, true, true, true, true);
    }

    @Override
    public Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(DETAIL_ACCELERATOR, accelerator.reason());
        d.put(DETAIL_PLATFORM, "q35");
        d.put(DETAIL_ISOLATION, "a QEMU virtual machine per sandbox, without a network");
        d.put(DETAIL_AGENT, "the image's guest agent on a virtio-serial port");
        d.put("images", settings.imageDir().toString());
        disks.forDir(settings.imageDir()).ifPresent(s -> d.put("disk_storage", s.name()));
        return d;
    }

    /** Checked on every call, so installing QEMU or building the image makes the backend available. */
    @Override
    public Availability availability() {
        if (!Files.isExecutable(settings.qemu())) {
            return Availability.no(settings.qemu() + " is missing: apt-get install qemu-system-x86");
        }
        if (disks.forDir(settings.imageDir()).isEmpty()) {
            return Availability.no(disks.missing(settings.imageDir()));
        }
        try {
            GuestImage.load(settings.imageDir(), settings.defaultImage());
        } catch (GuestImage.MissingImageException e) {
            return Availability.no(e.getMessage());
        }
        return Availability.yes();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        return create(spec, OperationContext.until(Instant.now().plus(settings.bootTimeout()).plus(TOOL_TIMEOUT)));
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, OperationContext context) {
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
        GuestImage image = image(spec.image() == null ? settings.defaultImage() : spec.image());
        int memoryMib = spec.memoryLimitMib() == null ? settings.defaultMemoryMib() : spec.memoryLimitMib();
        int vcpus = spec.vcpus() == null ? settings.defaultVcpus() : spec.vcpus();
        VmFiles planned = VmFiles.of(spec.dir(), settings.linkDir(), settings.scratchDir(), spec.id(),
                ramInMemory(spec.dir()));
        Instant bootDeadline = Instant.now().plus(settings.bootTimeout());
        VmFiles files = planned;
        try {
            planned.prepare();
            files = withVmstate(planned);
            context.checkpoint("making the disk overlay");
            StorageStrategy storage = disks.forDir(spec.dir())
                    .orElseThrow(() -> new ApiException(503, disks.missing(spec.dir())));
            storage.materialise(image.storedWorkspace(), files.disk(), context);
            return boot(spec.id(), image, kernelOf(image), files, new VmRecord.Memory(memoryMib, vcpus, null, null),
                    bootDeadline, context);
        } catch (IOException | RuntimeException e) {
            abandon(null, planned, e);
            if (e instanceof ApiException api) {
                throw api;
            }
            throw ApiException.internal("sandbox " + spec.id() + " failed to start: " + e.getMessage()
                    + "; the console's last lines: " + VmFiles.tail(files.console(), CONSOLE_TAIL_BYTES), e);
        }
    }

    /** The guest's RAM file in memory unless {@code dir}'s file system clones files, as a capture then does with it. */
    private static boolean ramInMemory(Path dir) {
        return !CLONES.clones(dir);
    }

    /**
     * Makes the VM's {@link VmFiles#vmstate()} qcow2 (QEMU opens it, so it must exist first); without
     * {@code qemu-img} beside QEMU the VM does without one, its checkpoints whole in its disk.
     */
    private VmFiles withVmstate(VmFiles files) {
        Path qemuImg = settings.qemu().resolveSibling("qemu-img");
        try {
            HostCommand.run(List.of(qemuImg.toString(), "create", "-q", "-f", "qcow2", files.vmstate().toString(),
                    "1M"), TOOL_TIMEOUT);
            return files;
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "no RAM-state file for the checkpoints of " + files.dir()
                    + " (they go whole into its disk): " + e.getMessage());
            return files.withoutVmstate();
        }
    }

    /**
     * Reserves the disk space of the guest's RAM file before QEMU maps it: a guest that writes a
     * page of a {@code share=on} file on a full filesystem gets QEMU killed by SIGBUS, so a create
     * without room fails here, saying so. The blocks are allocated, not written (a reflink of the file
     * stays cheap; the file's page cache is only what the guest touches). A RAM file in memory
     * ({@link VmFiles#ramInMemory()}) is only checked for room and left sparse: allocating it would
     * take the guest's whole RAM from the host at once, where a guest takes what it touches.
     */
    static void reserveRam(VmFiles files, int memoryMib) throws IOException {
        long bytes = (long) memoryMib << 20;
        if (files.ramInMemory()) {
            // sparse (backed as the guest writes), so the room is checked against what the others may still take
            Path dir = files.ram().getParent();
            FileStore store = Files.getFileStore(dir);
            long free = store.getUsableSpace();
            long promised;
            try (Stream<Path> rams = Files.list(dir)) {
                promised = rams.filter(p -> p.getFileName().toString().endsWith(RAM_IN_MEMORY_SUFFIX)
                        && !p.equals(files.ram())).mapToLong(p -> p.toFile().length()).sum();
            }
            if (free < bytes || promised + bytes > store.getTotalSpace()) {
                throw new ApiException(503, "no room for the guest's " + memoryMib + " MiB RAM file in " + dir
                        + ": " + (free >> 20) + " MiB free of " + (store.getTotalSpace() >> 20) + " MiB, and the RAM "
                        + "files of the VMs there may take " + (promised >> 20) + " MiB; stop a VM or give " + dir
                        + "'s file system more room", null, null);
            }
            try (RandomAccessFile ram = new RandomAccessFile(files.ram().toFile(), "rw")) {
                ram.setLength(bytes);
            }
            return;
        }
        try {
            HostCommand.run(List.of("fallocate", "-l", memoryMib + "MiB", files.ram().toString()), TOOL_TIMEOUT);
        } catch (IOException e) {
            throw new ApiException(503, "no room for the guest's " + memoryMib + " MiB RAM file in " + files.dir()
                    + ": " + e.getMessage(), null, e);
        }
    }

    @Override
    public String captures() {
        return FILES_AND_MEMORY;
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        return VmCapture.capture(vm(instance), imageDir, storage, context);
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
        String missing = missingArtifact(imageDir);
        if (missing != null) {
            throw ApiException.conflict(missing);
        }
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
        GuestImage image = image(snapshot.guestImage().getParent(), snapshot.guestImage().getFileName().toString());
        VmFiles planned = VmFiles.of(spec.dir(), settings.linkDir(), settings.scratchDir(), spec.id(),
                ramInMemory(spec.dir()));
        Instant deadline = Instant.now().plus(settings.bootTimeout());
        QemuInstance vm = null;
        VmFiles files = planned;
        try {
            planned.prepare();
            files = withVmstate(planned);
            context.checkpoint("making the disk overlay");
            storage.reader(snapshot.disk()).materialise(snapshot.disk(), files.disk(), context);
            Path ram = snapshot.memory().path();
            if (snapshot.memory().depth() > 0) {
                context.checkpoint("assembling the snapshot's RAM");
                storage.reader(snapshot.memory()).materialise(snapshot.memory(), files.ram(), context);
                ram = files.ram();
            }
            context.checkpoint("starting QEMU");
            HostCommand.run(QemuCommand.launch(settings.qemu(), accelerator, image, files, snapshot.memoryMib(),
                    snapshot.vcpus(), new QemuCommand.Memory(ram, false), snapshot.incoming()), TOOL_TIMEOUT);
            QemuProcess process = files.pid().flatMap(QemuProcess::find)
                    .orElseThrow(() -> new IOException("QEMU exited right after it started"));
            vm = new QemuInstance(spec.id(), new VmRecord(process, files, image.dir(), image.agent(),
                    new VmRecord.Memory(snapshot.memoryMib(), snapshot.vcpus(), ram, imageDir)), this::bootAgain);
            vm.watch();
            restoreDevices(vm, imageDir.resolve(VmImage.DEVICES), snapshot.incoming(), deadline, context);
            vm.awaitAgent(deadline, settings.bootTimeout(), context);
            ChildIdentity.give(vm, spec.id());
            register(vm);
            return vm;
        } catch (IOException | RuntimeException e) {
            abandon(vm, planned, e);
            if (e instanceof ApiException api) {
                throw api;
            }
            throw ApiException.internal("sandbox " + spec.id() + " could not be forked from " + imageDir + ": "
                    + e.getMessage() + "; QEMU's last words: " + VmFiles.tail(files.qemuLog(), CONSOLE_TAIL_BYTES), e);
        }
    }

    /** Loads the device state into the QEMU waiting with {@code -incoming defer}, and runs the guest. */
    private static void restoreDevices(QemuInstance vm, Path devices, QemuCommand.Incoming incoming, Instant deadline,
            OperationContext context) throws IOException {
        QmpClient qmp = vm.qmp();
        if (incoming == QemuCommand.Incoming.MIGRATION) {
            VmCapture.ignoreShared(qmp, true);
        }
        context.checkpoint("loading the device state");
        qmp.execute("migrate-incoming", JsonNodeFactory.instance.objectNode()
                .put("uri", "exec:cat " + VmCapture.shellQuoted(devices)), QemuInstance.QMP_TIMEOUT);
        VmCapture.awaitMigration(qmp, "loading the device state", deadline, context);
        if (incoming == QemuCommand.Incoming.MIGRATION) {
            VmCapture.ignoreShared(qmp, false);
        }
        RunState.cont(qmp);
    }

    private GuestImage image(String name) {
        return image(settings.imageDir(), name);
    }

    private static GuestImage image(Path dir, String name) {
        try {
            return GuestImage.load(dir, name);
        } catch (GuestImage.MissingImageException e) {
            throw ApiException.badRequest(e.getMessage());
        }
    }

    /** Undoes a create that did not complete: nothing of it is left, no process, no socket, no disk. */
    private void abandon(QemuInstance vm, VmFiles files, Exception cause) {
        if (vm != null) {
            vm.close();
        }
        Optional<QemuProcess> process = vm != null ? Optional.of(vm.record().process()) : launched(files);
        process.ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
        try {
            files.remove();
        } catch (IOException e) {
            cause.addSuppressed(e);
        }
    }

    /** The QEMU a launch in {@code files} started, if it runs: its pid file names it and its command line names the file. */
    private static Optional<QemuProcess> launched(VmFiles files) {
        return files.pid().filter(pid -> ProcessHandle.of(pid).flatMap(h -> h.info().arguments())
                        .map(args -> Arrays.asList(args).contains(files.pidFile().toString())).orElse(false))
                .flatMap(QemuProcess::find);
    }

    /**
     * Boots the powered-off {@code stopped} again in a new QEMU with the same files (disk, checkpoints'
     * RAM states), its RAM file made afresh with the kernel in it ({@link GuestKernel}): a new
     * process, so a new record for core to persist. Everything that can be checked is checked before
     * the old QEMU goes; a boot that fails after that leaves no QEMU running, the VM's files in place,
     * the error saying so and the VM stopped ({@link VmFiles#poweredOff}): start it again or delete it.
     */
    QemuInstance bootAgain(QemuInstance stopped, OperationContext context) throws IOException {
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
        Optional<GuestKernel> kernel = kernelOf(image);
        if (kernel.isPresent()) {
            kernel.get().checkFits((long) mib << 20);
        }
        VmFiles files = old.files();
        context.checkpoint("booting again");
        QemuInstance.markPoweredOff(old, POWERED_OFF);
        stopped.close();
        quit(null, files);
        if (!old.process().awaitExit(QUIT_WAIT)) {
            old.process().kill(QemuInstance.KILL_WAIT);
        }
        if (old.process().isRunning()) {
            Files.deleteIfExists(files.poweredOff());
            throw new IOException("its QEMU (pid " + old.process().pid() + ") did not exit, so it was not booted again");
        }
        QemuInstance started;
        try {
            Files.deleteIfExists(files.ram());
            Files.deleteIfExists(files.pidFile());
            Files.deleteIfExists(files.failure());
            Instant boot = Instant.now().plus(settings.bootTimeout());
            // a fork child boots as a VM of its own RAM; its disk still stands on the snapshot's
            started = boot(stopped.id(), image, kernel, files,
                    new VmRecord.Memory(mib, old.memory().vcpus(), null, old.memory().snapshot()),
                    boot.isBefore(context.deadline()) ? boot : context.deadline(), context);
        } catch (IOException | RuntimeException e) {
            launched(files).ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
            stopped.poweredOff(POWERED_OFF);
            IOException stays = new IOException(e.getMessage() + "; it could not be booted again and stays stopped "
                    + "with its disk (start it again, or delete it); the console's last lines: "
                    + VmFiles.tail(files.console(), CONSOLE_TAIL_BYTES), e);
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

    /** The image's kernel, if it boots through the PVH loader (which finds it in guest RAM, not QEMU). */
    private static Optional<GuestKernel> kernelOf(GuestImage image) throws IOException {
        return image.loader().isPresent() ? Optional.of(GuestKernel.read(image.kernel())) : Optional.empty();
    }

    /**
     * Makes {@code files}' RAM file (with {@code kernel} written into it), starts QEMU on it, waits
     * for the agent until {@code deadline} and registers the VM. On a failure the caller removes
     * what is left; the QEMU it started is found by {@link #launched}.
     */
    private QemuInstance boot(String id, GuestImage image, Optional<GuestKernel> kernel, VmFiles files,
            VmRecord.Memory memory, Instant deadline, OperationContext context) throws IOException {
        reserveRam(files, memory.mib());
        if (kernel.isPresent()) {
            kernel.get().placeInto(files.ram(), (long) memory.mib() << 20);
        }
        context.checkpoint("starting QEMU");
        HostCommand.run(QemuCommand.launch(settings.qemu(), accelerator, image, files, memory.mib(), memory.vcpus()),
                TOOL_TIMEOUT);
        QemuProcess process = files.pid().flatMap(QemuProcess::find)
                .orElseThrow(() -> new IOException("QEMU exited right after it started"));
        QemuInstance vm = new QemuInstance(id, new VmRecord(process, files, image.dir(), image.agent(), memory),
                this::bootAgain);
        try {
            vm.watch();
            vm.awaitAgent(deadline, settings.bootTimeout(), context);
        } catch (IOException | RuntimeException e) {
            vm.close();
            throw e;
        }
        register(vm);
        return vm;
    }

    private void register(QemuInstance vm) {
        QemuInstance replaced = instances.put(vm.id(), vm);
        if (replaced != null && replaced != vm) {
            replaced.close();
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
        if (!record.process().isRunning()) {
            Optional<String> off = QemuInstance.poweredOffWithoutQemu(record);
            if (off.isEmpty()) {
                throw new InstanceGoneException(QemuInstance.exitReason(record));
            }
            // a boot in a new QEMU that a daemon stop cut short, before or after it ran: core never
            // recorded that QEMU, and its record says stopped, so the VM is stopped
            launched(record.files()).ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
            QemuInstance vm = new QemuInstance(spec.id(), record, this::bootAgain);
            vm.poweredOff(off.get());
            register(vm);
            return vm;
        }
        QemuInstance vm = new QemuInstance(spec.id(), record, this::bootAgain);
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
        register(vm);
        return vm;
    }

    @Override
    public void pause(SandboxInstance instance) {
        vm(instance).pause();
    }

    @Override
    public void resume(SandboxInstance instance) {
        vm(instance).resume();
    }

    private static QemuInstance vm(SandboxInstance instance) {
        if (instance instanceof QemuInstance vm) {
            return vm;
        }
        throw new IllegalArgumentException("not a VM of the qemu backend: " + instance.id());
    }

    /** Asks QEMU to quit, kills it if it does not, and removes the VM's files. */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        QemuInstance live = instances.remove(spec.id());
        VmRecord record;
        try {
            record = VmRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            // no recorded state: the daemon stopped before create returned
            record = null;
        }
        VmFiles files = record != null ? record.files()
                : VmFiles.of(spec.dir(), settings.linkDir(), settings.scratchDir(), spec.id(), ramInMemory(spec.dir()));
        // with no record, or a recorded QEMU that is gone: the one the pid file names (a create or a
        // boot in a new QEMU that a daemon stop cut short, which no record names), if it runs
        Optional<QemuProcess> process = record != null && record.process().isRunning() ? Optional.of(record.process())
                : launched(files);
        if (process.filter(QemuProcess::isRunning).isPresent()) {
            quit(live, files);
            if (!process.get().awaitExit(QUIT_WAIT)) {
                process.get().kill(QemuInstance.KILL_WAIT);
            }
        }
        if (live != null) {
            live.close();
        }
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

    /** QMP {@code quit} on the watching connection, else on one of its own; QEMU then exits at once. */
    private static void quit(QemuInstance live, VmFiles files) {
        QmpClient monitor = live == null ? null : live.qmp();
        try {
            if (monitor != null && monitor.isOpen()) {
                monitor.execute("quit", null, QemuInstance.QMP_TIMEOUT);
                return;
            }
            try (QmpClient once = QmpClient.connect(files.qmpSocket(), QemuInstance.QMP_TIMEOUT, "quit", event -> { },
                    () -> { })) {
                once.execute("quit", null, QemuInstance.QMP_TIMEOUT);
            }
        } catch (IOException e) {
            // QEMU closes the monitor as it quits, or cannot be asked: it is killed next either way
        }
    }

    /** Lets go of every VM; they keep running for the next revision or daemon to adopt. */
    @Override
    public void close() {
        logCapper.shutdownNow();
        instances.values().forEach(QemuInstance::close);
        instances.clear();
    }
}
