package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.FileClones;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.kit.backend.InstanceTable;

/**
 * How a VM is started, shared by a create, a boot in a new QEMU ({@link QemuPower}) and a fork
 * ({@link QemuImages}): its files planned and prepared, its RAM file reserved (with the kernel in it
 * for the PVH loader), a daemonized QEMU launched and found by its pid file, the guest agent awaited
 * and the VM registered; and how one that did not come up is undone, and a QEMU made to go.
 */
final class QemuLauncher {

    /** A guest's RAM file in the scratch directory in memory is {@code <id>} followed by this. */
    static final String RAM_IN_MEMORY_SUFFIX = ".memory.ram";
    static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);
    static final int CONSOLE_TAIL_BYTES = 2000;
    private static final Duration QUIT_WAIT = Duration.ofSeconds(3);
    private static final System.Logger LOG = System.getLogger(QemuLauncher.class.getName());
    private static final FileClones CLONES = new FileClones();

    private final QemuSettings settings;
    private final Accelerator accelerator;
    private final InstanceTable<QemuInstance> instances;
    private final SandboxNetworks networks;

    QemuLauncher(QemuSettings settings, Accelerator accelerator, InstanceTable<QemuInstance> instances,
            SandboxNetworks networks) {
        this.settings = settings;
        this.accelerator = accelerator;
        this.instances = instances;
        this.networks = networks;
    }

    /** The files a VM of {@code spec} will have; nothing is made yet. */
    VmFiles plan(InstanceSpec spec) {
        return VmFiles.of(spec.dir(), settings.linkDir(), settings.scratchDir(), spec.id(), ramInMemory(spec.dir()));
    }

    /** The guest's RAM file in memory unless {@code dir}'s file system clones files, as a capture then does with it. */
    private static boolean ramInMemory(Path dir) {
        return !CLONES.clones(dir);
    }

    /** Makes {@code planned}'s directories and link, and its RAM-state file where it can be made. */
    VmFiles prepare(VmFiles planned) throws IOException {
        planned.prepare();
        return withVmstate(planned);
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

    /** The image {@code name} of the configured image directory; a 400 saying how to build it if there is none. */
    GuestImage image(String name) {
        return image(settings.imageDir(), name);
    }

    static GuestImage image(Path dir, String name) {
        try {
            return GuestImage.load(dir, name);
        } catch (GuestImage.MissingImageException e) {
            throw ApiException.badRequest(e.getMessage());
        }
    }

    /** The image's kernel, if it boots through the PVH loader (which finds it in guest RAM, not QEMU). */
    static Optional<GuestKernel> kernelOf(GuestImage image) throws IOException {
        return image.loader().isPresent() ? Optional.of(GuestKernel.read(image.kernel())) : Optional.empty();
    }

    /**
     * Makes {@code files}' RAM file (with {@code kernel} written into it), starts QEMU on it, waits
     * for the agent until {@code deadline}, gives the guest its network, mounts the volumes in the
     * guest and registers the VM. On a failure the caller removes what is left; the QEMU it started is
     * found by {@link #launched}.
     */
    QemuInstance boot(String id, GuestImage image, Optional<GuestKernel> kernel, VmFiles files,
            VmRecord.Memory memory, List<VmVolume> volumes, VmRoot root, VmNetwork network, Instant deadline,
            OperationContext context) throws IOException {
        reserveRam(files, memory.mib());
        if (kernel.isPresent()) {
            kernel.get().placeInto(files.ram(), (long) memory.mib() << 20);
        }
        context.checkpoint("starting QEMU");
        QemuProcess process = launch(image, files, memory.mib(), memory.vcpus(), new QemuCommand.Memory(files.ram(), true),
                QemuCommand.Incoming.BOOT, volumes, root, network);
        QemuInstance vm = new QemuInstance(id, new VmRecord(process, files, image.dir(), image.agent(), memory, volumes,
                root, network));
        try {
            vm.watch();
            vm.awaitAgent(deadline, settings.bootTimeout(), context);
            configureNetwork(vm, context);
            if (!volumes.isEmpty()) {
                context.checkpoint("mounting the volumes");
                VmVolumes.mount(vm.agent(), volumes, root);
            }
        } catch (IOException | RuntimeException e) {
            vm.close();
            throw e;
        }
        return register(vm);
    }

    /**
     * Starts a daemonizing QEMU ({@link QemuCommand#launch}), its network's tap made first where the
     * host lacks it, and finds the QEMU it left running from its pid file.
     */
    QemuProcess launch(GuestImage image, VmFiles files, int memoryMib, int vcpus, QemuCommand.Memory memory,
            QemuCommand.Incoming incoming, List<VmVolume> volumes, VmRoot root, VmNetwork network) throws IOException {
        if (network != null) {
            network.makeHostSide(networks);
        }
        HostCommand.run(QemuCommand.launch(settings.qemu(), accelerator, image, files, memoryMib, vcpus, memory, incoming,
                volumes, root, network),
                TOOL_TIMEOUT);
        return files.pid().flatMap(QemuProcess::find)
                .orElseThrow(() -> new IOException("QEMU exited right after it started"));
    }

    /** Gives {@code vm}'s running guest its network, if it has one ({@link VmNetwork#configure}). */
    static void configureNetwork(QemuInstance vm, OperationContext context) throws IOException {
        VmNetwork network = vm.record().network();
        if (network != null) {
            context.checkpoint("configuring the guest's network");
            network.configure(vm);
        }
    }

    /** Removes {@code network} (its tap and its rules), if there is one. */
    void removeNetwork(VmNetwork network) {
        if (network != null) {
            networks.detach(network.sandboxId());
        }
    }

    /** Makes {@code vm} one of this revision's VMs, letting go of another it replaces; returns it. */
    QemuInstance register(QemuInstance vm) {
        return instances.put(vm);
    }

    /** Undoes a create that did not complete: nothing of it is left, no process, no socket, no disk, no tap. */
    void abandon(QemuInstance vm, VmFiles files, VmNetwork network, Exception cause) {
        if (vm != null) {
            vm.close();
        }
        Optional<QemuProcess> process = vm != null ? Optional.of(vm.record().process()) : launched(files);
        process.ifPresent(p -> p.kill(QemuInstance.KILL_WAIT));
        removeNetwork(network);
        try {
            files.remove();
        } catch (IOException e) {
            cause.addSuppressed(e);
        }
    }

    /** The QEMU a launch in {@code files} started, if it runs: its pid file names it and its command line names the file. */
    static Optional<QemuProcess> launched(VmFiles files) {
        return files.pid().filter(pid -> ProcessHandle.of(pid).flatMap(h -> h.info().arguments())
                        .map(args -> Arrays.asList(args).contains(files.pidFile().toString())).orElse(false))
                .flatMap(QemuProcess::find);
    }

    /** Makes {@code process}, the QEMU of {@code files}, go: QMP {@code quit} ({@link #quit}), else a kill. */
    static void end(QemuInstance live, VmFiles files, QemuProcess process) {
        quit(live, files);
        if (!process.awaitExit(QUIT_WAIT)) {
            process.kill(QemuInstance.KILL_WAIT);
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
}
