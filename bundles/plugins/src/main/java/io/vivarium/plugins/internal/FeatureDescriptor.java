package io.vivarium.plugins.internal;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A feature file of the distribution (OSGi Feature Service 1.0 JSON, the format the launcher
 * reads with its own, stricter reader): only the description and the bundles with their start
 * orders are read here.
 */
record FeatureDescriptor(String name, String description, List<FeatureBundle> bundles) {

    /** The start order of a bundle entry that gives none (as in the launcher). */
    static final int DEFAULT_START_ORDER = 2;

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One bundle entry.
     *
     * @param id Maven coordinates {@code groupId:artifactId[:type[:classifier]]:version}
     * @param repositoryPath where it is below the distribution's {@code system/} (Maven layout)
     */
    record FeatureBundle(String id, String repositoryPath, int startOrder) {

        static FeatureBundle of(String id, int startOrder) {
            String[] p = id.split(":", -1);
            if (p.length < 3 || p.length > 5 || List.of(p).stream().anyMatch(String::isBlank)) {
                throw new IllegalArgumentException("bad bundle id \"" + id
                        + "\": expected groupId:artifactId[:type[:classifier]]:version");
            }
            String version = p[p.length - 1];
            String type = p.length >= 4 ? p[2] : "jar";
            String classifier = p.length == 5 ? "-" + p[3] : "";
            String path = p[0].replace('.', '/') + '/' + p[1] + '/' + version + '/'
                    + p[1] + '-' + version + classifier + '.' + type;
            return new FeatureBundle(id, path, startOrder);
        }
    }

    static FeatureDescriptor parse(String name, String json) throws IOException {
        JsonNode root = JSON.readTree(json);
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        List<FeatureBundle> bundles = new ArrayList<>();
        for (JsonNode entry : root.path("bundles")) {
            if (entry.isTextual()) {
                bundles.add(FeatureBundle.of(entry.textValue(), DEFAULT_START_ORDER));
            } else if (entry.path("id").isTextual()) {
                bundles.add(FeatureBundle.of(entry.get("id").textValue(),
                        entry.path("start-order").asInt(DEFAULT_START_ORDER)));
            } else {
                throw new IllegalArgumentException("a bundle entry has no \"id\" string");
            }
        }
        return new FeatureDescriptor(name, root.path("description").asText(""), List.copyOf(bundles));
    }

    List<String> bundleIds() {
        return bundles.stream().map(FeatureBundle::id).toList();
    }

    /** Its bundles that none of {@code others} names: what disabling it removes while they stay enabled. */
    List<FeatureBundle> bundlesNotNamedBy(Collection<FeatureDescriptor> others) {
        Set<String> kept = others.stream().filter(o -> !o.name().equals(name))
                .flatMap(o -> o.bundles().stream()).map(FeatureBundle::id).collect(Collectors.toSet());
        return bundles.stream().filter(b -> !kept.contains(b.id())).toList();
    }
}
