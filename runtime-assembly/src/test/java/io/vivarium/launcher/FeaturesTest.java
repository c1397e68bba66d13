package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import io.vivarium.common.features.Feature;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The features are the source of truth for what runs; the runtime-assembly pom's dependencies
 * only make Maven fetch the bundles into system/. This fails the build when the two disagree:
 * a feature names a bundle that is not in system/, or system/ holds a jar (a pom dependency) that
 * no feature names. Runs in the package phase, after system/ and features/ are assembled.
 */
class FeaturesTest {

    private static Path dist;
    private static Map<String, Feature> features;

    @BeforeAll
    static void readFeatures() throws IOException {
        String prop = System.getProperty("vivarium.dist");
        assertNotNull(prop, "surefire sets vivarium.dist to target/vivarium");
        dist = Path.of(prop);
        features = new TreeMap<>();
        try (Stream<Path> s = Files.list(dist.resolve("features"))) {
            for (Path p : s.filter(p -> p.toString().endsWith(".json")).toList()) {
                Feature f = Feature.read(p);
                features.put(f.name(), f);
            }
        }
    }

    @Test
    void theShippedFeaturesAreThere() {
        assertEquals(new TreeSet<>(List.of("api-v1", "cloud-hypervisor", "core", "fingerprint-sha256", "fingerprint-stat", "firecracker",
                "fleet", "gvisor", "images-oci", "metrics", "procbox", "qemu", "state-postgres", "storage-reflink")), features.keySet(),
                "features/ in the distribution");
        assertFalse(Options.DEFAULT_FEATURES.contains("firecracker") || Options.DEFAULT_FEATURES.contains("cloud-hypervisor"),
                "the KVM backends are enabled only when asked for");
        assertFalse(Options.DEFAULT_FEATURES.contains("state-postgres"), "the embedded default keeps state in files");
        assertFalse(Options.DEFAULT_FEATURES.contains("qemu"), "the qemu backend is enabled only when asked for");
        assertFalse(Options.DEFAULT_FEATURES.contains("gvisor"), "the gvisor backend is enabled only when asked for");
        for (String name : Options.DEFAULT_FEATURES) {
            assertTrue(features.containsKey(name), "default feature " + name + " exists");
        }
    }

    @Test
    void everyPropertyWasFilteredIn() throws IOException {
        try (Stream<Path> s = Files.list(dist.resolve("features"))) {
            for (Path p : s.toList()) {
                String text = Files.readString(p, StandardCharsets.UTF_8);
                assertFalse(text.contains("${"), p + " still has an unresolved ${...} (no such Maven property?)");
            }
        }
    }

    @Test
    void featureIdsFollowTheConvention() throws IOException {
        String version = projectVersion();
        for (Feature f : features.values()) {
            assertEquals("io.vivarium.features:" + f.name() + ":" + version, f.id(), "id of " + f.name());
            assertFalse(f.description().isBlank(), f.name() + " has a description");
            assertFalse(f.bundles().isEmpty(), f.name() + " names bundles");
        }
    }

