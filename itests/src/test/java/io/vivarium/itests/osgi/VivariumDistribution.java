package io.vivarium.itests.osgi;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The shipped bundle set, read from a built distribution: {@code features/*.json} (OSGi Feature 1.0
 * descriptors with versions already filtered in) and {@code system/} (the bundles in Maven
 * repository layout). Runs in the test JVM only, while Pax Exam computes its options; nothing in
 * the container touches this class.
 */
final class VivariumDistribution {

    /** System property naming the distribution directory (set by failsafe). */
    static final String DIST_PROPERTY = "vivarium.dist";

    /**
     * One bundle of a feature.
     *
     * @param id Maven coordinates as written in the feature ({@code g:a[:type[:classifier]]:v})
     * @param jar the file under {@code system/}
     * @param startOrder the feature's {@code start-order}
     * @param feature the feature file that named it first
     */
    record ShippedBundle(String id, Path jar, int startOrder, String feature) {
        String location() {
            return jar.toUri().toString();
        }
    }

    /** Start level of a bundle whose feature entry has no start-order: the launcher's default (Feature.DEFAULT_START_ORDER). */
    static final int DEFAULT_START_ORDER = 2;

    private final Path root;
    private final List<ShippedBundle> bundles;

    private VivariumDistribution(Path root, List<ShippedBundle> bundles) {
        this.root = root;
        this.bundles = bundles;
    }

    Path root() {
        return root;
    }

    /** Every bundle named by a feature, once, in feature-file order. */
    List<ShippedBundle> bundles() {
        return bundles;
    }

    /** Reads the distribution named by {@value #DIST_PROPERTY}, failing with what to do if it is not built. */
    static VivariumDistribution locate() {
        String prop = System.getProperty(DIST_PROPERTY);
        if (prop == null || prop.isBlank()) {
            throw new IllegalStateException("system property " + DIST_PROPERTY + " is not set: run the OSGi tests "
                    + "through failsafe (mvn verify -f itests/pom.xml), or pass -D" + DIST_PROPERTY
                    + "=<path to runtime-assembly/target/vivarium>");
        }
        return read(Path.of(prop).toAbsolutePath().normalize());
    }

    /**
     * Features the launcher does not enable unless asked (not in its {@code Options.DEFAULT_FEATURES}):
     * the in-container set is the default one, as a plain {@code serve} runs it.
     */
    static final Set<String> OPT_IN_FEATURES = Set.of("qemu.json", "gvisor.json", "firecracker.json",
            "cloud-hypervisor.json");

    static VivariumDistribution read(Path root) {
        Path features = root.resolve("features");
        Path system = root.resolve("system");
        String hint = "; build it first: mvn -B install at the repository root (or mvn -B package -f runtime-assembly/pom.xml)";
        if (!Files.isDirectory(features) || !Files.isDirectory(system)) {
            throw new IllegalStateException("the Vivarium distribution is not built: " + root
                    + " has no features/ and system/ directories" + hint);
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(features)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".json"))
                    .filter(p -> !OPT_IN_FEATURES.contains(p.getFileName().toString())).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (files.isEmpty()) {
            throw new IllegalStateException("the Vivarium distribution is not built: " + features + " holds no *.json feature" + hint);
        }
        ObjectMapper mapper = new ObjectMapper();
        Map<String, ShippedBundle> byId = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        for (Path file : files) {
            JsonNode feature;
            try {
                feature = mapper.readTree(file.toFile());
            } catch (IOException e) {
                throw new IllegalStateException("cannot parse feature " + file + ": " + e.getMessage(), e);
            }
            JsonNode list = feature.path("bundles");
            if (!list.isArray()) {
                problems.add(file.getFileName() + ": no \"bundles\" array");
                continue;
            }
            for (JsonNode entry : list) {
                String id = entry.isTextual() ? entry.asText() : entry.path("id").asText("");
                if (id.contains("${")) {
                    problems.add(file.getFileName() + ": unfiltered bundle id " + id);
                    continue;
                }
                Path jar;
                try {
                    jar = system.resolve(repositoryPath(id));
                } catch (IllegalArgumentException e) {
                    problems.add(file.getFileName() + ": " + e.getMessage());
                    continue;
                }
                if (!Files.isRegularFile(jar)) {
                    problems.add(file.getFileName() + ": " + id + " is not in system/ (expected " + root.relativize(jar) + ")");
                    continue;
                }
                JsonNode so = entry.path("start-order");
                int startOrder = so.isMissingNode() ? DEFAULT_START_ORDER : so.asInt(0);
                if (startOrder < 1) {
                    problems.add(file.getFileName() + ": bad start-order " + so + " for " + id);
                    continue;
                }
                byId.putIfAbsent(id, new ShippedBundle(id, jar, startOrder, file.getFileName().toString()));
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException("the Vivarium distribution at " + root + " is incomplete:\n  "
                    + String.join("\n  ", problems) + "\n" + hint.substring(2));
        }
        return new VivariumDistribution(root, List.copyOf(byId.values()));
    }

    /** {@code g:a:v}, {@code g:a:type:v} or {@code g:a:type:classifier:v} to {@code g/with/slashes/a/v/a-v[-c].type}. */
    static String repositoryPath(String id) {
        String[] p = id.split(":");
        if (p.length < 3 || p.length > 5) {
            throw new IllegalArgumentException("bundle id \"" + id + "\" is not groupId:artifactId[:type[:classifier]]:version");
        }
        String g = p[0];
        String a = p[1];
        String v = p[p.length - 1];
        String type = p.length >= 4 ? p[2] : "jar";
        String classifier = p.length == 5 ? "-" + p[3] : "";
        return g.replace('.', '/') + "/" + a + "/" + v + "/" + a + "-" + v + classifier + "." + type;
    }
}
