package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import io.vivarium.common.features.Feature;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkUtil;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;
import org.osgi.framework.namespace.PackageNamespace;
import org.osgi.framework.wiring.BundleCapability;
import org.osgi.framework.wiring.BundleWire;
import org.osgi.framework.wiring.BundleWiring;
import org.osgi.framework.wiring.FrameworkWiring;

/**
 * The launcher has Jackson on its own class path (lib/), next to the framework. The bundles must
 * not see it: they wire to the Jackson bundles from system/, and a bundle that does not import
 * Jackson cannot load it at all. slf4j, also there, is the one thing the system bundle exports to
 * them (HostLogging). This starts the framework with the launcher's configuration in
 * this JVM, where Jackson is on the application class path just as in the daemon.
 */
class FrameworkClassSpaceTest {

    @TempDir
    Path tmp;

    @Test
    void theConfigurationDoesNotLeakTheLaunchersClasses() {
        Map<String, Object> c = config();
        assertEquals(Constants.FRAMEWORK_BUNDLE_PARENT_FRAMEWORK, c.get(Constants.FRAMEWORK_BUNDLE_PARENT));
        assertEquals("false", c.get("felix.bootdelegation.implicit"));
        for (String key : List.of(Constants.FRAMEWORK_SYSTEMPACKAGES, Constants.FRAMEWORK_SYSTEMPACKAGES_EXTRA,
                Constants.FRAMEWORK_BOOTDELEGATION)) {
            assertFalse(String.valueOf(c.get(key)).contains("com.fasterxml"), key + " = " + c.get(key));
        }
    }

    @Test
    void bundlesWireToTheJacksonBundlesAndCannotSeeTheLaunchersJackson() throws Exception {
        // Precondition: this JVM is like the launcher's, Jackson next to the framework.
        assertEquals(Framework.class.getClassLoader(), ObjectMapper.class.getClassLoader(),
                "the test runs with Jackson and the framework in one class loader, as the launcher does");

        String dist = System.getProperty("vivarium.dist");
        assertNotNull(dist, "surefire sets vivarium.dist to target/vivarium");
        Path system = Path.of(dist, "system");
        Feature core = Feature.read(Path.of(dist, "features", "core.json"));
        List<Feature.FeatureBundle> jackson = core.bundles().stream()
                .filter(b -> b.groupId().equals("com.fasterxml.jackson.core")).toList();
        assertEquals(3, jackson.size(), "the Jackson bundles of core.json: " + jackson);

        Framework framework = initialisedFramework();
        try {
            BundleContext ctx = framework.getBundleContext();
            Bundle databind = null;
            List<Bundle> installed = new ArrayList<>();
            for (Feature.FeatureBundle b : jackson) {
                Bundle bundle = ctx.installBundle(b.file(system).toUri().toString());
                installed.add(bundle);
                if (b.artifactId().equals("jackson-databind")) {
                    databind = bundle;
                }
            }
            assertNotNull(databind);
            Bundle importer = ctx.installBundle("probe:importer", probe("probe.importer",
                    "com.fasterxml.jackson.databind,com.fasterxml.jackson.core"));
            Bundle bystander = ctx.installBundle("probe:bystander", probe("probe.bystander", null));
            installed.add(importer);
            installed.add(bystander);
            assertTrue(framework.adapt(FrameworkWiring.class).resolveBundles(installed), "everything resolves");

            // The system bundle exports no Jackson package.
            for (BundleCapability cap : framework.adapt(BundleWiring.class).getCapabilities(PackageNamespace.PACKAGE_NAMESPACE)) {
                Object pkg = cap.getAttributes().get(PackageNamespace.PACKAGE_NAMESPACE);
                assertFalse(String.valueOf(pkg).startsWith("com.fasterxml.jackson"), "the system bundle exports " + pkg);
            }

            // Every Jackson import, of the Jackson bundles and of the probe, is wired to a Jackson bundle.
            for (Bundle b : installed) {
                for (BundleWire wire : b.adapt(BundleWiring.class).getRequiredWires(PackageNamespace.PACKAGE_NAMESPACE)) {
                    Object pkg = wire.getCapability().getAttributes().get(PackageNamespace.PACKAGE_NAMESPACE);
                    if (String.valueOf(pkg).startsWith("com.fasterxml.jackson")) {
                        Bundle provider = wire.getProvider().getBundle();
                        assertTrue(provider.getSymbolicName().startsWith("com.fasterxml.jackson"),
                                b.getSymbolicName() + " imports " + pkg + " from " + provider.getSymbolicName());
                    }
                }
            }

            Class<?> seen = importer.loadClass("com.fasterxml.jackson.databind.ObjectMapper");
            assertNotSame(ObjectMapper.class, seen, "the importer sees the launcher's ObjectMapper");
            assertEquals(databind, FrameworkUtil.getBundle(seen), "the importer's ObjectMapper comes from jackson-databind");

            assertThrows(ClassNotFoundException.class,
                    () -> bystander.loadClass("com.fasterxml.jackson.databind.ObjectMapper"),
                    "a bundle that does not import Jackson can load it");
            assertThrows(ClassNotFoundException.class,
                    () -> bystander.loadClass("com.fasterxml.jackson.core.JsonFactory"),
                    "a bundle that does not import Jackson can load it");
            assertThrows(ClassNotFoundException.class, () -> bystander.loadClass(Main.class.getName()),
                    "a bundle can load the launcher");
        } finally {
            framework.stop();
            framework.waitForStop(10_000);
        }
    }

