package io.vivarium.backend.firecracker.internal;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.BootSource;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Drive;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MachineConfig;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Vsock;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.kit.guest.GuestTransport;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * How a Firecracker microVM starts and ends. The VMM is started detached through the kit agent's
 * launch mode ({@code vivarium-agent --launch --detach PIDFILE ...  -- firecracker --api-sock
 * SOCKET --id ID}: a session of its own, so it outlives the daemon, its pid written first), then
 * configured through its API ({@link FirecrackerApi}: machine, kernel and initramfs of the guest
 * image with {@code vivarium.channel=vsock:}{@value #AGENT_PORT} on the command line, the workspace
 * disk, the vsock device) and started; the sandbox is up once its agent answers a ping through the
 * VMM's vsock socket.
 *
 * <p>Files: in the sandbox's directory {@value #WORKSPACE} (an ext4 file, the guest's
 * {@code /dev/vda} at {@code /work}), {@value #PID_FILE} and {@value #LOG} (the VMM's output and
 * the guest's console); in the short {@link #sockets socket directory} of the sandbox the API and
 * vsock sockets, which a relaunch must find gone (a VMM binds them anew and refuses a path taken).
 */
final class FirecrackerLauncher {

    static final String WORKSPACE = "workspace.ext4";
    static final String PID_FILE = "firecracker.pid";
    static final String LOG = "firecracker.log";
    static final String API_SOCKET = "api.sock";
    static final String VSOCK_SOCKET = "vsock.sock";
    /** The guest's vsock port its agent listens on. */
    static final int AGENT_PORT = 1024;
    /** The guest's vsock CID: 3, the first a guest may have (0-2 are the hypervisor's and the host's). */
    static final long GUEST_CID = 3;

    private static final Duration API_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration PING_WAIT = Duration.ofMillis(500);
    private static final long POLL_MILLIS = 10;
    private static final int LOG_TAIL_BYTES = 2048;

    private final FirecrackerSettings settings;
    private final Path agentBinary;

    /** @param agentBinary the kit's agent binary, whose launch mode starts the VMM detached */
    FirecrackerLauncher(FirecrackerSettings settings, Path agentBinary) {
        this.settings = settings;
        this.agentBinary = agentBinary;
    }

    /** The directory of sandbox {@code id}'s sockets. */
    Path sockets(String id) {
        return settings.socketDir().resolve(id);
    }

    /** The sandbox {@code spec} whose VMM runs: a client of its agent, which connects on the first call. */
    FirecrackerInstance attach(InstanceSpec spec, VmmProcess vmm) {
        return new FirecrackerInstance(spec.id(), vmm,
                new GuestAgentClient(GuestTransport.vsock(sockets(spec.id()).resolve(VSOCK_SOCKET), AGENT_PORT)));
    }

    /**
     * Boots the microVM of {@code spec} and waits until its agent answers. On any failure it ends
     * what it started and throws with the last words of the VMM and the guest's console.
     */
    FirecrackerInstance start(InstanceSpec spec, OperationContext context) {
        long deadline = System.nanoTime() + settings.bootTimeout().toNanos();
        FirecrackerImage image;
        try {
            image = FirecrackerImage.load(settings.imageDir(), spec.image() != null ? spec.image() : settings.defaultImage());
        } catch (IOException e) {
            throw new ApiException(503, "Firecracker cannot boot sandbox " + spec.id() + ": " + e.getMessage());
        }
        try {
            context.checkpoint("making the workspace disk of sandbox " + spec.id());
            Path workspace = workspace(spec);
            Path sockets = sockets(spec.id());
            Files.createDirectories(sockets);
            // a VMM binds its sockets anew: ones a VMM before it left would be in its way
            Files.deleteIfExists(sockets.resolve(API_SOCKET));
            Files.deleteIfExists(sockets.resolve(VSOCK_SOCKET));
            context.checkpoint("starting the Firecracker of sandbox " + spec.id());
            VmmProcess vmm = launch(spec);
            try (FirecrackerApi api = new FirecrackerApi(sockets.resolve(API_SOCKET), API_TIMEOUT)) {
                awaitApi(spec, vmm, api, deadline, context);
                int vcpus = spec.vcpus() != null ? spec.vcpus() : settings.defaultVcpus();
                int memory = spec.memoryLimitMib() != null ? spec.memoryLimitMib() : settings.memoryMib();
                api.configureMachine(new MachineConfig(vcpus, memory, false));
                api.setBootSource(new BootSource(image.kernel().toString(), image.initramfs().toString(),
                        bootArgs(image)));
                api.putDrive(new Drive("workspace", workspace.toString(), false, false));
                api.putVsock(new Vsock(GUEST_CID, sockets.resolve(VSOCK_SOCKET).toString()));
                context.checkpoint("booting sandbox " + spec.id());
                api.start();
            }
            FirecrackerInstance instance = attach(spec, vmm);
            try {
                awaitAgent(spec, instance, deadline, context);
            } catch (RuntimeException e) {
                instance.close();
                throw e;
            }
            return instance;
        } catch (IOException e) {
            throw abandon(spec, failure(spec, e.getMessage()));
        } catch (RuntimeException e) {
            throw abandon(spec, e);
        }
    }

    /** The image's command line, with the agent on vsock; {@code reboot=k} makes a guest's reboot end its VMM. */
    static String bootArgs(FirecrackerImage image) {
        return (image.cmdline() + " reboot=k pci=off vivarium.channel=vsock:" + AGENT_PORT).strip();
    }

    /** An empty ext4 file system labelled {@code work}, sparse, of the configured size or the spec's disk limit. */
    private Path workspace(InstanceSpec spec) throws IOException {
        Path disk = spec.dir().resolve(WORKSPACE);
        if (Files.exists(disk)) {
            return disk;
        }
        long mib = spec.diskLimitMib() != null ? spec.diskLimitMib() : settings.workspaceMib();
        Path partial = spec.dir().resolve(WORKSPACE + ".partial");
        try (RandomAccessFile file = new RandomAccessFile(partial.toFile(), "rw")) {
            file.setLength(mib << 20);
        }
        HostCommand.run(List.of("mkfs.ext4", "-q", "-F", "-L", "work", partial.toString()), Duration.ofSeconds(30));
        Files.move(partial, disk);
        return disk;
    }

    private VmmProcess launch(InstanceSpec spec) throws IOException {
        Path dir = spec.dir();
        Path pidFile = dir.resolve(PID_FILE);
        Files.deleteIfExists(pidFile);
        ProcessBuilder launch = new ProcessBuilder(agentBinary.toString(), "--launch", "--detach", pidFile.toString(),
                "/dev/null", "", "", dir.toString(), "", "--", settings.firecracker().toString(), "--api-sock",
                sockets(spec.id()).resolve(API_SOCKET).toString(), "--id", spec.id())
                .directory(dir.toFile())
                .redirectInput(Redirect.from(new File("/dev/null")))
                .redirectOutput(Redirect.appendTo(dir.resolve(LOG).toFile()))
                .redirectErrorStream(true);
        try {
            int status = launch.start().waitFor();
            if (status != 0) {
                throw new IOException("its launch exited with status " + status);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting it", e);
        }
        long deadline = System.nanoTime() + API_TIMEOUT.toNanos();
        while (true) {
            Optional<Long> pid = readPid(dir);
            if (pid.isPresent()) {
                return VmmProcess.find(pid.get()).orElseThrow(() -> new IOException("Firecracker exited right after start"));
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("its launch wrote no pid within " + API_TIMEOUT.toSeconds() + " s");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
    }

    /** The VMM binds its API socket as it starts; until then a call cannot connect. */
    private void awaitApi(InstanceSpec spec, VmmProcess vmm, FirecrackerApi api, long deadline, OperationContext context) {
        String last = "its API socket never appeared";
        while (true) {
            if (!vmm.isRunning()) {
                throw failure(spec, "Firecracker exited");
            }
            if (Files.exists(sockets(spec.id()).resolve(API_SOCKET))) {
                try {
                    api.describe();
                    return;
                } catch (IOException e) {
                    last = e.getMessage();
                }
            }
            pause(spec, deadline, context, "Firecracker's API did not answer (" + last + ")");
        }
    }

    /** Until the guest's agent listens on its port, the VMM closes each connection to it. */
    private void awaitAgent(InstanceSpec spec, FirecrackerInstance instance, long deadline, OperationContext context) {
        String last = "no answer";
        while (true) {
            if (!instance.alive()) {
                throw failure(spec, "Firecracker exited while the guest booted");
            }
            try {
                instance.client().ping(Deadline.after(PING_WAIT));
                return;
            } catch (GuestAgentException e) {
                last = e.getMessage();
            }
            pause(spec, deadline, context, "the guest's agent did not answer (" + last + ")");
        }
    }

    private void pause(InstanceSpec spec, long deadline, OperationContext context, String what) {
        if (System.nanoTime() > deadline) {
            throw failure(spec, what + " within " + settings.bootTimeout().toSeconds() + " s");
        }
        context.checkpoint("waiting for sandbox " + spec.id() + " to boot");
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
    }

    /** A 500 that says what went wrong, with the end of the VMM's output and the guest's console. */
    private static ApiException failure(InstanceSpec spec, String what) {
        return new ApiException(500, "sandbox " + spec.id() + " did not start: " + what + "; Firecracker and the guest said: "
                + logTail(spec.dir().resolve(LOG)));
    }

    private RuntimeException abandon(InstanceSpec spec, RuntimeException failure) {
        try {
            end(spec, new InstanceState(0, Map.of()));
        } catch (RuntimeException e) {
            failure.addSuppressed(e); // core's destroy (with an empty state) tries again
        }
        return failure;
    }

    /**
     * Ends the VMM of sandbox {@code spec} (the one {@code state} records or, for an empty state,
     * the one its pid file names if that process runs this sandbox's Firecracker) and removes its
     * sockets; idempotent. The sandbox's directory is core's to remove.
     */
    void end(InstanceSpec spec, InstanceState state) {
        Optional<VmmProcess> vmm = FirecrackerInstance.vmmOf(state).or(() -> launchedFor(spec));
        if (vmm.isPresent() && !vmm.get().kill(STOP_TIMEOUT)) {
            throw new ApiException(500, "the Firecracker of sandbox " + spec.id() + " (pid " + vmm.get().pid()
                    + ") is still there " + STOP_TIMEOUT.toSeconds() + " s after SIGKILL");
        }
        Path sockets = sockets(spec.id());
        try (Stream<Path> files = Files.exists(sockets) ? Files.walk(sockets) : Stream.empty()) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(spec.dir().resolve(PID_FILE));
        } catch (IOException e) {
            throw ApiException.internal("cannot remove the sockets of sandbox " + spec.id() + " in " + sockets + ": "
                    + e.getMessage(), e);
        }
    }

    /** The process the pid file names, if it is this sandbox's Firecracker (its command line names its API socket). */
    private Optional<VmmProcess> launchedFor(InstanceSpec spec) {
        String socket = sockets(spec.id()).resolve(API_SOCKET).toString();
        return readPid(spec.dir()).filter(pid -> commandLine(pid).contains(socket)).flatMap(VmmProcess::find);
    }

    private static String commandLine(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), UTF_8).replace('\0', ' ');
        } catch (IOException e) {
            return "";
        }
    }

    private static Optional<Long> readPid(Path dir) {
        try {
            return Optional.of(Long.parseLong(Files.readString(dir.resolve(PID_FILE), UTF_8).strip()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty(); // not yet written, or written half
        }
    }

    private static String logTail(Path log) {
        try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
            long from = Math.max(0, file.length() - LOG_TAIL_BYTES);
            byte[] tail = new byte[(int) (file.length() - from)];
            file.seek(from);
            file.readFully(tail);
            String text = new String(tail, UTF_8).strip();
            return text.isEmpty() ? "nothing" : text;
        } catch (IOException e) {
            return "nothing (" + e.getMessage() + ")";
        }
    }
}
