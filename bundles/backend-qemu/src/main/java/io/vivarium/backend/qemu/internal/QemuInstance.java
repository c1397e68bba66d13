package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.api.ApiException;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.kit.guest.GuestTransport;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A VM this backend revision created or adopted, watched through QMP: a guest that powers off is
 * {@code stopped}; a guest that panics, resets itself (a panic with {@code panic=-1}) or is stopped
 * by an internal or I/O error is {@code failed} with that reason, and its QEMU is killed so that
 * nothing useless is left running; a QEMU that exited is {@code failed} with its last words.
 * {@link #close()} lets go of the VM (a bundle update, a daemon stopping); the VM keeps running.
 * Its checkpoints ({@link VmCheckpoints}, through {@link QemuCheckpoints}), its power
 * ({@link QemuPower}) and its pause ({@link QemuPause}) are the seams' business; this is what they
 * share: the QMP connection, the agent and how the VM stands.
 */
final class QemuInstance implements SandboxInstance, AutoCloseable {

    private static final System.Logger LOG = System.getLogger(QemuInstance.class.getName());
    static final Duration QMP_TIMEOUT = Duration.ofSeconds(5);
    static final Duration KILL_WAIT = Duration.ofSeconds(5);
    private static final int TAIL_BYTES = 1500;
    static final Duration PING_WAIT = Duration.ofSeconds(1);
    static final long RETRY_MILLIS = 50;

    private final String id;
    private final VmRecord record;
    private volatile boolean goingCold;
    private final GuestAgentClient agent;
    private final VmChannel channel;
    private final VmCheckpoints checkpoints;
    private volatile QmpClient qmp;
    /** Why it failed, once the daemon has seen it fail; null before. */
    private volatile String failure;
    /** Why it stopped (the guest powered off); null while it has not. */
    private volatile String stopped;
    /** Its vCPUs stopped on purpose (QMP {@code stop}, QEMU's run state {@code paused}) until a {@code cont}. */
    private volatile boolean paused;
    private final SandboxNetworks.KnownAddress address;
    /** Counts the changes of {@link #paused} by a pause, a resume or QEMU's RESUME event; guarded by this. */
    private volatile long runStateChanges;

    QemuInstance(String id, VmRecord record) {
        this.id = id;
        this.record = record;
        this.address = new SandboxNetworks.KnownAddress(id);
        this.agent = new GuestAgentClient(GuestTransport.stream("the agent of sandbox " + id,
                () -> SocketChannel.open(UnixDomainSocketAddress.of(record.files().agentSocket()))));
        this.channel = new VmChannel(id, agent, () -> alive() && !cold(), record.root());
        this.checkpoints = new VmCheckpoints(id, () -> qmp);
    }

    /** Connects to QEMU's monitor, then takes the VM's current run state as if an event had said it. */
    void watch() throws IOException {
        qmp = QmpClient.connect(record.files().qmpSocket(), QMP_TIMEOUT, "sandbox " + id, this::onEvent, () -> { });
        onRunState(qmp.execute("query-status", null, QMP_TIMEOUT).path("status").asText());
    }

    private void onEvent(JsonNode event) {
        JsonNode data = event.path("data");
        switch (event.path("event").asText()) {
            case "SHUTDOWN" -> onShutdown(data.path("reason").asText());
            case "GUEST_PANICKED" -> fail("the guest kernel panicked (" + data.path("action").asText() + ")");
            // STOP says only that it stopped; why is its run state, which this thread cannot ask for
            case "STOP" -> {
                long seen = runStateChanges;
                Thread.ofVirtual().name("qmp status " + id).start(() -> checkRunState(seen));
            }
            case "RESUME" -> paused(false);
            default -> { }
        }
    }

    private void onShutdown(String reason) {
        switch (reason) {
            case "guest-shutdown" -> stopped = "the guest powered off";
            case "guest-reset" -> fail("the guest reset itself (a kernel panic reboots it, panic=-1, "
                    + "and QEMU runs with -no-reboot)");
            case "guest-panic" -> fail("the guest kernel panicked");
            default -> { }
        }
    }

    /**
     * Asks QEMU's run state after a STOP and takes it unless the pause state changed since the STOP
     * (a resume that ran while the question was out): a late "paused" must not undo it.
     */
    private void checkRunState(long seen) {
        try {
            QmpClient monitor = qmp;
            if (monitor != null && monitor.isOpen()) {
                String status = monitor.execute("query-status", null, QMP_TIMEOUT).path("status").asText();
                synchronized (this) {
                    if (runStateChanges == seen) {
                        onRunState(status);
                    }
                }
            }
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "sandbox " + id + ": cannot ask QEMU's run state: " + e.getMessage());
        }
    }

    private void onRunState(String status) {
        switch (status) {
            case "internal-error" -> fail("QEMU stopped the guest on an internal error of the accelerator");
            case "io-error" -> fail("QEMU stopped the guest on a disk I/O error");
            case "guest-panicked" -> fail("the guest kernel panicked");
            // only a QMP stop leaves this state (savevm and loadvm have states of their own): a pause
            // that outlived the daemon is found again on adoption
            case "paused" -> paused = true;
            // vCPUs stopped after an outgoing migration (a state saved for the cold tier by a daemon
            // killed before it was recorded): paused as far as anyone can tell, and a cont runs it
            case "postmigrate" -> paused = true;
            case "shutdown" -> {
                if (stopped == null && failure == null) {
                    stopped = "the guest powered off";
                }
            }
            default -> { }
        }
    }

    /** Waits until the guest agent answers; fails with the console's last lines if QEMU goes or time runs out. */
    void awaitAgent(Instant bootDeadline, Duration allowed, OperationContext context) throws IOException {
        GuestAgentException last = null;
        while (true) {
            if (status() != SandboxStatus.RUNNING) {
                throw new IOException("the guest did not come up: " + reason());
            }
            context.checkpoint("waiting for the guest agent");
            Duration left = Duration.between(Instant.now(), bootDeadline);
            if (left.isNegative() || left.isZero()) {
                throw new IOException("the guest agent did not answer within " + (allowed.toMillis() < 1000
                        ? allowed.toMillis() + " ms" : allowed.toSeconds() + " s")
                        + (last == null ? "" : " (" + last.getMessage() + ")"));
            }
            try {
                agent.ping(Deadline.after(left.compareTo(PING_WAIT) < 0 ? left : PING_WAIT));
                return;
            } catch (GuestAgentException e) {
                last = e;
            }
            sleep(RETRY_MILLIS, "waiting for the guest agent");
        }
    }

    static void sleep(long millis, String what) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while " + what, e);
        }
    }

    /** Records why the VM failed (in its directory too, for the next daemon), then kills QEMU. */
    private synchronized void fail(String why) {
        if (failure != null) {
            return;
        }
        String reason = why + "; the console's last lines: " + VmFiles.tail(record.files().console(), TAIL_BYTES);
        failure = reason;
        LOG.log(Level.WARNING, "sandbox " + id + " failed: " + reason);
        try {
            AtomicFiles.write(record.files().failure(), reason.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot record the failure of sandbox " + id + ": " + e.getMessage());
        }
        close();
        record.process().kill(KILL_WAIT);
    }

    /**
     * Why a VM whose QEMU is gone is powered off rather than failed ({@link VmFiles#poweredOff}), if
     * it is: a boot in a new QEMU let go of exactly the QEMU its record names ({@link #markPoweredOff})
     * and did not finish, and nothing failed it since. A marker naming another QEMU is stale.
     */
    static Optional<String> poweredOffWithoutQemu(VmRecord record) {
        if (Files.exists(record.files().failure())) {
            return Optional.empty();
        }
        String marker;
        try {
            marker = Files.readString(record.files().poweredOff());
        } catch (IOException e) {
            return Optional.empty();
        }
        int newline = marker.indexOf('\n');
        return newline > 0 && marker.substring(0, newline).equals(Long.toString(record.process().pid()))
                ? Optional.of(marker.substring(newline + 1)) : Optional.empty();
    }

    /** Says, before {@code old}'s QEMU is let go for a boot in a new one, that it went on purpose and why. */
    static void markPoweredOff(VmRecord old, String why) throws IOException {
        AtomicFiles.write(old.files().poweredOff(), (old.process().pid() + "\n" + why).getBytes(StandardCharsets.UTF_8));
    }

    /** Marks this VM powered off with {@code why}: its QEMU is gone on purpose ({@link #poweredOffWithoutQemu}). */
    void poweredOff(String why) {
        stopped = why;
    }

    /** Its guest runs again in the same QEMU (a start, or a checkpoint loaded into a guest that had powered off). */
    void runsAgain() {
        stopped = null;
    }

    /** Records that its vCPUs were stopped ({@link QemuPause}) or run again. */
    synchronized void paused(boolean paused) {
        runStateChanges++;
        this.paused = paused;
    }

    /** Whether it runs in a QEMU, which a VM powered off for a boot in a new QEMU may lack: then start it first. */
    void requireQemu() {
        if (!record.process().isRunning() && status() == SandboxStatus.STOPPED) {
            throw ApiException.conflict("sandbox " + id + " is stopped with no QEMU (" + reason() + "); start it first "
                    + "(POST /v1/vms/" + id + "/start)");
        }
    }

    /** Why a VM whose QEMU is gone ended: what the daemon saw, else QEMU's log and the console's last lines. */
    static String exitReason(VmRecord record) {
        try {
            return Files.readString(record.files().failure());
        } catch (IOException e) {
            return "QEMU (pid " + record.process().pid() + ") exited; its last words: "
                    + VmFiles.tail(record.files().qemuLog(), TAIL_BYTES) + "; the console's last lines: "
                    + VmFiles.tail(record.files().console(), TAIL_BYTES);
        }
    }

    VmRecord record() {
        return record;
    }

    GuestAgentClient agent() {
        return agent;
    }

    QmpClient qmp() {
        return qmp;
    }

    /** Its checkpoints in QEMU, which remember what the last listing found. */
    VmCheckpoints checkpoints() {
        return checkpoints;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public InstanceState state() {
        return new InstanceState(record.process().pid(), record.toData());
    }

    /**
     * Its QEMU is about to be quit for the cold tier, its state saved and recorded
     * ({@link QemuHibernation#release}): from then on it is cold, not dead, until core holds the
     * cold instance in its place (false again if the release failed).
     */
    void goingCold(boolean value) {
        goingCold = value;
    }

    private boolean cold() {
        return goingCold || record.cold() != null;
    }

    /** A cold VM ({@link QemuHibernation}) is alive with no QEMU: its state is on disk. */
    @Override
    public boolean alive() {
        if (cold()) {
            return failure == null;
        }
        return failure == null && stopped == null && record.process().isRunning();
    }

    /** A cold VM is paused: its next request starts it again where it was. */
    @Override
    public SandboxStatus status() {
        if (cold()) {
            return failure == null ? SandboxStatus.PAUSED : SandboxStatus.FAILED;
        }
        if (failure == null && stopped != null
                && (record.process().isRunning() || poweredOffWithoutQemu(record).isPresent())) {
            return SandboxStatus.STOPPED;
        }
        if (!alive()) {
            return SandboxStatus.FAILED;
        }
        return paused ? SandboxStatus.PAUSED : SandboxStatus.RUNNING;
    }

    @Override
    public String reason() {
        if (failure != null) {
            return failure;
        }
        if (cold()) {
            return "cold: its state is on disk and its memory freed; its next request starts it again";
        }
        if (!record.process().isRunning() && status() != SandboxStatus.STOPPED) {
            return exitReason(record);
        }
        return stopped;
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    @Override
    public String workspace() {
        return "/work";
    }

    /** The guest's address on its tap, for a VM with an {@code egress} network ({@link VmNetwork}). */
    @Override
    public Optional<String> networkAddress() {
        return record.network() == null ? Optional.empty() : address.get();
    }

    /** QEMU's resident memory (the guest's RAM it has touched, and QEMU's own) and the overlay's size. */
    @Override
    public Optional<ResourceUsage> usage() {
        if (!record.process().isRunning()) {
            return Optional.empty();
        }
        Long disk;
        try {
            disk = Files.size(record.files().disk());
        } catch (IOException e) {
            disk = null;
        }
        return Optional.of(new ResourceUsage(record.process().residentBytes().orElse(null), null, disk));
    }

    /** Lets go of the VM: closes the monitor and agent connections, which the next revision opens again. */
    @Override
    public void close() {
        QmpClient monitor = qmp;
        if (monitor != null) {
            monitor.close();
        }
        agent.close();
    }
}
