package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import io.vivarium.api.ApiException;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.SandboxInstance;

/**
 * A dry-run over a sandbox's checkpoints (a VM's or a gVisor container's): checkpoint {@code dryrun-<uuid>}, list the files in
 * the guest, run the command, list again, restore, delete the checkpoint. The checkpoint is
 * recorded in a {@link DryRunIntents intent} before it is taken, so a dry-run cut short by a
 * daemon crash is finished when the sandbox is adopted again ({@link #replay}).
 */
final class CheckpointDryRun {
    private static final System.Logger LOG = System.getLogger(CheckpointDryRun.class.getName());
    /** What the answer's {@code reverted_via} says: the reference API's word for this mechanism, kept on the wire. */
    static final String MECHANISM = "snapshot";

    private final Sandboxes sandboxes;
    private final Checkpointing checkpointing;
    private final DryRunIntents intents;
    private final ChangeTracker tracker;

    CheckpointDryRun(Sandboxes sandboxes, Checkpointing checkpointing, ChangeTracker tracker) {
        this.sandboxes = sandboxes;
        this.checkpointing = checkpointing;
        this.tracker = tracker;
        this.intents = new DryRunIntents(sandboxes);
    }

    /** Runs {@code exec} and reverts the sandbox; the caller holds the sandbox's gate exclusively. */
    DryRunResult run(Sandbox sb, SandboxInstance instance, Checkpoints c, ExecRequest exec, List<String> paths,
            FingerprintMode mode) {
        String id = sb.record().id();
        String tag = Checkpointing.DRY_RUN_PREFIX + UUID.randomUUID();
        long startedAt = Instant.now().getEpochSecond();
        DryRunIntents.Intent intent = new DryRunIntents.Intent(tag, DryRunIntents.CHECKPOINTING, startedAt);
        intents.write(id, intent);
        try {
            c.create(instance, tag, checkpointing.context("checkpointing sandbox " + sb.record().id() + " for a dry-run"));
        } catch (RuntimeException e) {
            clearQuietly(id);
            throw e;
        }
        ExecResult result;
        ChangeSet changes;
        try {
            FileListing before = tracker.listForDryRun(instance, paths, mode);
            result = instance.channel().exec(exec);
            FileListing after = tracker.listForDryRun(instance, paths, mode);
            changes = ChangeTracker.compare(before.files(), after.files(), mode.name(), paths, startedAt);
        } catch (RuntimeException e) {
            revert(sb, instance, c, id, intent, e);
            throw e;
        }
        revert(sb, instance, c, id, intent, null);
        return new DryRunResult(result.stdout(), result.stderr(), result.exitCode(), result.timedOut(),
                result.truncated(), result.durationMs(), changes, true, MECHANISM);
    }

    /**
     * Restores the checkpoint and deletes it. A failed restore is what the caller sees (the
     * checkpoint is kept and named, so they can restore it themselves); {@code cause}, the
     * failure that made the dry-run stop early, is kept with it.
     */
    private void revert(Sandbox sb, SandboxInstance instance, Checkpoints c, String id, DryRunIntents.Intent intent,
            RuntimeException cause) {
        SandboxInstance restored;
        try {
            restored = checkpointing.restoreLeavingClock(sb, instance, c, intent.tag());
        } catch (RuntimeException e) {
            clearQuietly(id);
            ApiException failed = ApiException.internal("the dry-run's command ran but restoring the sandbox failed, so its "
                    + "changes may still be in it: " + e.getMessage() + "; checkpoint " + intent.tag()
                    + " is kept: restore it with POST /v1/sandboxes/" + sb.record().id() + "/checkpoints/"
                    + intent.tag() + "/restore", e);
            if (cause != null) {
                failed.addSuppressed(cause);
            }
            throw failed;
        }
        // the guest sets its clock while the monitor deletes the checkpoint: the first guest call
        // after a restore is its slowest (TCG translates the guest anew), and QEMU's main loop
        // serves the delete and the agent's bytes in turn, so only the guest's part overlaps
        CompletableFuture<Boolean> clock = CompletableFuture.supplyAsync(() -> Checkpointing.setClock(sb, restored),
                task -> Thread.ofVirtual().name("vivarium-clock-" + id).start(task));
        boolean clockDone;
        try {
            recordRestored(sb, id, intent);
            deleteCheckpoint(sb, restored, c, id, intent.tag());
        } finally {
            // join waits through interrupts: nobody reaches the guest before the clock thread ends, since
            // the caller holds the gate; a thread that died of an error counts as not done, and the
            // second try below meets that error itself
            clockDone = clock.exceptionally(e -> false).join();
        }
        if (!clockDone) {
            // once more, now that the monitor is free: the first try may have waited behind the delete
            Checkpointing.setClock(sb, restored);
        }
    }

