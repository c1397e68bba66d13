package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Core's side of the checkpoint seam: checks tags, finds the {@link Checkpoints} a sandbox's
 * backend registered (by its name, never by backend), runs each checkpoint operation alone on its
 * sandbox ({@link OperationGate}), and after every restore persists what runs and sets the guest
 * clock. Tags starting with {@value #DRY_RUN_PREFIX} are core's own dry-runs': callers cannot take
 * one, but may list, restore and delete one a failed dry-run kept (a listing waits for a dry-run in
 * progress, so it never shows one in use).
 */
final class Checkpointing {
    private static final System.Logger LOG = System.getLogger(Checkpointing.class.getName());
    private static final Pattern TAG = Pattern.compile(Checkpoints.TAG);
    /** Tags core takes for its own dry-runs; callers cannot use them. */
    static final String DRY_RUN_PREFIX = "dryrun-";
    /** How long a backend may take to write or load a checkpoint (a relaunch under TCG included). */
    private static final Duration DEADLINE = Duration.ofMinutes(5);

    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final LiveInstances live;
    private final BooleanSupplier stopping;

    Checkpointing(BackendRegistry registry, Sandboxes sandboxes, LiveInstances live, BooleanSupplier stopping) {
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.live = live;
        this.stopping = stopping;
    }

    /** A tag a caller sent for a new checkpoint: a plain name (see {@link #checkTag}), not one core reserves. */
    static String checkNewTag(String tag) {
        checkTag(tag);
        if (tag.startsWith(DRY_RUN_PREFIX)) {
            throw ApiException.badRequest("tags starting with " + DRY_RUN_PREFIX + " are reserved for dry-runs");
        }
        return tag;
    }

    /** A tag a caller sent: a plain name, never a path. */
    static String checkTag(String tag) {
        if (tag == null || tag.isEmpty()) {
            throw ApiException.badRequest("tag is required: a plain name such as \"before-upgrade\"");
        }
        if (!TAG.matcher(tag).matches()) {
            throw ApiException.badRequest("tag must be a plain name of letters, digits, '.', '_' and '-' (at most 64, "
                    + "starting with a letter or digit; no slashes), got \"" + printable(tag) + "\"");
        }
        return tag;
    }

    /** The checkpoints seam of the sandbox's backend: 503 while the backend is away, 501 if it has none. */
    Checkpoints of(Sandbox sb) {
        return registry.of(sb).require(Checkpoints.class, "checkpoint its instances");
    }

    OperationContext context(String what) {
        return new CoreOperation(what, Instant.now().plus(DEADLINE), stopping);
    }

    /** Checkpoints the running sandbox under {@code tag} (already checked): 409 if it has one so named. */
    CheckpointInfo create(Sandbox sb, String tag) {
        sb.refuseWritableVolume("checkpoint");
        return sb.gate.exclusive("checkpoint", live.patience(), () -> {
            SandboxInstance instance = live.of(sb);
            Checkpoints c = of(sb);
            if (exists(c, instance, tag)) {
                throw ApiException.conflict("sandbox " + sb.record().id() + " already has a checkpoint " + tag
                        + "; choose another tag");
            }
            return c.create(instance, tag, context("checkpointing sandbox " + sb.record().id() + " as " + tag));
        });
    }

    /** Returns the sandbox (running, or stopped: then started from it) to its checkpoint {@code tag}: 404 if none. */
    SandboxInfo restore(Sandbox sb, String tag) {
        return sb.gate.exclusive("restore", live.patience(), () -> {
            SandboxInstance instance = live.ofEvenStopped(sb);
            Checkpoints c = of(sb);
            if (!exists(c, instance, tag)) {
                throw ApiException.notFound("sandbox " + sb.record().id() + " has no checkpoint " + tag);
            }
            restore(sb, instance, c, tag);
            return sb.info();
        });
    }

    /** The sandbox's checkpoints, oldest first: once a dry-run ends, its own is there only if its restore failed. */
    List<CheckpointInfo> list(Sandbox sb) {
        return sb.gate.exclusive("checkpoint listing", live.patience(), () -> of(sb).list(live.ofEvenStopped(sb)));
    }

    /** Deletes the checkpoint {@code tag} (already checked): 404 if there is none. */
    void delete(Sandbox sb, String tag) {
        sb.gate.exclusive("checkpoint delete", live.patience(), () -> {
            SandboxInstance instance = live.ofEvenStopped(sb);
            if (!of(sb).delete(instance, tag)) {
                throw ApiException.notFound("sandbox " + sb.record().id() + " has no checkpoint " + tag);
            }
            return null;
        });
    }

    /**
     * Restores {@code tag}, records what runs afterwards (a relaunch's new state is persisted
     * before anything else) and sets the guest clock. Returns the instance now running. The caller
     * holds the sandbox's gate exclusively.
     */
    SandboxInstance restore(Sandbox sb, SandboxInstance before, Checkpoints c, String tag) {
        SandboxInstance after = restoreLeavingClock(sb, before, c, tag);
        setClock(sb, after);
        return after;
    }

    /** {@link #restore} without the clock: the caller must {@link #setClock} before it lets anyone reach the guest. */
    SandboxInstance restoreLeavingClock(Sandbox sb, SandboxInstance before, Checkpoints c, String tag) {
        SandboxInstance after = c.restore(before, tag, context("restoring sandbox " + sb.record().id() + " to " + tag));
        if (after != before || !after.state().equals(sb.record().state())
                || sb.record().status() != SandboxStatus.RUNNING) {
            sandboxes.replace(sb, before, after, SandboxStatus.RUNNING);
        }
        return after;
    }

    static boolean exists(Checkpoints c, SandboxInstance instance, String tag) {
        return c.list(instance).stream().anyMatch(i -> i.tag().equals(tag));
    }

    /**
     * Sets a restored guest's clock, which is the checkpoint's; a channel that cannot set it is
     * logged, not fatal (the restore itself worked). Returns false when it was not set and a
     * second try might set it (not for a channel that cannot set clocks at all).
     */
    static boolean setClock(Sandbox sb, SandboxInstance instance) {
        try {
            instance.channel().setTime(Instant.now());
            return true;
        } catch (ApiException e) {
            // a channel that cannot set clocks (501) belongs to a guest whose clock never went back (gVisor's is the host's)
            LOG.log(e.status() == 501 ? Level.DEBUG : Level.WARNING, "the clock of sandbox " + sb.record().id()
                    + " was not set after a restore: " + e.getMessage());
            return e.status() == 501;
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "the clock of sandbox " + sb.record().id() + " was not set after a restore", e);
        }
        return false;
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        s.codePoints().limit(80).forEach(c -> b.append(c < 0x20 || c == 0x7f ? String.format("\\u%04x", c) : Character.toString(c)));
        return b.toString();
    }
}
