package io.vivarium.kit.vmm;

import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.kit.guest.ClientGuestChannel;
import io.vivarium.kit.guest.GuestAgentClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * A guest of a VMM, created or adopted by {@link VmmLauncher}: the VMM process and the guest agent,
 * reached through the VMM's vsock socket; or a guest stopped on purpose ({@link VmmPower}), which
 * has no process and keeps its disk and its spec to boot again. {@link #close()} lets go of this
 * revision's connections; the guest runs on for the next revision to adopt.
 */
public final class VmmInstance implements SandboxInstance, AutoCloseable {

    /** The key of {@link InstanceState#data()} that holds the VMM's start time; its pid is {@link InstanceState#pid()}. */
    public static final String START_TIME = "start_time";
    /** The key of {@link InstanceState#data()} that marks a guest stopped on purpose (no process, its disk kept). */
    public static final String STOPPED = "stopped";
    /** Past a command's own timeout, how long the agent has to report it. */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(2);

    private final InstanceSpec spec;
    private final String vmm;
    private final VmmProcess process;
    private final GuestAgentClient client;
    private final ClientGuestChannel channel;
    private volatile boolean paused;
    private volatile Path base;

    /**
     * @param spec what it was created with, which a start after a stop boots again
     * @param vmm the VMM's name, for messages
     * @param process its VMM, or null for a guest stopped on purpose
     * @param paused whether the guest is paused (as its VMM said, for one adopted)
     */
    public VmmInstance(InstanceSpec spec, String vmm, VmmProcess process, GuestAgentClient client, boolean paused) {
        this.spec = spec;
        this.vmm = vmm;
        this.process = process;
        this.client = client;
        this.paused = paused;
        this.channel = new ClientGuestChannel(spec.id(), client, this::alive, EXEC_ANSWER_GRACE);
    }

    /** Whether a state is of a guest stopped on purpose. */
    public static boolean stopped(InstanceState state) {
        return "true".equals(state.data().get(STOPPED));
    }

    /** The VMM a state records; empty for a state without one (a create the daemon did not see finish, a stop). */
    public static Optional<VmmProcess> processOf(InstanceState state) {
        String start = state.data().get(START_TIME);
        return state.pid() > 0 && start != null ? Optional.of(new VmmProcess(state.pid(), start)) : Optional.empty();
    }

    /** Its VMM; null once stopped. */
    public VmmProcess process() {
        return process;
    }

    InstanceSpec spec() {
        return spec;
    }

    public GuestAgentClient client() {
        return client;
    }

    @Override
    public String id() {
        return spec.id();
    }

    @Override
    public InstanceState state() {
        return process == null ? new InstanceState(0, Map.of(STOPPED, "true"))
                : new InstanceState(process.pid(), Map.of(START_TIME, process.startTime()));
    }

    @Override
    public boolean alive() {
        return process != null && process.isRunning();
    }

    /** Paused while its VMM runs and was paused ({@link VmmPause}), which the VMM itself keeps across a daemon restart. */
    @Override
    public SandboxStatus status() {
        return process == null ? SandboxStatus.STOPPED : !alive() ? SandboxStatus.FAILED
                : paused ? SandboxStatus.PAUSED : SandboxStatus.RUNNING;
    }

    void paused(boolean now) {
        paused = now;
    }

    /**
     * The directory of the state this VMM process last saved or loaded, which its next save may
     * build on ({@link VmmSnapshots#save}); empty when unknown (none yet, or adopted by a new
     * revision), and the next save is then whole.
     */
    Optional<Path> base() {
        return Optional.ofNullable(base);
    }

    void base(Path dir) {
        base = dir;
    }

    @Override
    public String reason() {
        return process == null ? "stopped on purpose" : alive() ? null
                : "its " + vmm + " process (pid " + process.pid() + ") exited";
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    /** The workspace disk, which the guest's /init mounts. */
    @Override
    public String workspace() {
        return "/work";
    }

    @Override
    public void close() {
        client.close();
    }
}
