package io.vivarium.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One feature descriptor (OSGi Feature Service 1.0 JSON): an id, a description and the bundles it
 * brings, each named by Maven coordinates and given a start order (its OSGi start level).
 *
 * <p>Only what the launcher needs is read: {@code id}, {@code bundles[].id} and
 * {@code bundles[].start-order}. Variables are not interpolated; {@code configurations} are
 * reported by {@link #configurationCount()} so the launcher can say it does not apply them.
 */
record Feature(String name, String id, String description, List<FeatureBundle> bundles, int configurationCount) {

    /** Start order of a bundle entry that does not give one. */
    static final int DEFAULT_START_ORDER = 2;

    /** A bundle entry: Maven coordinates and a start order (at least 1). */
    record FeatureBundle(String id, String groupId, String artifactId, String type, String classifier,
                         String version, int startOrder) {

        /**
         * Parses {@code groupId:artifactId[:type[:classifier]]:version}, the artifact id form of
         * the Feature Service specification.
         */
        static FeatureBundle of(String id, int startOrder) {
            String[] p = id.split(":", -1);
            for (String s : p) {
                if (s.isBlank()) {
                    throw new IllegalArgumentException("bad bundle id \"" + id + "\": empty part");
                }
            }
            if (startOrder < 1) {
                throw new IllegalArgumentException("bad start-order " + startOrder + " for " + id + ": must be 1 or more");
            }
            switch (p.length) {
                case 3: return new FeatureBundle(id, p[0], p[1], "jar", null, p[2], startOrder);
                case 4: return new FeatureBundle(id, p[0], p[1], p[2], null, p[3], startOrder);
                case 5: return new FeatureBundle(id, p[0], p[1], p[2], p[3], p[4], startOrder);
                default:
                    throw new IllegalArgumentException("bad bundle id \"" + id
                            + "\": expected groupId:artifactId[:type[:classifier]]:version");
            }
        }

        /**
         * Where the bundle lives under a Maven-repository-layout folder (the distribution's
         * {@code system/}): {@code g/with/slashes/a/v/a-v[-classifier].type}.
         */
        String repositoryPath() {
            return groupId.replace('.', '/') + '/' + artifactId + '/' + version + '/'
                    + artifactId + '-' + version + (classifier == null ? "" : "-" + classifier) + '.' + type;
        }

        Path file(Path systemDir) {
            return systemDir.resolve(repositoryPath());
        }
    }

    static Feature read(Path file) throws IOException {
        String fileName = file.getFileName().toString();
        String name = fileName.endsWith(".json") ? fileName.substring(0, fileName.length() - 5) : fileName;
        String text = Files.readString(file, StandardCharsets.UTF_8);
        try {
            return parse(name, text);
        } catch (Json.ParseException | IllegalArgumentException e) {
            throw new IOException("feature " + file + ": " + e.getMessage(), e);
        }
    }

    static Feature parse(String name, String text) throws Json.ParseException {
        if (!(Json.parse(text) instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException("not a JSON object");
        }
        Object frv = root.get("feature-resource-version");
        if (frv != null && !(frv instanceof String s && s.startsWith("1."))) {
            throw new IllegalArgumentException("unsupported feature-resource-version " + frv + " (expected 1.x)");
        }
        if (!(root.get("id") instanceof String id) || id.isBlank()) {
            throw new IllegalArgumentException("\"id\" (a string) is required");
        }
        String description = root.get("description") instanceof String d ? d : "";
        List<FeatureBundle> bundles = new ArrayList<>();
        Object list = root.get("bundles");
        if (list != null) {
            if (!(list instanceof List<?> entries)) {
                throw new IllegalArgumentException("\"bundles\" must be an array");
            }
            for (Object entry : entries) {
                if (entry instanceof String s) {
                    bundles.add(FeatureBundle.of(s, DEFAULT_START_ORDER));
                } else if (entry instanceof Map<?, ?> m) {
                    if (!(m.get("id") instanceof String bid)) {
                        throw new IllegalArgumentException("a bundle entry has no \"id\" string");
                    }
                    Object so = m.get("start-order");
                    int startOrder;
                    if (so == null) {
                        startOrder = DEFAULT_START_ORDER;
                    } else if (so instanceof Long l && l >= 1 && l <= Integer.MAX_VALUE) {
                        startOrder = l.intValue();
                    } else if (so instanceof String s && s.matches("[1-9][0-9]{0,8}")) {
                        startOrder = Integer.parseInt(s);
                    } else {
                        throw new IllegalArgumentException("bad start-order " + so + " for " + bid);
                    }
                    bundles.add(FeatureBundle.of(bid, startOrder));
                } else {
                    throw new IllegalArgumentException("a bundle entry must be a string or an object");
                }
            }
        }
        int configurations = root.get("configurations") instanceof Map<?, ?> c ? c.size() : 0;
        return new Feature(name, id, description, List.copyOf(bundles), configurations);
    }
}
