package io.vivarium.common.framework;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.util.Enumeration;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * slf4j for the bundles, from the class path of whoever starts the framework (the launcher's
 * {@code lib/}, or a test JVM's): the system bundle exports slf4j-api's packages exactly as
 * slf4j-api's own manifest declares them, and slf4j finds its provider (slf4j-simple, beside it)
 * with a plain {@link java.util.ServiceLoader}.
 *
 * <p>Why not the slf4j bundles: slf4j 2 inside a framework finds its provider only through a
 * ServiceLoader mediator (Aries SPI Fly), whose weaving hook then also rewrites every class of
 * every other bundle that declares itself a ServiceLoader consumer. Jetty's bundle does, for
 * HTTP/2 and ALPN lookups an HTTP/1.1 server never makes, and rewriting its classes took about
 * 0.4 s of a 1.5 s daemon start (docs/benchmarks.md, "Cold start").
 */
public final class HostLogging {

    /** slf4j-api's {@code Bundle-SymbolicName}: its manifest says which packages, at which versions, to export. */
    static final String SLF4J_API = "slf4j.api";

    private HostLogging() {
    }

    /**
     * The value for {@code org.osgi.framework.system.packages.extra}: slf4j-api's
     * {@code Export-Package}, read from its jar on {@code hostClassPath}.
     *
     * @throws IllegalStateException if slf4j-api is not on that class path
     */
    public static String systemPackagesExtra(ClassLoader hostClassPath) {
        return exportsOf(hostClassPath, SLF4J_API);
    }

    /** The {@code Export-Package} of the bundle jar {@code symbolicName} on {@code loader}'s class path. */
    static String exportsOf(ClassLoader loader, String symbolicName) {
        try {
            Enumeration<URL> manifests = loader.getResources(JarFile.MANIFEST_NAME);
            while (manifests.hasMoreElements()) {
                URL url = manifests.nextElement();
                Attributes main;
                try (InputStream in = url.openStream()) {
                    main = new Manifest(in).getMainAttributes();
                }
                String name = main.getValue("Bundle-SymbolicName");
                if (name != null && name.split(";", 2)[0].trim().equals(symbolicName)) {
                    String exports = main.getValue("Export-Package");
                    if (exports == null || exports.isBlank()) {
                        throw new IllegalStateException(url + " exports no package");
                    }
                    return exports;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the manifests on the class path", e);
        }
        throw new IllegalStateException(symbolicName + " is not on the class path (lib/" + symbolicName.replace('.', '-')
                + "-*.jar in a distribution)");
    }
}
