package io.vivarium.plugins.internal;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.vivarium.api.ApiException;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleException;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.wiring.FrameworkWiring;

/** Resolving and refreshing named bundles only, never the whole framework. */
final class FrameworkChanges {
    static final Duration REFRESH_TIMEOUT = Duration.ofSeconds(60);

    private final FrameworkWiring wiring;

    FrameworkChanges(FrameworkWiring wiring) {
        this.wiring = wiring;
    }

    /**
     * Refreshes {@code bundles} and what the framework must refresh with them (the bundles wired to
     * their packages), and waits until that is done: the framework does it on its own thread.
     */
    void refresh(Collection<Bundle> bundles) {
        if (bundles.isEmpty()) {
            return;
        }
        CompletableFuture<FrameworkEvent> done = new CompletableFuture<>();
        wiring.refreshBundles(bundles, done::complete);
        try {
            done.get(REFRESH_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            throw ApiException.internal("refreshing " + names(bundles) + " did not finish within "
                    + REFRESH_TIMEOUT.toSeconds() + " s; see the daemon log", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.internal("interrupted while refreshing " + names(bundles), e);
        }
    }

    /**
     * After an update of {@code bundle}: refreshes it only if the framework kept its old revision
     * for bundles wired to it (an API bundle, say). Felix purges the old revision of a bundle that
     * nothing depends on at the update itself (a backend, which exports nothing), and a refresh
     * would then only hand the same work to the framework's thread while the bundle is away.
     */
    void refreshIfPending(Bundle bundle) {
        if (wiring.getRemovalPendingBundles().contains(bundle)) {
            refresh(List.of(bundle));
        }
    }

    /** Resolves {@code bundles}; a 400 naming the first unresolved requirement if they do not resolve. */
    void resolve(Collection<Bundle> bundles) {
        if (wiring.resolveBundles(bundles)) {
            return;
        }
        for (Bundle b : bundles) {
            if (b.getState() == Bundle.INSTALLED) {
                throw ApiException.badRequest(b.getSymbolicName() + " " + b.getVersion() + " does not resolve: "
                        + unresolvedReason(b) + "; install what it needs first");
            }
        }
    }

    /** Felix names the missing requirement only in the exception of a start attempt. */
    private static String unresolvedReason(Bundle b) {
        try {
            b.start(Bundle.START_TRANSIENT);
            b.stop(Bundle.STOP_TRANSIENT);
            return "the framework did not resolve it together with the others";
        } catch (BundleException e) {
            return e.getMessage();
        }
    }

    private static String names(Collection<Bundle> bundles) {
        return String.join(", ", bundles.stream().map(b -> b.getSymbolicName() + " " + b.getVersion()).toList());
    }
}
