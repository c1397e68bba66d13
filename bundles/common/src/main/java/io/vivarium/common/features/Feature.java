package io.vivarium.common.features;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * One feature descriptor (OSGi Feature Service 1.0 JSON): an id, a description and the bundles it
 * brings, each named by Maven coordinates and given a start order (its OSGi start level).
 *
 * <p>The one parser of the feature files: the launcher reads them at start, the plugins bundle when
 * a feature is enabled or disabled at run time. Read are {@code id}, {@code description},
 * {@code bundles[].id}, {@code bundles[].start-order} and {@code configurations}: PID → properties,
 * each property a string, boolean, number (integers as {@code Long}, others as {@code Double}) or an
 * array of strings, applied through Configuration Admin. Variables, {@code key:Type} hints and
 * factory configurations ({@code pid~name}) are not supported and are refused.
 */
public record Feature(String name, String id, String description, List<FeatureBundle> bundles,
                      Map<String, Map<String, Object>> configurations) {

    /** Start order of a bundle entry that does not give one. */
    public static final int DEFAULT_START_ORDER = 2;

    /** A bundle entry: Maven coordinates and a start order (at least 1). */
    public record FeatureBundle(String id, String groupId, String artifactId, String type, String classifier,
                         String version, int startOrder) {

        /**
         * Parses {@code groupId:artifactId[:type[:classifier]]:version}, the artifact id form of
         * the Feature Service specification.
         */
        public static FeatureBundle of(String id, int startOrder) {
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
        public String repositoryPath() {
            return groupId.replace('.', '/') + '/' + artifactId + '/' + version + '/'
                    + artifactId + '-' + version + (classifier == null ? "" : "-" + classifier) + '.' + type;
        }

        public Path file(Path systemDir) {
            return systemDir.resolve(repositoryPath());
        }
    }

    /**
     * Strict RFC 8259 reading: no comments, single quotes or trailing commas (Jackson's defaults),
     * and, on top of them, a duplicate key or anything after the value is an error.
     */
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    /** Reads {@code NAME.json}; every problem is an IOException naming the file and what is wrong. */
    public static Feature read(Path file) throws IOException {
        String fileName = file.getFileName().toString();
        String name = fileName.endsWith(".json") ? fileName.substring(0, fileName.length() - 5) : fileName;
        String text = Files.readString(file, StandardCharsets.UTF_8);
        try {
            return parse(name, text);
        } catch (JsonProcessingException e) {
            throw new IOException("feature " + file + ": " + describe(e), e);
        } catch (IllegalArgumentException e) {
            throw new IOException("feature " + file + ": " + e.getMessage(), e);
        }
    }

    /** Jackson's message without its multi-line source excerpt, and where: "... at line L, column C". */
    static String describe(JsonProcessingException e) {
        String message = e.getOriginalMessage();
        JsonLocation where = e.getLocation();
        if (where == null || where.getLineNr() < 1) {
            return message;
        }
        return message + " at line " + where.getLineNr() + ", column " + where.getColumnNr();
    }

    /**
     * Reads a descriptor's text. Malformed JSON is a {@link JsonProcessingException}; well-formed
     * JSON that is not a usable feature is an {@link IllegalArgumentException}.
     */
    public static Feature parse(String name, String text) throws JsonProcessingException {
        JsonNode root = MAPPER.readTree(text);
        if (root == null || root.isMissingNode()) {
            throw new IllegalArgumentException("empty: no JSON value");
        }
        if (!root.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        JsonNode frv = field(root, "feature-resource-version");
        if (frv != null && !(frv.isTextual() && frv.textValue().startsWith("1."))) {
            throw new IllegalArgumentException("unsupported feature-resource-version " + show(frv) + " (expected 1.x)");
        }
        JsonNode idNode = field(root, "id");
        if (idNode == null || !idNode.isTextual() || idNode.textValue().isBlank()) {
            throw new IllegalArgumentException("\"id\" (a string) is required");
        }
        String id = idNode.textValue();
        JsonNode d = field(root, "description");
        String description = d != null && d.isTextual() ? d.textValue() : "";
        List<FeatureBundle> bundles = new ArrayList<>();
        JsonNode list = field(root, "bundles");
        if (list != null) {
            if (!list.isArray()) {
                throw new IllegalArgumentException("\"bundles\" must be an array");
            }
            for (JsonNode entry : list) {
                if (entry.isTextual()) {
                    bundles.add(FeatureBundle.of(entry.textValue(), DEFAULT_START_ORDER));
                } else if (entry.isObject()) {
                    JsonNode bidNode = field(entry, "id");
                    if (bidNode == null || !bidNode.isTextual()) {
                        throw new IllegalArgumentException("a bundle entry has no \"id\" string");
                    }
                    String bid = bidNode.textValue();
                    JsonNode so = field(entry, "start-order");
                    int startOrder;
                    if (so == null) {
                        startOrder = DEFAULT_START_ORDER;
                    } else if (so.isIntegralNumber() && so.canConvertToLong()
                            && so.longValue() >= 1 && so.longValue() <= Integer.MAX_VALUE) {
                        startOrder = so.intValue();
                    } else if (so.isTextual() && so.textValue().matches("[1-9][0-9]{0,8}")) {
                        startOrder = Integer.parseInt(so.textValue());
                    } else {
                        throw new IllegalArgumentException("bad start-order " + show(so) + " for " + bid);
                    }
                    bundles.add(FeatureBundle.of(bid, startOrder));
                } else {
                    throw new IllegalArgumentException("a bundle entry must be a string or an object");
                }
            }
        }
        return new Feature(name, id, description, List.copyOf(bundles), configurations(field(root, "configurations")));
    }

    private static final Pattern PID = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]*");
    private static final Pattern PROPERTY = Pattern.compile("[A-Za-z0-9_.-]+");

    private static Map<String, Map<String, Object>> configurations(JsonNode c) {
        if (c == null) {
            return Map.of();
        }
        if (!c.isObject()) {
            throw new IllegalArgumentException("\"configurations\" must be an object of PID to properties");
        }
        Map<String, Map<String, Object>> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> pid : c.properties()) {
            if (!PID.matcher(pid.getKey()).matches()) {
                throw new IllegalArgumentException("configuration PID \"" + pid.getKey()
                        + "\" is not supported: a plain PID of letters, digits, '.', '_' and '-' (no factory configurations)");
            }
            if (!pid.getValue().isObject()) {
                throw new IllegalArgumentException("configuration " + pid.getKey() + " must be an object of properties");
            }
            Map<String, Object> props = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> p : pid.getValue().properties()) {
                if (!PROPERTY.matcher(p.getKey()).matches()) {
                    throw new IllegalArgumentException("configuration " + pid.getKey() + ": property \"" + p.getKey()
                            + "\" is not supported (letters, digits, '.', '_' and '-'; no type hints)");
                }
                props.put(p.getKey(), value(pid.getKey() + "/" + p.getKey(), p.getValue()));
            }
            out.put(pid.getKey(), Map.copyOf(props));
        }
        return Collections.unmodifiableMap(out);
    }

    private static Object value(String where, JsonNode v) {
        if (v.isTextual()) {
            return v.textValue();
        }
        if (v.isBoolean()) {
            return v.booleanValue();
        }
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            return v.longValue();
        }
        if (v.isFloatingPointNumber()) {
            return v.doubleValue();
        }
        if (v.isArray()) {
            String[] items = new String[v.size()];
            for (int i = 0; i < items.length; i++) {
                if (!v.get(i).isTextual()) {
                    throw new IllegalArgumentException("configuration " + where + ": an array may hold only strings");
                }
                items[i] = v.get(i).textValue();
            }
            return items;
        }
        throw new IllegalArgumentException("configuration " + where + ": " + show(v)
                + " is not a string, boolean, number or array of strings");
    }

    /** Its bundles that none of {@code others} names: what disabling it removes while they stay enabled. */
    public List<FeatureBundle> bundlesNotNamedBy(Collection<Feature> others) {
        Set<String> kept = others.stream().filter(o -> !o.name().equals(name))
                .flatMap(o -> o.bundles().stream()).map(FeatureBundle::id).collect(Collectors.toSet());
        return bundles.stream().filter(b -> !kept.contains(b.id())).toList();
    }

    /** A member of an object; absent and JSON {@code null} both give {@code null}. */
    private static JsonNode field(JsonNode object, String name) {
        JsonNode v = object.get(name);
        return v == null || v.isNull() ? null : v;
    }

    /** A value for a message: strings and numbers as they are, arrays and objects as JSON. */
    private static String show(JsonNode v) {
        return v.isContainerNode() ? v.toString() : v.asText();
    }
}
