package io.vivarium.common.bundles;

import java.net.URL;
import java.util.Enumeration;

import org.osgi.framework.Bundle;

/**
 * Loads every class of the bundle up front. An exec or dry-run that is running when this bundle
 * is updated outlives its bundle wiring; once the framework has disposed of that wiring, a class
 * the old code had not loaded yet can no longer be loaded ({@code NoClassDefFoundError} in the
 * middle of a command that has already started). With every class loaded at activation, code in
 * flight always finishes.
 */
public final class BundleClasses {
    private BundleClasses() {
    }

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
