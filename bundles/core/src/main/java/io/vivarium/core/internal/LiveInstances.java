package io.vivarium.core.internal;

import java.time.Duration;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.SandboxInstance;

/**
 * A sandbox's running instance for a request, waiting a bounded time for a backend that is being
 * swapped (then 503 with Retry-After), and marking the sandbox failed when its instance died.
 */
final class LiveInstances {
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final Adoption adoption;
    private final Duration patience;
    private final Tiers tiers;

    LiveInstances(BackendRegistry registry, Sandboxes sandboxes, Adoption adoption, Duration patience, Tiers tiers) {
        this.tiers = tiers;
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.adoption = adoption;
        this.patience = patience;
    }

    Duration patience() {
        return patience;
    }

    /**
     * The running instance, for a request that needs it: activity, which resumes a sandbox demoted
     * while idle ({@link Tiers#wake}); one a request paused is 409 (resume it first).
     */
    SandboxInstance of(Sandbox sb) {
        SandboxInstance instance = tiers.wake(sb, ofEvenPaused(sb));
        if (instance.status() == SandboxStatus.PAUSED) {
            String id = sb.record().id();
            throw ApiException.conflict("sandbox " + id + " is paused; resume it first (POST /v1/sandboxes/" + id
                    + "/resume)");
        }
        return instance;
    }

    /**
     * Activity that goes on after the request that starts it (a request forwarded to an exposed
     * port): the sandbox is not demoted until the returned action runs.
     */
    Runnable hold(Sandbox sb) {
        return tiers.hold(sb);
    }

    /**
     * The running instance for a call through its guest channel alone (exec, ping, files, eval).
     * While its backend is away (a bundle update) and the instance it left can still be reached
     * ({@link SandboxInstance#channelOutlivesBackend}), that one at once, so that the call does not
     * wait for the next revision; else as {@link #of}.
     */
    SandboxInstance forChannel(Sandbox sb) {
        SandboxInstance leaving = sb.leaving();
        if (leaving != null && sb.instance() == null && !sb.deleted() && sb.record().status() == SandboxStatus.RUNNING
                && registry.get(sb.record().backend()).isEmpty() && leaving.status() == SandboxStatus.RUNNING) {
            return leaving;
        }
        return of(sb);
    }

    /**
     * The instance of a running or a stopped sandbox: a stopped VM is restored or started from its
     * instance, which its backend adopted stopped; 503 while that backend is away.
     */
    SandboxInstance ofEvenStopped(Sandbox sb) {
        SandboxInstance i = sb.instance();
        if (sb.record().status() == SandboxStatus.STOPPED && i != null) {
            return i;
        }
        if (sb.record().status() == SandboxStatus.STOPPED) {
            throw ApiException.unavailable("backend " + sb.record().backend() + " of sandbox " + sb.record().id()
                    + " is not available right now; retry shortly", 2);
        }
        return of(sb);
    }

    /** The live instance, running or paused (what pause and resume act on). */
    SandboxInstance ofEvenPaused(Sandbox sb) {
        String id = sb.record().id();
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            if (sb.deleted()) {
                throw Sandboxes.notFound(id);
            }
            if (sb.record().status() == SandboxStatus.FAILED) {
                throw ApiException.conflict("sandbox " + id + " has failed (" + sb.record().reason()
                        + "); delete it and create a new one");
            }
            if (sb.record().status() == SandboxStatus.STOPPED) {
                throw ApiException.conflict("sandbox " + id + " is stopped; start it first (POST /v1/vms/" + id
                        + "/start)");
            }
            SandboxInstance instance = sb.instance();
            boolean backendRegistered = true;
            if (instance == null) {
                // its backend may be back with the sweep not at this sandbox yet: adopt it now
                backendRegistered = adoption.adoptOnDemand(sb);
                instance = sb.instance();
                if (instance == null && (sb.deleted() || sb.record().status() == SandboxStatus.FAILED)) {
                    continue;
                }
            }
            if (instance != null) {
                if (instance.status() == SandboxStatus.STOPPED) {
                    throw ApiException.conflict("sandbox " + id + " is stopped (" + instance.reason()
                            + "); start it (POST /v1/vms/" + id + "/start) if its backend can, or delete it");
                }
                if (!instance.alive()) {
                    markDead(sb, instance);
                    continue;
                }
                return instance;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw ApiException.unavailable("backend " + sb.record().backend() + " of sandbox " + id
                        + " is not available right now (being upgraded or stopped); retry shortly", 2);
            }
            if (backendRegistered) {
                // registered, yet this sandbox is not attached (its backend was leaving again): look again shortly
                sleepQuietly(Math.min(left, 10_000_000L));
            } else {
                // returns as the backend registers: the next round adopts this sandbox then, ahead of the sweep
                registry.await(sb.record().backend(), Duration.ofNanos(Math.min(left, 50_000_000L)));
            }
        }
    }

    private void markDead(Sandbox sb, SandboxInstance instance) {
        sb.lifecycle.lock();
        try {
            if (sb.instance() == instance && !sb.deleted()) {
                sandboxes.fail(sb, Sandbox.deathOf(instance));
            }
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
    }

    private static void sleepQuietly(long nanos) {
        try {
            Thread.sleep(Duration.ofNanos(nanos));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted while waiting for the backend", 1, ie);
        }
    }
}
