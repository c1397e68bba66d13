package io.vivarium.plugins.internal;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

import io.vivarium.api.ApiException;

import org.osgi.framework.Constants;
import org.osgi.framework.Version;

/**
 * A jar's bundle symbolic name and version, read from its manifest before the framework sees it,
 * so that a jar that is not a bundle is refused without touching the running set.
 */
record BundleIdentity(String symbolicName, Version version) {

    /** The contract bundle: its major version is what every other bundle was built against. */
    private static final String API_BUNDLE = "io.vivarium.api";

    private static final Pattern SYMBOLIC_NAME = Pattern.compile("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
    private static final String NOT_A_BUNDLE = "not an OSGi bundle: ";

    /** Reads an uploaded jar; anything that is not an OSGi bundle is a 400 saying what is missing. */
    static BundleIdentity of(byte[] jar) {
        return of(manifest(jar));
    }

    /** Reads a jar file of the distribution. */
    static BundleIdentity of(Path jar) throws IOException {
        try (JarFile file = new JarFile(jar.toFile())) {
            Manifest m = file.getManifest();
            if (m == null) {
                throw ApiException.badRequest(NOT_A_BUNDLE + jar + " has no META-INF/MANIFEST.MF");
            }
            return of(m);
        }
    }

    static BundleIdentity of(Manifest manifest) {
        Attributes a = manifest.getMainAttributes();
        String manifestVersion = a.getValue(Constants.BUNDLE_MANIFESTVERSION);
        if (!"2".equals(manifestVersion == null ? null : manifestVersion.trim())) {
            throw ApiException.badRequest(NOT_A_BUNDLE + "the manifest has "
                    + (manifestVersion == null ? "no Bundle-ManifestVersion" : "Bundle-ManifestVersion " + manifestVersion)
                    + "; a bundle declares Bundle-ManifestVersion: 2 and a Bundle-SymbolicName");
        }
        String header = a.getValue(Constants.BUNDLE_SYMBOLICNAME);
        if (header == null || header.isBlank()) {
            throw ApiException.badRequest(NOT_A_BUNDLE + "the manifest has no Bundle-SymbolicName");
        }
        String name = header.split(";", 2)[0].trim();
        if (!SYMBOLIC_NAME.matcher(name).matches()) {
            throw ApiException.badRequest(NOT_A_BUNDLE + "Bundle-SymbolicName \"" + name
                    + "\" is not a symbolic name (dot-separated tokens of letters, digits, '_' and '-')");
        }
        String version = a.getValue(Constants.BUNDLE_VERSION);
        try {
            return new BundleIdentity(name, Version.parseVersion(version));
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(NOT_A_BUNDLE + "Bundle-Version \"" + version
                    + "\" is not a version (major.minor.micro.qualifier)");
        }
    }

    /**
     * Refuses to replace the API bundle with another major version: every Vivarium bundle and
     * plugin was built against the installed one.
     */
    void checkCanReplace(Version installed) {
        if (symbolicName.equals(API_BUNDLE) && version.getMajor() != installed.getMajor()) {
            throw ApiException.conflict("refusing to replace " + API_BUNDLE + " " + installed + " with " + version
                    + ": a different major version breaks every bundle built against " + installed
                    + "; send a " + installed.getMajor() + ".x version of it");
        }
    }

    @Override
    public String toString() {
        return symbolicName + " " + version;
    }

    private static Manifest manifest(byte[] jar) {
        try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(jar))) {
            boolean anyEntry = false;
            for (ZipEntry e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
                anyEntry = true;
                if (e.getName().equalsIgnoreCase(JarFile.MANIFEST_NAME)) {
                    return new Manifest(zip);
                }
            }
            throw ApiException.badRequest(NOT_A_BUNDLE + (anyEntry
                    ? "the jar has no META-INF/MANIFEST.MF"
                    : "the body is not a jar (zip) file; send the bundle's jar file as the request body"));
        } catch (IOException | IllegalArgumentException e) {
            throw ApiException.badRequest(NOT_A_BUNDLE + "the jar cannot be read (" + e.getMessage() + ")");
        }
    }
}
