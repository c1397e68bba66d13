package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarInputStream;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.Version;
import org.osgi.framework.wiring.FrameworkWiring;

/**
 * New builds of the procbox bundle for upgrade tests, and the upgrade itself as an operator does
 * it: {@code bundle.update(newJar)} followed by a refresh of that bundle alone. A "new build" is the
 * shipped jar with its {@code Bundle-Version} rewritten, so every update installs a revision the
 * framework has not seen. Runs inside the container.
 */
final class ProcboxBuilds {

    static final String PROCBOX_BUNDLE = "io.vivarium.backend-procbox";

    private ProcboxBuilds() {
    }

    /** The shipped jar: the bundle's location is a {@code file:} URL into the distribution's {@code system/}. */
    static byte[] shippedJar(Bundle bundle) throws IOException {
        String location = bundle.getLocation();
        assertTrue("expected a file: location for " + bundle.getSymbolicName() + ", got " + location,
                location.startsWith("file:"));
        return Files.readAllBytes(Path.of(URI.create(location)));
    }

    /** {@code jar} with its manifest's Bundle-Version set to {@code version}; every other entry is copied as is. */
    static byte[] withVersion(byte[] jar, String version) throws IOException {
        Version.parseVersion(version); // fail here, not in the framework, on a malformed version
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(jar.length + 1024);
        try (JarInputStream in = new JarInputStream(new ByteArrayInputStream(jar), false)) {
            Manifest original = in.getManifest();
            assertTrue("the shipped procbox jar has no manifest as its first entry", original != null);
            Manifest manifest = new Manifest(original);
            manifest.getMainAttributes().put(new Attributes.Name(Constants.BUNDLE_VERSION), version);
            try (JarOutputStream out = new JarOutputStream(bytes, manifest)) {
                byte[] buffer = new byte[16 * 1024];
                for (JarEntry e = in.getNextJarEntry(); e != null; e = in.getNextJarEntry()) {
                    JarEntry copy = new JarEntry(e.getName());
                    copy.setTime(e.getTime());
                    out.putNextEntry(copy);
                    for (int n; (n = in.read(buffer)) != -1; ) {
                        out.write(buffer, 0, n);
                    }
                    out.closeEntry();
                }
            }
        }
        return bytes.toByteArray();
    }

    /** The Bundle-Version in a jar's manifest. */
    static String versionOf(byte[] jar) throws IOException {
        try (JarInputStream in = new JarInputStream(new ByteArrayInputStream(jar), false)) {
            return in.getManifest().getMainAttributes().getValue(Constants.BUNDLE_VERSION);
        }
    }

    /** When the steps of one upgrade ended, as {@link System#nanoTime()}. */
    record Upgrade(String version, long started, long updated, long refreshed) {
        double updateMillis() {
            return (updated - started) / 1e6;
        }

        double refreshMillis() {
            return (refreshed - updated) / 1e6;
        }
    }

    /**
     * {@code bundle.update(jar)}, then {@code FrameworkWiring.refreshBundles({bundle})} and a wait
     * (bounded by {@code timeout}) for its PACKAGES_REFRESHED event.
     */
    static Upgrade updateAndRefresh(BundleContext context, Bundle bundle, byte[] jar, Duration timeout)
            throws IOException, BundleException {
        String version = versionOf(jar);
        long started = System.nanoTime();
        try (InputStream in = new ByteArrayInputStream(jar)) {
            bundle.update(in);
        }
        long updated = System.nanoTime();
        refresh(context, Set.of(bundle), timeout);
        long refreshed = System.nanoTime();
        assertEquals("version of " + bundle.getSymbolicName() + " after the update", Version.parseVersion(version),
                bundle.getVersion());
        return new Upgrade(version, started, updated, refreshed);
    }

    /** Refreshes exactly {@code bundles} and waits for PACKAGES_REFRESHED; fails on an ERROR event. */
    static void refresh(BundleContext context, Set<Bundle> bundles, Duration timeout) {
        FrameworkWiring wiring = context.getBundle(Constants.SYSTEM_BUNDLE_ID).adapt(FrameworkWiring.class);
        CountDownLatch done = new CountDownLatch(1);
        List<FrameworkEvent> errors = Collections.synchronizedList(new ArrayList<>());
        wiring.refreshBundles(bundles, event -> {
            if (event.getType() == FrameworkEvent.ERROR) {
                errors.add(event);
            }
            if (event.getType() == FrameworkEvent.PACKAGES_REFRESHED) {
                done.countDown();
            }
        });
        try {
            if (!done.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                fail("no PACKAGES_REFRESHED within " + timeout.toSeconds() + " s after refreshing " + bundles);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while refreshing", e);
        }
        synchronized (errors) {
            assertTrue("refresh reported errors: " + errors.stream().map(e -> String.valueOf(e.getThrowable())).toList(),
                    errors.isEmpty());
        }
    }
}
