package io.vivarium.common.bundles;

import java.net.URL;
import java.util.Enumeration;

import org.osgi.framework.Bundle;

/**
 * Loads every class of the bundle up front. An exec or dry-run that is running when this bundle
 * is updated outlives its bundle wiring; once the framework has disposed of that wiring, a class
 * the old code had not loaded yet can no longer be loaded ({@code NoClassDefFoundError} in the
 * middle of a command that has already started). With every class loaded before the bundle
 * stops, code in flight always finishes. {@link #loadInBackground} keeps the loading out of the
 * activation: while a backend is being replaced, it is away until its activation returns.
 */
public final class BundleClasses {
    private static final System.Logger LOG = System.getLogger(BundleClasses.class.getName());
    private static final long AWAIT_MILLIS = 10_000;

    private final Bundle bundle;
    private final Thread loader;

    private BundleClasses(Bundle bundle, Thread loader) {
        this.bundle = bundle;
        this.loader = loader;
    }

    /** Starts loading every class of {@code bundle} on a thread of its own; {@link #await} before the bundle stops. */
    public static BundleClasses loadInBackground(Bundle bundle) {
        Thread loader = new Thread(() -> {
            try {
                loadAll(bundle);
            } catch (IllegalStateException e) {
                LOG.log(System.Logger.Level.ERROR, e.getMessage(), e);
            }
        }, bundle.getSymbolicName() + "-class-loading");
        loader.setDaemon(true);
        loader.setContextClassLoader(null);
        loader.start();
        return new BundleClasses(bundle, loader);
    }

    /** Waits until every class is loaded (bounded), while the bundle's wiring is still in place. */
    public void await() {
        try {
            loader.join(AWAIT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (loader.isAlive()) {
            LOG.log(System.Logger.Level.WARNING, bundle.getSymbolicName() + "'s classes were not all loaded within "
                    + AWAIT_MILLIS + " ms");
        }
    }

    /** Loads every class of {@code bundle} now, on this thread. */
    public static void loadAll(Bundle bundle) {
        Enumeration<URL> entries = bundle.findEntries("/", "*.class", true);
        while (entries != null && entries.hasMoreElements()) {
            String path = entries.nextElement().getPath();
            String name = path.substring(path.startsWith("/") ? 1 : 0, path.length() - ".class".length()).replace('/', '.');
            try {
                bundle.loadClass(name);
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException("cannot load " + name + " from " + bundle.getSymbolicName(), e);
            }
        }
    }
}
