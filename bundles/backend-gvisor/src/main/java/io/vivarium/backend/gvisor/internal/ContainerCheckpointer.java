package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.testpoints.TestPoints;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/**
 * runsc checkpoints of running containers, the engine under {@link GvisorImages} (a snapshot or
 * branch) and {@link GvisorCheckpoints}: a checkpoint taken while the container is frozen, after
 * which it runs on in the same sandbox process ({@link #checkpointAndResume}), and a container
 * replaced by one restored from a checkpoint ({@link #restoreFrom}). runsc cannot save a socket
 * bound on or connected to the host, which the agent's is, so the agent lets go of it for the
 * checkpoint and listens again after; a daemon killed in between leaves a mark that the next
 * adopt or resume undoes ({@link #runOnAfterCheckpoint}).
 */
final class ContainerCheckpointer {

    /** How long the agent may take to close its sockets before a checkpoint (a few milliseconds, measured). */
    private static final Duration RELEASE_WAIT = Duration.ofSeconds(5);
    private static final long RELEASE_RETRY_MILLIS = 5;
    private static final System.Logger LOG = System.getLogger(ContainerCheckpointer.class.getName());
    /** What the {@link ContainerFiles#checkpointing()} mark of a checkpoint that leaves its container paused says. */
    static final String PAUSE_KEPT = "pause kept";

    private final GvisorSettings settings;
    private final Runsc runsc;
    private final GvisorHostProbe probe;
    private final GvisorLauncher launcher;
    private final RetiredContainers retired;

    ContainerCheckpointer(GvisorSettings settings, Runsc runsc, GvisorHostProbe probe, GvisorLauncher launcher,
            RetiredContainers retired) {
        this.settings = settings;
        this.runsc = runsc;
        this.probe = probe;
        this.launcher = launcher;
        this.retired = retired;
    }

    /** What runs while a container is frozen for its checkpoint, or gone for a restore. */
    @FunctionalInterface
    interface WhileStopped {
        void run() throws IOException;
    }

