package io.vivarium.plugins.internal;

import java.io.ByteArrayInputStream;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.RuntimeObserver;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.startlevel.BundleStartLevel;
import org.osgi.framework.startlevel.FrameworkStartLevel;
import org.osgi.framework.wiring.FrameworkWiring;

/**
 * What bundle and feature administration both do to the framework: install bundles together,
 * replace one (undone if the new jar does not resolve or start), find one by name. Every change of
 * either runs {@linkplain #serialised serialised} on this object.
 *
 * <p>It works through the system bundle's context, which stays valid while the framework runs,
 * because an update of the API bundle refreshes the plugins bundle too, in the middle of the call.
 */
final class BundleChanges {
    private static final System.Logger LOG = System.getLogger(BundleChanges.class.getName());

    /** A jar to install at a location and start level. */
    record NewBundle(String location, byte[] jar, int startLevel) {
    }

    private final BundleContext framework;
    private final FrameworkChanges changes;
    private volatile RuntimeObserver observer = RuntimeObserver.NONE;

    BundleChanges(BundleContext framework) {
        this.framework = framework;
        this.changes = new FrameworkChanges(framework.getBundle().adapt(FrameworkWiring.class));
    }

    /** Runs one change of the running set, never two at once. */
    synchronized <T> T serialised(Supplier<T> change) {
        return change.get();
    }

    synchronized void serialised(Runnable change) {
        change.run();
    }

    BundleContext framework() {
        return framework;
    }

    /** Every bundle but the framework itself. */
    List<Bundle> all() {
        return Arrays.stream(framework.getBundles()).filter(b -> b.getBundleId() != Constants.SYSTEM_BUNDLE_ID).toList();
    }

    Bundle find(String symbolicName) {
        return all().stream().filter(b -> symbolicName.equals(b.getSymbolicName())).findFirst().orElse(null);
    }

    Bundle require(String symbolicName) {
        Bundle b = find(symbolicName);
        if (b == null) {
            throw ApiException.notFound("no bundle " + symbolicName + " is installed; GET /v1/plugins lists them");
        }
        return b;
    }

    int initialStartLevel() {
        return framework.getBundle().adapt(FrameworkStartLevel.class).getInitialBundleStartLevel();
    }

    /** Installs the jars, resolves them together and starts them; on any failure none of them stays. */
    List<Bundle> installAll(List<NewBundle> jars) {
        List<Bundle> installed = new ArrayList<>();
        try {
            for (NewBundle j : jars) {
                Bundle b = framework.installBundle(j.location(), new ByteArrayInputStream(j.jar()));
                installed.add(b);
                b.adapt(BundleStartLevel.class).setStartLevel(j.startLevel());
            }
            changes.resolve(installed);
            for (Bundle b : installed) {
                if (!isFragment(b)) {
                    b.start();
                }
            }
            return installed;
        } catch (ApiException | BundleException e) {
            for (Bundle b : installed) {
                try {
                    b.uninstall();
                } catch (BundleException | IllegalStateException again) {
                    LOG.log(Level.WARNING, "cannot uninstall " + describe(b) + " after a failed install", again);
                }
            }
            changes.refresh(installed);
            throw e instanceof ApiException a ? a : ApiException.badRequest("nothing was installed: " + e.getMessage());
        }
    }

    /** Uninstalls the bundles and refreshes them and what was wired to them, even if one fails. */
    void uninstall(List<Bundle> bundles, String what) {
        List<Bundle> removed = new ArrayList<>();
        try {
            for (Bundle b : bundles) {
                b.uninstall();
                removed.add(b);
            }
        } catch (BundleException e) {
            throw ApiException.internal("cannot uninstall " + what + ": " + e.getMessage(), e);
        } finally {
            changes.refresh(removed);
        }
    }

    /** Who is told of bundle updates; {@link RuntimeObserver#NONE} for nobody. */
    void observer(RuntimeObserver o) {
        observer = o;
    }

    RuntimeObserver observer() {
        return observer;
    }

    /** Replaces the bundle's jar as {@link #replaceOrRestore} does, and tells the observer how it went. */
    void replace(Bundle b, BundleIdentity incoming, byte[] jar, byte[] previous) {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            replaceOrRestore(b, incoming, jar, previous);
            ok = true;
        } finally {
            observer.bundleUpdated(incoming.symbolicName(), ok, System.nanoTime() - start);
        }
    }

    /**
     * Replaces the bundle's jar, or puts {@code previous} back if the new one does not resolve or
     * start. The bundle is stopped first (transiently: its autostart setting stays) so that the
     * new revision starts once, after its refresh, not also right after the update.
     */
    private void replaceOrRestore(Bundle b, BundleIdentity incoming, byte[] jar, byte[] previous) {
        boolean wasActive = (b.getState() & (Bundle.ACTIVE | Bundle.STARTING)) != 0;
        String before = describe(b);
        try {
            if (wasActive) {
                b.stop(Bundle.STOP_TRANSIENT);
            }
            swap(b, jar, wasActive);
        } catch (ApiException | BundleException failed) {
            try {
                swap(b, previous, wasActive);
            } catch (ApiException | BundleException e) {
                throw ApiException.internal(incoming + " failed (" + failed.getMessage() + ") and putting " + before
                        + " back failed too (" + e.getMessage() + "); see the daemon log", e);
            }
            int status = failed instanceof ApiException a ? a.status() : 400;
            throw new ApiException(status, incoming + " was not applied: " + failed.getMessage() + "; " + before
                    + " runs again", null, failed);
        }
    }

    private void swap(Bundle b, byte[] jar, boolean start) throws BundleException {
        b.update(new ByteArrayInputStream(jar));
        changes.refreshIfPending(b);
        changes.resolve(List.of(b));
        if (start && !isFragment(b)) {
            b.start();
        }
    }

    static boolean isFragment(Bundle b) {
        return b.getHeaders("").get(Constants.FRAGMENT_HOST) != null;
    }

    static String describe(Bundle b) {
        return b.getSymbolicName() + " " + b.getVersion();
    }
}
