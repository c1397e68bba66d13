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
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.common.testpoints.TestPoints;

/**
 * Idle tiers (docs/tiers.md). Every request that needs a sandbox's guest, and a touch, is activity:
 * it resets the sandbox's idle clock ({@link IdleClocks}). Once a second, a sandbox idle for its
 * {@code pause_after_secs} is paused through its backend's {@link PauseControl} as an exclusive
 * operation that yields to anything running ({@value SandboxInfo#WARM}, its record says it was
 * demoted), and one idle for its {@code cold_after_secs} is saved to disk and its memory freed
 * through its backend's {@link Hibernation} ({@value SandboxInfo#COLD}: the saved state recorded
 * before what ran is released, so a daemon killed midway leaves it as it was or wholly cold); the
 * next request that needs its guest resumes or wakes it first ({@link #wake}). A sandbox paused by
 * a request stays paused until resumed or touched. The record keeps the demotion, so a daemon
 * restart keeps every tier.
 */
final class Tiers {
    private static final System.Logger LOG = System.getLogger(Tiers.class.getName());
    /** How long saving a sandbox to disk, or starting it again from there, may take. */
    private static final Duration WAKE_DEADLINE = Duration.ofMinutes(2);

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
            if (SandboxInfo.COLD.equals(sb.record().demoted())) {
                return unhibernate(sb, i);
            }
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
            SandboxInstance woken = wake(sb, i);
            if (woken.status() == SandboxStatus.PAUSED) {
                pauseControl(sb).resume(woken);
            }
        }
    }

    /** A cold sandbox's instance started again from its saved state, for a request that pauses or resumes it; else {@code i}. */
    SandboxInstance warmedUp(Sandbox sb, SandboxInstance i) {
        synchronized (sb.tierLock) {
            return SandboxInfo.COLD.equals(sb.record().demoted()) ? unhibernate(sb, i) : i;
        }
    }

    /** Starts a cold sandbox again where it was saved, and records it hot. */
    private SandboxInstance unhibernate(Sandbox sb, SandboxInstance cold) {
        Hibernation h = registry.of(sb).require(Hibernation.class, "wake its cold sandboxes");
        boolean wasCold = h.cold(cold);
        SandboxInstance hot = wasCold ? woken(sb, h, cold) : cold;
        swap(sb, cold, hot, sb.record().with(hot.state(), SandboxStatus.RUNNING).withDemoted(null));
        if (wasCold) {
            try {
                h.discardSaved(hot);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "sandbox " + sb.record().id() + " is running again, but its saved state stays on "
                        + "disk until its next cold spell or its delete: " + e.getMessage());
            }
        }
        return hot;
    }

    private static SandboxInstance woken(Sandbox sb, Hibernation h, SandboxInstance cold) {
        try {
            return h.wake(cold, new CoreOperation("waking sandbox " + sb.record().id(), Instant.now().plus(WAKE_DEADLINE),
                    () -> false));
        } catch (RuntimeException e) {
            throw new ApiException(503, "sandbox " + sb.record().id() + " could not be started again from its saved state: "
                    + Optional.ofNullable(e.getMessage()).orElse(e.getClass().getSimpleName())
                    + "; it stays cold (retry, or delete it)", null, e);
        }
    }

    /** Records {@code record} for {@code sb} and puts {@code after} in place of {@code before}, as one step. */
    private void swap(Sandbox sb, SandboxInstance before, SandboxInstance after, SandboxRecord record) {
        sb.lifecycle.lock();
        try {
            if (sb.deleted()) {
                return;
            }
            sandboxes.persist(sb, record);
            sb.replace(before, after);
        } catch (IOException | StaleRevisionException e) {
            throw ApiException.internal("cannot record the tier of sandbox " + sb.record().id() + ": " + e.getMessage(), e);
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
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
    static String tierOf(SandboxStatus status, String demoted) {
        if (SandboxInfo.COLD.equals(demoted) && status == SandboxStatus.PAUSED) {
            return SandboxInfo.COLD;
        }
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
                // busy (409), or a seam this host cannot run (501, e.g. a runsc without checkpoints in place): every second
                LOG.log(e.status() == 409 || e.status() == 501 ? Level.DEBUG : Level.WARNING, "not demoting "
                        + sb.record().id() + " now: " + e.getMessage());
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "demoting idle sandbox " + sb.record().id() + " failed", e);
            }
        }
    }

    private void demoteIfIdle(Sandbox sb) {
        if (dueCold(sb) && hibernateIfIdle(sb)) {
            return;
        }
        if (!dueWarm(sb)) {
            return;
        }
        Optional<PauseControl> pause = seam(sb, PauseControl.class);
        if (pause.isEmpty()) {
            return;
        }
        // yields at once to execs and exclusive operations: the next round tries again
        sb.gate.exclusive(OperationGate.DEMOTION, Duration.ZERO, () -> {
            synchronized (sb.tierLock) {
                SandboxInstance i = sb.instance();
                if (i != null && dueWarm(sb)) {
                    pauseDemoted(sb, i, pause.get());
                }
            }
            return null;
        });
    }

    /**
     * Pauses a running sandbox as a warm demotion, recorded first: a daemon killed before the pause
     * leaves a running sandbox marked demoted, which its next request clears; never a paused one its
     * requests cannot wake.
     */
    private void pauseDemoted(Sandbox sb, SandboxInstance i, PauseControl pause) {
        demoted(sb, SandboxInfo.WARM);
        try {
            pause.pause(i);
        } catch (RuntimeException e) {
            demoted(sb, null);
            throw e;
        }
        sandboxes.observer().sandboxDemoted(SandboxInfo.WARM);
    }

    private <T> Optional<T> seam(Sandbox sb, Class<T> type) {
        return registry.get(sb.record().backend()).flatMap(e -> e.seam(type));
    }

    /** Whether {@code sb} is due to go warm: running, and idle for its {@code pause_after_secs}. */
    private boolean dueWarm(Sandbox sb) {
        IdlePolicy idle = sb.record().idle();
        SandboxInstance i = sb.instance();
        // the instance's own status last: it may read /proc, and this runs for every sandbox each second
        return idle != null && idleFor(sb, idle.pauseAfterSecs()) && i != null && i.status() == SandboxStatus.RUNNING;
    }

    /**
     * Whether {@code sb} is due to go cold: not cold yet, running or warm by a demotion (not by a
     * request), and idle for its {@code cold_after_secs}.
     */
    private boolean dueCold(Sandbox sb) {
        SandboxRecord r = sb.record();
        IdlePolicy idle = r.idle();
        SandboxInstance i = sb.instance();
        if (idle == null || SandboxInfo.COLD.equals(r.demoted()) || !idleFor(sb, idle.coldAfterSecs()) || i == null) {
            return false;
        }
        SandboxStatus status = i.status();
        return status == SandboxStatus.RUNNING || status == SandboxStatus.PAUSED && r.demoted() != null;
    }

    /** Whether {@code sb}, created and neither failed nor stopped, has had no activity for {@code secs} (null: never due). */
    private boolean idleFor(Sandbox sb, Integer secs) {
        SandboxRecord r = sb.record();
        if (secs == null || sb.deleted() || r.status() == SandboxStatus.FAILED || r.status() == SandboxStatus.STOPPED
                || !SandboxRecord.CREATED.equals(r.phase()) || clocks.held(r.id())) {
            return false;
        }
        Instant created = Instant.ofEpochSecond(r.createdAtUnix());
        Instant since = clocks.lastTouched(r.id()).orElse(created.isAfter(started) ? created : started);
        return Duration.between(since, Instant.now()).toSeconds() >= secs;
    }

    /**
     * Saves an idle sandbox to disk through its backend's {@link Hibernation} and frees what ran: the
     * saved state is recorded (cold) before the release, so a daemon killed before that record finds
     * the sandbox as it was, and one killed after it finds it cold (adopting the saved state ends
     * what still ran). A sandbox that writes a volume its backend has as a disk stays warm. False
     * when it cannot go cold (its backend lacks the seams, or that volume), so that it may go warm.
     */
    private boolean hibernateIfIdle(Sandbox sb) {
        Optional<Hibernation> hibernation = seam(sb, Hibernation.class);
        Optional<PauseControl> pause = seam(sb, PauseControl.class);
        if (hibernation.isEmpty() || pause.isEmpty()
                || sb.record().mountsVolumeDisks() && sb.record().writableVolume().isPresent()) {
            return false;
        }
        sb.gate.exclusive(OperationGate.DEMOTION, Duration.ZERO, () -> {
            synchronized (sb.tierLock) {
                SandboxInstance i = sb.instance();
                if (i == null || !dueCold(sb)) {
                    return null;
                }
                if (i.status() == SandboxStatus.RUNNING) {
                    // paused first: the state saved is then the one it keeps
                    pauseDemoted(sb, i, pause.get());
                }
                Hibernation h = hibernation.get();
                InstanceState saved = h.save(i, new CoreOperation("saving idle sandbox " + sb.record().id(),
                        Instant.now().plus(WAKE_DEADLINE), () -> false));
                TestPoints.reach("tiers.saved");
                SandboxRecord before = sb.record();
                swap(sb, i, i, before.with(saved, SandboxStatus.PAUSED).withDemoted(SandboxInfo.COLD));
                TestPoints.reach("tiers.cold.recorded");
                SandboxInstance cold;
                try {
                    cold = h.release(i, saved);
                } catch (RuntimeException e) {
                    swap(sb, i, i, before);
                    throw e;
                }
                sb.replace(i, cold);
                sandboxes.observer().sandboxDemoted(SandboxInfo.COLD);
            }
            return null;
        });
        return true;
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
