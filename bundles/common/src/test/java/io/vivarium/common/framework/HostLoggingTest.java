package io.vivarium.common.framework;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostLoggingTest {

    @TempDir
    Path tmp;

    @Test
    void theExportsAreTheNamedBundlesOwnHeaderWhereverItIsOnTheClassPath() throws IOException {
        Path other = jar("other.jar", "other.bundle", "other.pkg;version=\"1.0\"");
        Path slf4j = jar("api.jar", "slf4j.api;singleton:=false", "org.slf4j;version=\"2.0.20\",org.slf4j;version=\"1.7.36\"");
        try (URLClassLoader loader = loader(other, slf4j)) {
            assertEquals("org.slf4j;version=\"2.0.20\",org.slf4j;version=\"1.7.36\"", HostLogging.systemPackagesExtra(loader));
        }
    }

    @Test
    void aMissingJarIsNamed() throws IOException {
        try (URLClassLoader loader = loader(jar("other.jar", "other.bundle", "other.pkg"))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> HostLogging.systemPackagesExtra(loader));
            assertTrue(e.getMessage().contains("slf4j.api is not on the class path"), e.getMessage());
        }
    }

    @Test
    void aJarThatExportsNothingIsRefused() throws IOException {
        try (URLClassLoader loader = loader(jar("api.jar", "slf4j.api", null))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> HostLogging.systemPackagesExtra(loader));
            assertTrue(e.getMessage().endsWith("exports no package"), e.getMessage());
        }
    }

    private URLClassLoader loader(Path... jars) throws IOException {
        URL[] urls = new URL[jars.length];
        for (int i = 0; i < jars.length; i++) {
            urls[i] = jars[i].toUri().toURL();
        }
        return new URLClassLoader(urls, null);
    }

    private Path jar(String file, String symbolicName, String exports) throws IOException {
        Manifest m = new Manifest();
        Attributes a = m.getMainAttributes();
        a.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        a.putValue("Bundle-SymbolicName", symbolicName);
        if (exports != null) {
            a.putValue("Export-Package", exports);
        }
        Path jar = tmp.resolve(file);
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out, m)) {
            j.flush();
        }
        return jar;
    }
}
