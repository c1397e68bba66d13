package io.vivarium.kit.vmm;


import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.kit.guest.GuestTransport;
import java.io.File;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How a guest of a VMM that serves an HTTP API on a Unix socket starts and ends, whatever the VMM
 * (its {@link VmmDriver} says the rest). The VMM is started detached through the kit agent's launch
 * mode ({@code vivarium-agent --launch --detach PIDFILE ... -- VMM ...}: a session of its own, so it
 * outlives the daemon, its pid written first), then the driver configures the guest (the image's
 * kernel and initramfs with {@code vivarium.channel=vsock:}{@value #AGENT_PORT} on its command line,
 * the workspace disk, the vsock device) and boots it; the sandbox is up once its agent answers a
 * ping through the VMM's vsock socket ({@link GuestTransport#vsock}).
 *
 * <p>Files: in the sandbox's directory {@value #WORKSPACE} (an ext4 file, the guest's
 * {@code /dev/vda} at {@code /work}), {@value #PID_FILE} and {@value #LOG} (the VMM's output and the
 * guest's console); in the sandbox's {@link #sockets short socket directory} the API and vsock
 * sockets, which a start removes first (a VMM binds them anew and refuses a path that is taken).
 */
public final class VmmLauncher {

    public static final String WORKSPACE = "workspace.ext4";
    public static final String PID_FILE = "vmm.pid";
    public static final String LOG = "vmm.log";
    public static final String API_SOCKET = "api.sock";
    public static final String VSOCK_SOCKET = "vsock.sock";
    /** The guest's vsock port its agent listens on. */
    public static final int AGENT_PORT = 1024;
    /** The guest's vsock CID: 3, the first a guest may have (0-2 are the hypervisor's and the host's). */
    public static final long GUEST_CID = 3;

    private static final Duration API_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    /** How long a guest gets to shut down on its own before its VMM is killed. */
    private static final long SHUTDOWN_SECONDS = 10;
    private static final Duration PING_WAIT = Duration.ofMillis(500);
    private static final long POLL_MILLIS = 10;

    private final VmmSettings settings;
    private final VmmFiles files;
    private final VmmDriver driver;
    private final Path agentBinary;

    /** @param agentBinary the kit's agent binary ({@link io.vivarium.kit.agent.AgentBinary}), whose launch mode starts the VMM */
    public VmmLauncher(VmmSettings settings, VmmDriver driver, Path agentBinary) {
        this.settings = settings;
        this.files = new VmmFiles(settings);
        this.driver = driver;
        this.agentBinary = agentBinary;
    }

    /** The directory of sandbox {@code id}'s sockets. */
    public Path sockets(String id) {
        return files.sockets(id);
    }

    /** The kernel command line of a guest of {@code image}: the image's, the driver's, and the agent on vsock. */
    public String cmdline(VmmGuestImage image) {
        return String.join(" ", image.cmdline(), driver.bootArgs(), "vivarium.channel=vsock:" + AGENT_PORT)
                .replaceAll(" +", " ").strip();
    }

    /**
     * The sandbox {@code spec} whose VMM runs, paused or not as the VMM says: a client of its agent,
     * which connects on the first call.
     */
    public VmmInstance attach(InstanceSpec spec, VmmProcess process) {
        boolean paused;
        try {
            paused = driver.paused(sockets(spec.id()).resolve(API_SOCKET));
        } catch (IOException e) {
            // its guest then answers nothing either, which its calls report; the adoption itself stands
            paused = false;
        }
        return running(spec, process, paused);
    }

    private VmmInstance running(InstanceSpec spec, VmmProcess process, boolean paused) {
        return new VmmInstance(spec, driver.name(), process,
                new GuestAgentClient(GuestTransport.vsock(sockets(spec.id()).resolve(VSOCK_SOCKET), AGENT_PORT)), paused);
    }

    /** The guest of {@code spec} stopped on purpose: no process, its disk in its directory. */
    public VmmInstance stopped(InstanceSpec spec) {
        return new VmmInstance(spec, driver.name(), null,
                new GuestAgentClient(GuestTransport.vsock(sockets(spec.id()).resolve(VSOCK_SOCKET), AGENT_PORT)), false);
    }

    /**
     * Shuts {@code instance}'s guest down: the driver asks the guest and the VMM to end, which they
     * get until {@code context}'s deadline, at most {@value #SHUTDOWN_SECONDS} s; then the VMM and
     * everything below it are killed. The workspace disk is kept; the instance returned is stopped.
     */
    VmmInstance stop(VmmInstance instance, OperationContext context) {
        InstanceSpec spec = instance.spec();
        try {
            driver.shutdown(sockets(spec.id()).resolve(API_SOCKET));
        } catch (IOException e) {
            // the kill below ends it all the same
        }
        long deadline = System.nanoTime() + Math.min(TimeUnit.SECONDS.toNanos(SHUTDOWN_SECONDS),
                Math.max(0, context.remaining().toNanos()));
        while (instance.process().isRunning() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
        instance.close();
        end(spec, instance.state());
        return stopped(spec);
    }

    /** Boots a stopped guest again from its kept disk, as a create does. */
    VmmInstance startAgain(VmmInstance stopped, OperationContext context) {
        return start(stopped.spec(), context);
    }

    /** Freezes {@code instance}'s guest ({@link VmmDriver#pause}). */
    void pause(VmmInstance instance) {
        control(instance, true);
    }

    /** Runs {@code instance}'s paused guest again. */
    void resume(VmmInstance instance) {
        control(instance, false);
    }

    private void control(VmmInstance instance, boolean pause) {
        Path api = sockets(instance.id()).resolve(API_SOCKET);
        try {
            if (pause) {
                driver.pause(api);
            } else {
                driver.resume(api);
            }
            instance.paused(pause);
        } catch (IOException e) {
            throw new ApiException(502, "cannot " + (pause ? "pause" : "resume") + " sandbox " + instance.id() + ": "
                    + e.getMessage());
        }
    }

    /**
     * Boots the guest of {@code spec} and waits until its agent answers. On any failure it ends what
     * it started and throws with the last words of the VMM and the guest's console.
     */
    public VmmInstance start(InstanceSpec spec, OperationContext context) {
        VmmGuestImage image;
        try {
            image = VmmGuestImage.load(settings.imageDir(), spec.image() != null ? spec.image() : settings.defaultImage());
        } catch (IOException e) {
            throw new ApiException(503, driver.name() + " cannot boot sandbox " + spec.id() + ": " + e.getMessage());
        }
        Path workspace;
        try {
            context.checkpoint("making the workspace disk of sandbox " + spec.id());
            workspace = files.workspace(spec);
        } catch (IOException e) {
            throw failure(spec, e.getMessage());
        }
        return bringUp(spec, context, (api, vsock) -> {
            context.checkpoint("booting sandbox " + spec.id());
            driver.boot(api, new VmmBoot(spec.vcpus() != null ? spec.vcpus() : settings.defaultVcpus(),
                    spec.memoryLimitMib() != null ? spec.memoryLimitMib() : settings.memoryMib(), image.kernel(),
                    image.initramfs(), cmdline(image), workspace, vsock, GUEST_CID));
        });
    }

    /**
     * Starts a VMM for {@code spec} and loads into it the state {@link #save} wrote into {@code
     * saved} ({@link VmmSnapshots#load}); the guest runs on from there once its agent answers. The
     * VMM before must be gone ({@link #end}) and the workspace disk be the one saved with the state.
     * On any failure it ends what it started and throws, as {@link #start} does.
     */
    VmmInstance load(InstanceSpec spec, Path saved, OperationContext context) {
        VmmSnapshots snapshots = snapshots().orElseThrow();
        VmmInstance loaded = bringUp(spec, context, (api, vsock) -> {
            context.checkpoint("loading the state of sandbox " + spec.id());
            snapshots.load(api, saved, vsock);
        });
        loaded.base(saved);
        return loaded;
    }

    /** How a VMM just started, its API answering, gets its guest: {@code api} and {@code vsock} are its sockets. */
    private interface GuestSetup {
        void run(Path api, Path vsock) throws IOException;
    }

    private VmmInstance bringUp(InstanceSpec spec, OperationContext context, GuestSetup setup) {
        long deadline = System.nanoTime() + settings.bootTimeout().toNanos();
        try {
            Path sockets = files.socketDirectory(spec);
            Files.deleteIfExists(sockets.resolve(API_SOCKET));
            Files.deleteIfExists(sockets.resolve(VSOCK_SOCKET));
            context.checkpoint("starting the " + driver.name() + " of sandbox " + spec.id());
            VmmProcess process = launch(spec);
            awaitApi(spec, process, deadline, context);
            setup.run(sockets.resolve(API_SOCKET), sockets.resolve(VSOCK_SOCKET));
            VmmInstance instance = running(spec, process, false);
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

    /** The driver's snapshots, if its VMM saves and loads a guest's state. */
    public Optional<VmmSnapshots> snapshots() {
        return driver instanceof VmmSnapshots s ? Optional.of(s) : Optional.empty();
    }

    /**
     * Writes {@code instance}'s guest state into the empty directory {@code dir} ({@link
     * VmmSnapshots#save}, on the {@link VmmInstance#base} where there is one), the guest paused
     * meanwhile unless it was already; returns with it as it was, and what the VMM wrote. {@code
     * whilePaused} runs before it runs again (a copy of its disk, consistent with the state saved).
     */
    String save(VmmInstance instance, Path dir, IoAction whilePaused) throws IOException {
        VmmSnapshots snapshots = snapshots().orElseThrow();
        Path api = sockets(instance.id()).resolve(API_SOCKET);
        boolean running = instance.status() != SandboxStatus.PAUSED;
        if (running) {
            driver.pause(api);
        }
        try {
            String kind = snapshots.save(api, dir, instance.base().filter(Files::isDirectory).orElse(null));
            whilePaused.run();
            return kind;
        } finally {
            if (running) {
                driver.resume(api);
            }
        }
    }

    /** Work on files that may fail. */
    interface IoAction {
        void run() throws IOException;
    }

    private VmmProcess launch(InstanceSpec spec) throws IOException {
        if (agentBinary == null) {
            throw new IOException("the agent binary that starts each " + driver.name() + " could not be written: "
                    + "GET /v1/backends says why");
        }
        Path dir = spec.dir();
        Path pidFile = dir.resolve(PID_FILE);
        Files.deleteIfExists(pidFile);
        List<String> command = new ArrayList<>(List.of(agentBinary.toString(), "--launch", "--detach", pidFile.toString(),
                "/dev/null", "", "", dir.toString(), "", "--"));
        command.addAll(driver.command(settings.binary(), sockets(spec.id()).resolve(API_SOCKET), spec.id()));
        ProcessBuilder launch = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectInput(Redirect.from(new File("/dev/null")))
                .redirectOutput(Redirect.appendTo(dir.resolve(LOG).toFile()))
                .redirectErrorStream(true);
        try {
            int status = launch.start().waitFor();
            if (status != 0) {
                throw new IOException("the launch of " + driver.name() + " exited with status " + status);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting " + driver.name(), e);
        }
        long deadline = System.nanoTime() + API_TIMEOUT.toNanos();
        while (true) {
            Optional<Long> pid = VmmFiles.readPid(dir);
            if (pid.isPresent()) {
                return VmmProcess.find(pid.get()).orElseThrow(() -> new IOException(driver.name() + " exited right after start"));
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the launch of " + driver.name() + " wrote no pid within " + API_TIMEOUT.toSeconds() + " s");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
    }

    /** The VMM binds its API socket as it starts; until then a call cannot connect. */
    private void awaitApi(InstanceSpec spec, VmmProcess process, long deadline, OperationContext context) {
        Path socket = sockets(spec.id()).resolve(API_SOCKET);
        String last = "its API socket never appeared";
        while (true) {
            if (!process.isRunning()) {
                throw failure(spec, driver.name() + " exited");
            }
            if (Files.exists(socket)) {
                try {
                    driver.ping(socket);
                    return;
                } catch (IOException e) {
                    last = e.getMessage();
                }
            }
            pause(spec, deadline, context, driver.name() + "'s API did not answer (" + last + ")");
        }
    }

    /** Until the guest's agent listens on its port, the VMM closes each connection to it. */
    private void awaitAgent(InstanceSpec spec, VmmInstance instance, long deadline, OperationContext context) {
        String last = "no answer";
        while (true) {
            if (!instance.alive()) {
                throw failure(spec, driver.name() + " exited while the guest booted");
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
    private ApiException failure(InstanceSpec spec, String what) {
        return new ApiException(500, "sandbox " + spec.id() + " did not start: " + what + "; " + driver.name()
                + " and the guest said: " + VmmFiles.logTail(spec.dir().resolve(LOG)));
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
     * the one its pid file names if that process serves this sandbox's API socket) and everything
     * below it, and removes its sockets; idempotent. The sandbox's directory is core's to remove.
     */
    public void end(InstanceSpec spec, InstanceState state) {
        Optional<VmmProcess> process = VmmInstance.processOf(state).or(() -> launchedFor(spec));
        if (process.isPresent() && !process.get().kill(STOP_TIMEOUT)) {
            throw new ApiException(500, "the " + driver.name() + " of sandbox " + spec.id() + " (pid " + process.get().pid()
                    + ") or a process below it is still there " + STOP_TIMEOUT.toSeconds() + " s after SIGKILL");
        }
        try {
            files.removeSockets(spec);
        } catch (IOException e) {
            throw ApiException.internal("cannot remove the sockets of sandbox " + spec.id() + " in " + sockets(spec.id()) + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * The VMM the pid file names, if its command line names this sandbox's API socket: the one the
     * last start or restore launched, which a state from before a restore does not record.
     */
    Optional<VmmProcess> launchedFor(InstanceSpec spec) {
        String socket = sockets(spec.id()).resolve(API_SOCKET).toString();
        return VmmFiles.readPid(spec.dir()).filter(pid -> VmmFiles.commandLine(pid).contains(socket)).flatMap(VmmProcess::find);
    }
}