    @Test
    void everyFeatureBundleIsInSystemAndIsABundle() throws IOException {
        Path system = dist.resolve("system");
        List<String> problems = new ArrayList<>();
        for (Feature f : features.values()) {
            for (Feature.FeatureBundle b : f.bundles()) {
                Path jar = b.file(system);
                if (!Files.isRegularFile(jar)) {
                    problems.add(f.name() + ": " + b.id() + " is not in system/ (expected " + b.repositoryPath()
                            + "); add it as a dependency of runtime-assembly, or fix the version property");
                    continue;
                }
                try (JarFile jf = new JarFile(jar.toFile())) {
                    Attributes main = jf.getManifest() == null ? null : jf.getManifest().getMainAttributes();
                    if (main == null || main.getValue("Bundle-SymbolicName") == null
                            || !"2".equals(main.getValue("Bundle-ManifestVersion"))) {
                        problems.add(f.name() + ": " + b.id() + " is not an OSGi R4+ bundle");
                    }
                }
            }
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    @Test
    void everyJarInSystemIsNamedByAFeature() throws IOException {
        Path system = dist.resolve("system");
        TreeSet<String> named = new TreeSet<>();
        features.values().forEach(f -> f.bundles().forEach(b -> named.add(b.repositoryPath())));
        List<String> unnamed = new ArrayList<>();
        try (Stream<Path> s = Files.walk(system)) {
            s.filter(Files::isRegularFile)
                    .map(p -> system.relativize(p).toString().replace('\\', '/'))
                    .filter(rel -> !named.contains(rel))
                    .sorted()
                    .forEach(unnamed::add);
        }
        assertTrue(unnamed.isEmpty(), "runtime-assembly depends on these, but no feature names them "
                + "(add them to a features/*.json or drop the dependency):\n  " + String.join("\n  ", unnamed));
    }

    @Test
    void noBundleIsInTwoFeatures() {
        Map<String, String> owner = new TreeMap<>();
        List<String> dups = new ArrayList<>();
        for (Feature f : features.values()) {
            for (Feature.FeatureBundle b : f.bundles()) {
                String ga = b.groupId() + ":" + b.artifactId();
                String prev = owner.putIfAbsent(ga, f.name());
                if (prev != null) {
                    dups.add(ga + " in " + prev + " and " + f.name());
                }
            }
        }
        assertTrue(dups.isEmpty(), String.join("\n", dups));
    }

    @Test
    void slf4jIsTheLaunchersAndNoShippedBundleNeedsTheServiceLoaderMediator() throws IOException {
        // HostLogging: slf4j is on the launcher's class path, exported by the system bundle; a second
        // copy as a bundle would split the bundles between two, and there is no SPI Fly to wire it.
        List<String> wrong = new ArrayList<>();
        Path system = dist.resolve("system");
        for (Feature f : features.values()) {
            for (Feature.FeatureBundle b : f.bundles()) {
                if (b.groupId().equals("org.slf4j") || b.groupId().equals("org.apache.aries.spifly")) {
                    wrong.add(f.name() + " names " + b.id());
                }
                String requires;
                try (JarFile jar = new JarFile(b.file(system).toFile())) {
                    requires = jar.getManifest().getMainAttributes().getValue("Require-Capability");
                }
                for (String clause : clauses(requires)) {
                    if (clause.contains("osgi.serviceloader.") && !clause.contains("resolution:=optional")) {
                        wrong.add(b.id() + " requires " + clause);
                    }
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    /** The clauses of a manifest header: split at commas outside quotes. */
    private static List<String> clauses(String header) {
        List<String> clauses = new ArrayList<>();
        if (header == null) {
            return clauses;
        }
        boolean quoted = false;
        int start = 0;
        for (int i = 0; i < header.length(); i++) {
            char c = header.charAt(i);
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                clauses.add(header.substring(start, i));
                start = i + 1;
            }
        }
        clauses.add(header.substring(start));
        return clauses;
    }

    @Test
    void libHasTheFrameworkJacksonCommonTheApiTheClientThePostgresDriverSlf4jAndTheLauncherOnly() throws IOException {
        try (Stream<Path> s = Files.list(dist.resolve("lib"))) {
            List<String> names = s.map(p -> p.getFileName().toString()).sorted().toList();
            List<String> prefixes = List.of("org.apache.felix.framework-", "jackson-annotations-", "jackson-core-",
                    "jackson-databind-", "common-", "api-", "vivarium-client-", "postgresql-", "slf4j-api-", "slf4j-simple-");
            for (String prefix : prefixes) {
                assertEquals(1, names.stream().filter(n -> n.startsWith(prefix) && n.endsWith(".jar")).count(),
                        "one " + prefix + "*.jar in lib/: " + names);
            }
            assertTrue(names.stream().allMatch(n -> n.equals("vivarium-launcher.jar") || prefixes.stream().anyMatch(n::startsWith)),
                    "only the framework, Jackson, common, the api, the Java client (the sandbox command line), the PostgreSQL driver "
                    + "(state export), slf4j (the bundles' logging) and the launcher in lib/: "
                    + names);
        }
        assertTrue(Files.isDirectory(dist.resolve("deploy")), "deploy/ exists");
        assertTrue(Files.isExecutable(dist.resolve("bin/vivarium")), "bin/vivarium is executable");
    }

    @Test
    void theLaunchersClassPathIsTheRestOfLib() throws IOException {
        // `java -jar lib/vivarium-launcher.jar` sees what the manifest names; `java -cp 'lib/*'` sees lib/.
        Path lib = dist.resolve("lib");
        Path launcher = lib.resolve("vivarium-launcher.jar");
        assertTrue(Files.isRegularFile(launcher), "the launcher jar is written before the tests run: " + launcher);
        String classPath;
        try (JarFile jf = new JarFile(launcher.toFile())) {
            classPath = jf.getManifest().getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
        }
        assertNotNull(classPath, "Class-Path in " + launcher);
        TreeSet<String> named = new TreeSet<>(List.of(classPath.trim().split(" +")));
        TreeSet<String> others = new TreeSet<>();
        try (Stream<Path> s = Files.list(lib)) {
            s.map(p -> p.getFileName().toString()).filter(n -> !n.equals("vivarium-launcher.jar")).forEach(others::add);
        }
        assertEquals(others, named, "the launcher's Class-Path and the other jars in lib/");
    }

    @Test
    void theJacksonInLibIsTheJacksonInSystem() throws IOException {
        // One Jackson for the launcher and the bundles: the same files, so one version to keep up.
        Path lib = dist.resolve("lib");
        Path system = dist.resolve("system");
        int seen = 0;
        for (Feature.FeatureBundle b : features.get("core").bundles()) {
            if (b.groupId().equals("com.fasterxml.jackson.core")) {
                Path inLib = lib.resolve(b.artifactId() + "-" + b.version() + ".jar");
                assertTrue(Files.isRegularFile(inLib), b.id() + " is in lib/ as " + inLib.getFileName());
                assertEquals(-1L, Files.mismatch(inLib, b.file(system)), inLib + " and " + b.file(system) + " differ");
                seen++;
            }
        }
        assertEquals(3, seen, "core names jackson-annotations, jackson-core and jackson-databind");
    }

    private static String projectVersion() throws IOException {
        String id = features.get("core").id();
        return id.substring(id.lastIndexOf(':') + 1);
    }
}