    @Test
    void bundlesLogThroughTheLaunchersSlf4jAndItsProviderNotNop() throws Exception {
        Framework framework = initialisedFramework();
        try {
            BundleContext ctx = framework.getBundleContext();
            Bundle current = ctx.installBundle("probe:slf4j2", probe("probe.slf4j2", "org.slf4j;version=\"[2.0,3)\""));
            Bundle legacy = ctx.installBundle("probe:slf4j17", probe("probe.slf4j17", "org.slf4j;version=\"[1.7,2)\""));
            assertTrue(framework.adapt(FrameworkWiring.class).resolveBundles(List.of(current, legacy)),
                    "importers of slf4j 2 and of slf4j 1.7 (as slf4j-api's own manifest exports both) resolve");

            Class<?> launchers = Class.forName("org.slf4j.LoggerFactory", false, Main.class.getClassLoader());
            for (Bundle b : List.of(current, legacy)) {
                BundleWire wire = b.adapt(BundleWiring.class).getRequiredWires(PackageNamespace.PACKAGE_NAMESPACE).get(0);
                assertEquals(0, wire.getProvider().getBundle().getBundleId(), b + " wires org.slf4j to the system bundle");
                assertSame(launchers, b.loadClass("org.slf4j.LoggerFactory"), b + " sees the launcher's LoggerFactory");
            }
            Object loggers = launchers.getMethod("getILoggerFactory").invoke(null);
            assertEquals("org.slf4j.simple.SimpleLoggerFactory", loggers.getClass().getName(),
                    "slf4j found its provider, so bundles' logs are not dropped");
        } finally {
            framework.stop();
            framework.waitForStop(10_000);
        }
    }

    /** A framework as the launcher makes it, initialised (not started): stop it when done. */
    private Framework initialisedFramework() throws Exception {
        FrameworkFactory factory = ServiceLoader.load(FrameworkFactory.class, Main.class.getClassLoader()).findFirst()
                .orElseThrow();
        @SuppressWarnings({"unchecked", "rawtypes"})
        Framework framework = factory.newFramework((Map) config());
        framework.init();
        return framework;
    }

    private Map<String, Object> config() {
        Path state = tmp.resolve("state");
        Options opts = new Options(state, 0, Options.DEFAULT_HOST, null, Options.DEFAULT_FEATURES, null, false, null, null, null, false, null, null, null, null,
                Options.DEFAULT_HOLD_SECS, Options.DEFAULT_CLIENT_BACKENDS);
        Map<String, Object> c = FrameworkStarter.config(opts, tmp, state, tmp.resolve("deploy"), state.resolve("tokens"), 1);
        c.put("felix.log.level", "1"); // errors only
        return c;
    }

    /** A bundle with no classes, importing {@code imports} (or nothing). */
    private static ByteArrayInputStream probe(String symbolicName, String imports) throws IOException {
        Manifest m = new Manifest();
        Attributes a = m.getMainAttributes();
        a.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        a.putValue(Constants.BUNDLE_MANIFESTVERSION, "2");
        a.putValue(Constants.BUNDLE_SYMBOLICNAME, symbolicName);
        a.putValue(Constants.BUNDLE_VERSION, "1.0.0");
        if (imports != null) {
            a.putValue(Constants.IMPORT_PACKAGE, imports);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JarOutputStream jar = new JarOutputStream(out, m)) {
            jar.flush();
        }
        return new ByteArrayInputStream(out.toByteArray());
    }
}