    /**
     * Writes a checkpoint of the running container to {@code image} and runs {@code whileStopped}
     * while its processes are still frozen (its workspace quiet), then lets them run on in the same
     * sandbox process: {@code runsc pause}, {@code runsc checkpoint --leave-running} (which leaves a
     * paused container paused), {@code whileStopped}, {@code runsc resume}. runsc cannot save a
     * socket bound on or connected to the host (its message: "Cannot save endpoint with bound host
     * socket"), which the agent's is: the agent is asked to close its listener and connections
     * first ({@code SIGUSR1} to its supervisor, which tells the worker) and to listen again after
     * ({@code SIGUSR2}); a checkpoint refused for that is tried again until they are closed. The
     * container runs on and its agent listens again whether or not this succeeds.
     *
     * @return how long the container's processes were frozen, in milliseconds: from when
     *         {@code runsc pause} returned to when {@code runsc resume} did
     */
    long checkpointAndResume(GvisorInstance instance, Path image, WhileStopped whileStopped,
            OperationContext context) throws IOException {
        ContainerRecord record = instance.record();
        if (!record.running()) {
            throw new IOException(instance.reason());
        }
        probe.requireInPlaceCheckpoints();
        context.checkpoint("checkpointing container " + record.containerId());
        Instant deadline = Instant.now().plus(settings.startTimeout());
        Files.createDirectories(image);
        AtomicFiles.write(record.files().checkpointing(), new byte[0]);
        instance.disconnect();
        long start;
        try {
            releaseAgent(record);
            start = checkpointPaused(record, image);
            TestPoints.reach("container.paused");
        } catch (IOException | RuntimeException e) {
            try {
                runOnAfterCheckpoint(record);
            } catch (IOException | RuntimeException running) {
                instance.paused(true);
                e.addSuppressed(running);
            }
            throw e;
        }
        Throwable failure = null;
        try {
            whileStopped.run();
        } catch (Throwable t) {
            failure = t;
        }
        // the container runs on all the same; what stopped the work is what the caller hears of
        boolean frozen = true;
        try {
            runsc.resume(record.files(), record.containerId());
            frozen = false;
        } catch (IOException | RuntimeException e) {
            // reported paused, and still marked: a resume through the API or the next adopt runs it on
            instance.paused(true);
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        long resumed = System.nanoTime();
        if (!frozen) {
            relisten(record);
            Files.deleteIfExists(record.files().checkpointing());
        }
        if (failure != null) {
            throw rethrown(failure);
        }
        instance.awaitAgent(deadline, context);
        return (resumed - start) / 1_000_000;
    }

    /**
     * Writes a checkpoint of a container its caller paused to {@code image} and leaves it paused,
     * for the cold tier ({@link GvisorHibernation#save}). Its agent must let go of its socket first,
     * which a frozen agent cannot: the container runs for that moment (a few milliseconds) and is
     * paused again for the checkpoint. It stays paused with its agent deaf, and marked so
     * ({@link #PAUSE_KEPT}): its next resume ({@link GvisorPause#resume}) asks the agent to listen
     * again, and a daemon killed meanwhile finds it paused. On failure it is paused all the same.
     */
    void checkpointLeavingPaused(GvisorInstance instance, Path image, OperationContext context) throws IOException {
        ContainerRecord record = instance.record();
        if (!record.running()) {
            throw new IOException(instance.reason());
        }
        probe.requireInPlaceCheckpoints();
        context.checkpoint("checkpointing container " + record.containerId());
        Files.createDirectories(image);
        AtomicFiles.write(record.files().checkpointing(), PAUSE_KEPT.getBytes(StandardCharsets.UTF_8));
        instance.disconnect();
        try {
            if (instance.status() == SandboxStatus.PAUSED) {
                runsc.resume(record.files(), record.containerId());
            }
            releaseAgent(record);
            checkpointPaused(record, image);
        } catch (IOException | RuntimeException e) {
            try {
                if (runsc.state(record.files(), record.containerId()).filter(Runsc.ContainerState::paused).isEmpty()) {
                    runsc.pause(record.files(), record.containerId());
                }
            } catch (IOException | RuntimeException pausing) {
                e.addSuppressed(pausing);
            }
            throw e;
        } finally {
            instance.paused(true);
        }
    }

    /** Whether a checkpoint left the container of {@code record} paused for its caller ({@link #PAUSE_KEPT}). */
    static boolean pauseKept(ContainerRecord record) {
        try {
            return PAUSE_KEPT.equals(Files.readString(record.files().checkpointing(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            return false;
        }
    }

    private static IOException rethrown(Throwable failure) {
        if (failure instanceof IOException e) {
            return e;
        } else if (failure instanceof RuntimeException e) {
            throw e;
        } else if (failure instanceof Error e) {
            throw e;
        }
        return new IOException(failure);
    }

    /** {@code SIGUSR1}: the agent closes its listener and connections; waits until its socket's file is gone. */
    private void releaseAgent(ContainerRecord record) throws IOException {
        runsc.signal(record.files(), record.containerId(), "USR1");
        Instant until = Instant.now().plus(RELEASE_WAIT);
        // the supervisor removes the socket's file once it closed its listener, and tells the worker
        Path socket = record.files().agentDir().resolve(ContainerFiles.SOCKET_NAME);
        while (Files.exists(socket, LinkOption.NOFOLLOW_LINKS) && Instant.now().isBefore(until)) {
            pauseBeforeRetry();
        }
    }

    /**
     * Pauses the container and writes its checkpoint, leaving it paused; while runsc still finds a
     * host socket (the worker closing its connections a moment after the supervisor), resumes it
     * and tries again.
     *
     * @return when the container was frozen for the checkpoint: once {@code runsc pause} returned
     *         ({@link System#nanoTime()}; that command's own start-up, 20-70 ms, is not a pause)
     */
    private long checkpointPaused(ContainerRecord record, Path image) throws IOException {
        Instant until = Instant.now().plus(RELEASE_WAIT);
        while (true) {
            runsc.pause(record.files(), record.containerId());
            long start = System.nanoTime();
            try {
                runsc.checkpointLeavingRunning(record.files(), record.containerId(), image);
                return start;
            } catch (IOException e) {
                try {
                    runsc.resume(record.files(), record.containerId());
                } catch (IOException resuming) {
                    e.addSuppressed(resuming);
                    throw e;
                }
                boolean hostSocket = e.getMessage() != null && (e.getMessage().contains("host socket")
                        || e.getMessage().contains("connectionedEndpoint"));
                if (!hostSocket || Instant.now().isAfter(until)) {
                    throw new IOException("cannot checkpoint container " + record.containerId() + ": "
                            + e.getMessage(), e);
                }
            }
            pauseBeforeRetry();
        }
    }

    private static void pauseBeforeRetry() throws IOException {
        try {
            Thread.sleep(RELEASE_RETRY_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while checkpointing", e);
        }
    }

    /**
     * Runs on a container a checkpoint left frozen or deaf (its {@code checkpointing} mark): resumes
     * it if runsc says it is paused, asks its agent to listen again, removes the mark. The mark
     * stays if the resume fails, so that a resume or the next adopt tries again.
     */
    void runOnAfterCheckpoint(ContainerRecord record) throws IOException {
        if (runsc.state(record.files(), record.containerId()).filter(Runsc.ContainerState::paused).isPresent()) {
            runsc.resume(record.files(), record.containerId());
        }
        relisten(record);
        Files.deleteIfExists(record.files().checkpointing());
    }

    /** Asks the agent to listen again ({@code SIGUSR2}): after a restore, or a checkpoint that failed. */
    private void relisten(ContainerRecord record) {
        try {
            runsc.signal(record.files(), record.containerId(), "USR2");
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot ask the agent of " + record.containerId()
                    + " to listen again: " + e.getMessage());
        }
    }

    /**
     * Replaces the container of {@code instance} (running, paused or dead) by one
     * restored from the checkpoint in {@code image} from the same bundle, running {@code whileGone}
     * once the old one's sandbox process is gone (killed from the host and awaited, so that nothing
     * of it writes on while {@code whileGone} replaces its workspace); waits for the agent. The new container has a new id: runsc
     * deletes a killed container slowly (1.5 s measured, against 130 ms for the restore), so the
     * old one is marked retired before it is killed and deleted in the background once the new
     * one runs ({@link RetiredContainers}).
     *
     * @return when the restored container started running ({@link System#nanoTime()})
     */
    long restoreFrom(GvisorInstance instance, Path image, WhileStopped whileGone, OperationContext context)
            throws IOException {
        ContainerRecord old = instance.record();
        removeUnrecordedRestore(old);
        retired.mark(old.files(), old.containerId());
        instance.disconnect();
        // gone, not only signalled, before whileGone touches what it wrote
        IOException notGone = new IOException("container " + old.containerId() + " could not be stopped for the restore");
        if (!launcher.killSandboxProcess(old, notGone)) {
            throw notGone;
        }
        whileGone.run();
        long resumedAt = restoreInto(instance, image, context);
        retired.deleteLater(old.files(), old.containerId());
        return resumedAt;
    }

    /**
     * Starts a cold container ({@link GvisorHibernation}), which no longer runs, again from its
     * checkpoint, in a new container of the same bundle and workspace; waits for the agent.
     */
    void wake(GvisorInstance instance, OperationContext context) throws IOException {
        ContainerRecord cold = instance.record();
        removeUnrecordedRestore(cold);
        // the agent's link lives in a temporary directory, which a reboot of the host may have emptied
        cold.files().relink();
        try {
            restoreInto(instance, cold.cold(), context);
        } catch (IOException | RuntimeException e) {
            ContainerRecord woken = instance.record();
            if (woken == cold) {
                // runsc may have started it all the same: the restoring mark names it
                launcher.removeUnrecordedRestore(cold.files(), cold.containerId(), e);
            } else {
                // restored, but its agent did not answer: it stays cold, and what was restored goes,
                // retired first so that the next adopt or the destroy deletes it if this does not
                try {
                    retired.mark(woken.files(), woken.containerId());
                } catch (IOException marking) {
                    e.addSuppressed(marking);
                }
                if (launcher.killSandboxProcess(woken, e)) {
                    launcher.remove(woken.files(), woken.containerId(), e);
                }
                Files.deleteIfExists(cold.files().sandboxProcess());
                instance.restored(cold);
            }
            throw e;
        }
    }

    private void removeUnrecordedRestore(ContainerRecord old) throws IOException {
        RuntimeException leftovers = new RuntimeException();
        launcher.removeUnrecordedRestore(old.files(), old.containerId(), leftovers);
        if (leftovers.getSuppressed().length > 0) {
            throw new IOException("cannot remove the container an earlier restore left: "
                    + leftovers.getSuppressed()[0].getMessage(), leftovers.getSuppressed()[0]);
        }
    }

    /** Runs {@code instance} on in a new container restored from {@code image}, its old one gone. */
    private long restoreInto(GvisorInstance instance, Path image, OperationContext context) throws IOException {
        ContainerRecord old = instance.record();
        Instant deadline = Instant.now().plus(settings.startTimeout());
        OciSpec.rebindAgentBinary(old.files().config(), launcher.agentBinary().getParent());
        String containerId = GvisorLauncher.newContainerId(instance.id());
        // left in place if the restore fails, so that the next restore, adopt or destroy removes what it started
        AtomicFiles.write(old.files().restoring(), containerId.getBytes(StandardCharsets.UTF_8));
        ContainerRecord restored = launcher.restore(old.files(), containerId, image, deadline, context);
        long resumedAt = System.nanoTime();
        instance.restored(old.restoredAs(restored));
        Files.deleteIfExists(old.files().restoring());
        instance.awaitAgent(deadline, context);
        return resumedAt;
    }
}