    /**
     * Says the checkpoint was restored, so that a crash before its delete does not restore it
     * again at start-up. If that cannot be written, the delete right after makes it moot (a
     * start-up finds no checkpoint and drops the intent), so the dry-run goes on.
     */
    private void recordRestored(Sandbox sb, String id, DryRunIntents.Intent intent) {
        try {
            intents.write(id, intent.restored());
        } catch (ApiException e) {
            LOG.log(Level.ERROR, "sandbox " + sb.record().id() + ": cannot record that dry-run checkpoint "
                    + intent.tag() + " was restored; deleting it now", e);
        }
    }

    private void deleteCheckpoint(Sandbox sb, SandboxInstance instance, Checkpoints c, String id, String tag) {
        try {
            c.delete(instance, tag);
            intents.clear(id);
        } catch (RuntimeException | IOException e) {
            // the VM was reverted; the intent stays so that the next start-up deletes the checkpoint
            LOG.log(Level.ERROR, "dry-run checkpoint " + tag + " of sandbox " + sb.record().id()
                    + " could not be deleted; the next start-up deletes it", e);
        }
    }

    /**
     * Finishes a dry-run a crash cut short, once its sandbox is adopted again: a checkpoint still
     * there is restored (unless the intent says that happened) and deleted. If that fails the
     * sandbox is marked failed with a reason naming the checkpoint: never kept silently.
     */
    void replay(Sandbox sb, Duration patience) {
        String id = sb.record().id();
        Optional<DryRunIntents.Intent> found = intents.read(id);
        SandboxInstance instance = sb.instance();
        if (found.isEmpty() || instance == null) {
            return;
        }
        DryRunIntents.Intent intent = found.get();
        sb.gate.exclusive("dry-run recovery", patience, () -> {
            try {
                Checkpoints c = checkpointing.of(sb);
                if (Checkpointing.exists(c, instance, intent.tag())) {
                    SandboxInstance now = instance;
                    if (!DryRunIntents.RESTORED.equals(intent.phase())) {
                        now = checkpointing.restore(sb, instance, c, intent.tag());
                    }
                    c.delete(now, intent.tag());
                }
                intents.clear(id);
                LOG.log(Level.WARNING, "sandbox " + sb.record().id() + ": finished a dry-run the daemon stopped in the "
                        + "middle of (" + intent.phase() + "); checkpoint " + intent.tag() + " restored and deleted");
            } catch (RuntimeException | IOException e) {
                sb.lifecycle.lock();
                try {
                    sandboxes.fail(sb, "a dry-run was cut short by a daemon stop and its checkpoint " + intent.tag()
                            + " could not be restored and deleted (" + e.getMessage() + "), so the dry-run's changes "
                            + "may still be in the sandbox");
                } finally {
                    sb.lifecycle.unlock(sandboxes.observer());
                }
            }
            return null;
        });
    }

    private void clearQuietly(String id) {
        try {
            intents.clear(id);
        } catch (IOException e) {
            LOG.log(Level.ERROR, "cannot remove the dry-run intent of sandbox " + id, e);
        }
    }
}
