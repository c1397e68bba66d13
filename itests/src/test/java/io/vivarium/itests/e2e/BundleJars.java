package io.vivarium.itests.e2e;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarInputStream;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/** Bundle jars for the plugin tests: built in memory, or a shipped one with another version. */
final class BundleJars {
    private BundleJars() {
    }

    /** A plain jar whose manifest has only Manifest-Version: Felix would install it as an R3 bundle. */
    static byte[] plainJar() throws IOException {
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JarOutputStream jar = new JarOutputStream(out, m)) {
            jar.putNextEntry(new JarEntry("about.txt"));
            jar.write("a plain jar\n".getBytes());
        }
        return out.toByteArray();
    }

    /** A bundle without classes; {@code importPackage} may be null. */
    static byte[] bundle(String symbolicName, String version, String importPackage) throws IOException {
        Manifest m = new Manifest();
        Attributes a = m.getMainAttributes();
        a.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        a.putValue("Bundle-ManifestVersion", "2");
        a.putValue("Bundle-SymbolicName", symbolicName);
        a.putValue("Bundle-Version", version);
        if (importPackage != null) {
            a.putValue("Import-Package", importPackage);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JarOutputStream jar = new JarOutputStream(out, m)) {
            jar.putNextEntry(new JarEntry("about.txt"));
            jar.write(("test bundle " + symbolicName + " " + version + "\n").getBytes());
        }
        return out.toByteArray();
    }

    /** The distribution's jar of a Vivarium bundle, e.g. {@code backend-procbox}. */
    static Path shipped(String artifactId) throws IOException {
        try (Stream<Path> s = Files.walk(Daemon.distribution().resolve("system/io/vivarium").resolve(artifactId))) {
            return s.filter(p -> p.toString().endsWith(".jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no " + artifactId + " in the distribution"));
        }
    }

    /** A copy of {@code jar} whose manifest says {@code Bundle-Version: version}. */
    static byte[] withVersion(Path jar, String version) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream file = Files.newInputStream(jar); JarInputStream in = new JarInputStream(file)) {
            Manifest m = new Manifest(in.getManifest());
            m.getMainAttributes().putValue("Bundle-Version", version);
            try (JarOutputStream copy = new JarOutputStream(out, m)) {
                for (JarEntry e = in.getNextJarEntry(); e != null; e = in.getNextJarEntry()) {
                    copy.putNextEntry(new JarEntry(e.getName()));
                    in.transferTo(copy);
                }
            }
        }
        return out.toByteArray();
    }
}
