package io.vivarium.plugins.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import io.vivarium.api.ApiException;

import org.junit.jupiter.api.Test;
import org.osgi.framework.Version;

class BundleIdentityTest {

    @Test
    void readsNameAndVersionWithoutDirectives() {
        BundleIdentity id = BundleIdentity.of(TestJars.withManifest(Map.of("Bundle-ManifestVersion", "2",
                "Bundle-SymbolicName", "com.example.thing; singleton:=true", "Bundle-Version", "1.2.3.beta")));
        assertEquals("com.example.thing", id.symbolicName());
        assertEquals(new Version(1, 2, 3, "beta"), id.version());
        assertEquals(Version.emptyVersion, BundleIdentity.of(TestJars.withManifest(
                Map.of("Bundle-ManifestVersion", "2", "Bundle-SymbolicName", "a"))).version());
    }

    @Test
    void whatIsNotABundleIsA400SayingWhy() {
        assertRefused("not a jar", "not a jar (zip) file".getBytes(StandardCharsets.UTF_8));
        assertRefused("not a jar", new byte[0]);
        assertRefused("no META-INF/MANIFEST.MF", TestJars.zipWithoutManifest());
        assertRefused("no Bundle-ManifestVersion", TestJars.withManifest(Map.of("Bundle-SymbolicName", "a")));
        // a plain jar (only Manifest-Version): Felix would install it as an R3 bundle
        assertRefused("no Bundle-ManifestVersion", TestJars.withManifest(Map.of()));
        assertRefused("Bundle-ManifestVersion 1", TestJars.withManifest(Map.of("Bundle-ManifestVersion", "1",
                "Bundle-SymbolicName", "a")));
        assertRefused("no Bundle-SymbolicName", TestJars.withManifest(Map.of("Bundle-ManifestVersion", "2")));
        assertRefused("is not a symbolic name", TestJars.withManifest(Map.of("Bundle-ManifestVersion", "2",
                "Bundle-SymbolicName", "../etc/passwd")));
        assertRefused("is not a version", TestJars.withManifest(Map.of("Bundle-ManifestVersion", "2",
                "Bundle-SymbolicName", "a", "Bundle-Version", "one")));
    }

    @Test
    void theApiBundleKeepsItsMajorVersion() {
        BundleIdentity.of(TestJars.bundle("io.vivarium.api", "0.2.0")).checkCanReplace(Version.parseVersion("0.1.0.SNAPSHOT"));
        BundleIdentity.of(TestJars.bundle("com.example.other", "7.0.0")).checkCanReplace(Version.parseVersion("1.0.0"));
        ApiException e = assertThrows(ApiException.class, () -> BundleIdentity.of(TestJars.bundle("io.vivarium.api", "2.0.0"))
                .checkCanReplace(Version.parseVersion("0.1.0.SNAPSHOT")));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("0.1.0.SNAPSHOT") && e.getMessage().contains("2.0.0"), e.getMessage());
    }

    private static void assertRefused(String fragment, byte[] jar) {
        ApiException e = assertThrows(ApiException.class, () -> BundleIdentity.of(jar), fragment);
        assertEquals(400, e.status());
        assertTrue(e.getMessage().startsWith("not an OSGi bundle: "), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }
}
