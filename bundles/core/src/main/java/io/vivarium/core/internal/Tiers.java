package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;
import io.vivarium.api.IdlePolicy;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.state.StaleRevisionException;

/**
 * Idle tiers (docs/tiers.md). Every request that needs a sandbox's guest, and a touch, is activity:
 * it resets the sandbox's idle clock ({@link IdleClocks}). Once a second, a sandbox idle for its
 * {@code pause_after_secs} is paused through its backend's {@link PauseControl} as an exclusive
 * operation that yields to anything running ({@value SandboxInfo#WARM}, its record says it was
 * demoted); the next request that needs its guest resumes it first ({@link #wake}). A sandbox
 * paused by a request stays paused until resumed or touched. The record keeps the demotion, so a
 * daemon restart keeps every tier.
 */
final class Tiers {
    private static final System.Logger LOG = System.getLogger(Tiers.class.getName());

    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final IdleClocks clocks = new IdleClocks();
    /** When this daemon started: a sandbox without activity since then has been idle since then. */
    private final Instant started = Instant.now();
    private ScheduledExecutorService ticker;

    Tiers(BackendRegistry registry, Sandboxes sandboxes) {
        this.registry = registry;
        this.sandboxes = sandboxes;
    }

    void start() {
        ticker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vivarium-idle-tiers");
            t.setDaemon(true);
            return t;
        });
        ticker.scheduleWithFixedDelay(this::demoteIdle, 1, 1, TimeUnit.SECONDS);
    }

    void stop() {
        if (ticker != null) {
            ticker.shutdownNow();
        }
    }

    /**
     * Activity on {@code sb}, whose instance {@code i} a request is about to use: a sandbox demoted
     * while idle is resumed first; one paused by a request is left as it is.
     */
    SandboxInstance wake(Sandbox sb, SandboxInstance i) {
        clocks.touch(sb.record().id());
        // always under the lock: a request that does not pass the gate (one through an exposed port)
        // must not slip past a demotion that is pausing the sandbox right now
        synchronized (sb.tierLock) {
            if (sb.record().demoted() != null) {
                if (i.status() == SandboxStatus.PAUSED) {
                    pauseControl(sb).resume(i);
                }
                demoted(sb, null);
            }
        }
        return i;
    }

    /** Activity on {@code sb} until the returned action runs: it is not demoted meanwhile ({@link IdleClocks#hold}). */
    Runnable hold(Sandbox sb) {
        return clocks.hold(sb.record().id());
    }

    /** A sandbox that is gone: its clock goes. */
    void forget(SandboxRecord record) {
        clocks.forget(record.id());
    }

    /** Activity on a sandbox that is not paused: its clock starts again. */
    void active(Sandbox sb) {
        clocks.touch(sb.record().id());
    }

    /** {@code POST .../touch}: activity that also promotes a sandbox a request paused. */
    void touch(Sandbox sb, SandboxInstance i) {
        synchronized (sb.tierLock) {
            wake(sb, i);
            if (i.status() == SandboxStatus.PAUSED) {
                pauseControl(sb).resume(i);
            }
        }
    }

    /** A pause or resume by a request: from now on the sandbox's tier is that request's, not a demotion's. */
    void settled(Sandbox sb) {
        synchronized (sb.tierLock) {
            clocks.touch(sb.record().id());
            if (sb.record().demoted() != null) {
                demoted(sb, null);
            }
        }
    }

    /** The tier a sandbox is in, as {@link SandboxInfo#tier()} shows it. */
    static String tierOf(SandboxStatus status) {
        return switch (status) {
            case RUNNING -> SandboxInfo.HOT;
            case PAUSED -> SandboxInfo.WARM;
            default -> null;
        };
    }

    private void demoteIdle() {
        for (Sandbox sb : sandboxes.all()) {
            try {
                demoteIfIdle(sb);
            } catch (ApiException e) {
                LOG.log(e.status() == 409 ? Level.DEBUG : Level.WARNING, "not demoting " + sb.record().id() + " now: "
                        + e.getMessage());
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "demoting idle sandbox " + sb.record().id() + " failed", e);
            }
        }
    }

    private void demoteIfIdle(Sandbox sb) {
        if (!idleLongEnough(sb)) {
            return;
        }
        Optional<PauseControl> pause = registry.get(sb.record().backend()).flatMap(e -> e.seam(PauseControl.class));
        if (pause.isEmpty()) {
            return;
        }
        // yields at once to execs and exclusive operations: the next round tries again
        sb.gate.exclusive(OperationGate.DEMOTION, Duration.ZERO, () -> {
            synchronized (sb.tierLock) {
                SandboxInstance i = sb.instance();
                if (idleLongEnough(sb) && i != null && i.status() == SandboxStatus.RUNNING) {
                    // recorded first: a daemon killed before the pause leaves a running sandbox marked
                    // demoted, which its next request clears; never a paused one its requests cannot wake
                    demoted(sb, SandboxInfo.WARM);
                    try {
                        pause.get().pause(i);
                    } catch (RuntimeException e) {
                        demoted(sb, null);
                        throw e;
                    }
                    sandboxes.observer().sandboxDemoted(SandboxInfo.WARM);
                }
            }
            return null;
        });
    }

    private boolean idleLongEnough(Sandbox sb) {
        SandboxRecord r = sb.record();
        IdlePolicy idle = r.idle();
        SandboxInstance i = sb.instance();
        if (sb.deleted() || idle == null || idle.pauseAfterSecs() == null
                || r.status() != SandboxStatus.RUNNING || !SandboxRecord.CREATED.equals(r.phase()) || i == null
                || clocks.held(r.id())) {
            return false;
        }
        Instant created = Instant.ofEpochSecond(r.createdAtUnix());
        Instant since = clocks.lastTouched(r.id()).orElse(created.isAfter(started) ? created : started);
        // the instance's own status last: it may read /proc, and this runs for every sandbox each second
        return Duration.between(since, Instant.now()).toSeconds() >= idle.pauseAfterSecs()
                && i.status() == SandboxStatus.RUNNING;
    }

    private PauseControl pauseControl(Sandbox sb) {
        return registry.of(sb).require(PauseControl.class, "pause its sandboxes");
    }

    private void demoted(Sandbox sb, String tier) {
        sb.lifecycle.lock();
        try {
            if (!sb.deleted()) {
                sandboxes.persist(sb, sb.record().withDemoted(tier));
            }
        } catch (IOException | StaleRevisionException e) {
            throw ApiException.internal("cannot record the tier of sandbox " + sb.record().id() + ": " + e.getMessage(), e);
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
    }
}
