package io.vivarium.plugins.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/** Jars built in memory for the tests. */
final class TestJars {
    private TestJars() {
    }

    /** A jar whose manifest has exactly these main attributes (and Manifest-Version). */
    static byte[] withManifest(Map<String, String> headers) {
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        headers.forEach(m.getMainAttributes()::putValue);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JarOutputStream jar = new JarOutputStream(out, m)) {
            jar.putNextEntry(new ZipEntry("readme.txt"));
            jar.write("hello".getBytes());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static byte[] bundle(String symbolicName, String version) {
        return withManifest(Map.of("Bundle-ManifestVersion", "2", "Bundle-SymbolicName", symbolicName,
                "Bundle-Version", version));
    }

    /** A zip with one entry and no manifest. */
    static byte[] zipWithoutManifest() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(out)) {
            zip.putNextEntry(new ZipEntry("a.txt"));
            zip.write(1);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
