package io.vivarium.common.features;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The features that run, and the one owner of {@code <state>/features.json}
 * ({@code {"features": ["core", ...]}}): the plugins bundle starts from the set the launcher started
 * with and saves every enable or disable; the launcher, started without {@code --features},
 * {@linkplain #saved reads} the set saved last.
 */
public final class EnabledFeatures {

    public static final String FILE = "features.json";
    /** What a feature name may be: it names {@code features/NAME.json}. */
    public static final String NAME = "[A-Za-z0-9][A-Za-z0-9._-]*";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private final Set<String> names;

    public EnabledFeatures(Path stateDir, Collection<String> initial) {
        this.file = stateDir.resolve(FILE);
        this.names = new LinkedHashSet<>(initial);
    }

    /** The set saved in {@code stateDir}, if one was; a damaged file is an IOException that says how to get out. */
    public static Optional<List<String>> saved(Path stateDir) throws IOException {
        Path file = stateDir.resolve(FILE);
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw damaged(file, Feature.describe(e));
        }
        JsonNode list = root == null ? null : root.get("features");
        if (list == null || !list.isArray() || list.isEmpty()) {
            throw damaged(file, "expected {\"features\": [\"core\", ...]}");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode n : list) {
            if (!n.isTextual() || !n.textValue().matches(NAME)) {
                throw damaged(file, "bad feature name " + n);
            }
            out.add(n.textValue());
        }
        return Optional.of(List.copyOf(out));
    }

    private static IOException damaged(Path file, String what) {
        return new IOException(file + ": " + what + "; fix it, delete it or start with --features");
    }

    public synchronized boolean contains(String name) {
        return names.contains(name);
    }

    public synchronized List<String> names() {
        return List.copyOf(names);
    }

    /** Adds and saves; true if it was not there. */
    public synchronized boolean add(String name) throws IOException {
        if (!names.add(name)) {
            return false;
        }
        save();
        return true;
    }

    /** Removes and saves; true if it was there. */
    public synchronized boolean remove(String name) throws IOException {
        if (!names.remove(name)) {
            return false;
        }
        save();
        return true;
    }

    public Path file() {
        return file;
    }

    private void save() throws IOException {
        AtomicFiles.write(file, JSON.writeValueAsBytes(Map.of("features", names)));
    }
}
