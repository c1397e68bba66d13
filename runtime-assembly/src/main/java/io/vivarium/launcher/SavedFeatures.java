package io.vivarium.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The feature set a daemon was switched to at run time: the plugins bundle saves it in
 * {@code <state>/features.json} as {@code {"features": ["core", ...]}} after every enable or
 * disable. A start without {@code --features} runs that set again.
 */
final class SavedFeatures {

    static final String FILE = "features.json";

    private static final ObjectMapper JSON = new ObjectMapper();

    private SavedFeatures() {
    }

    /** {@code --features} if given, else the set saved in the state directory, else the defaults. */
    static List<String> choose(List<String> given, Path state) throws IOException {
        if (given != null) {
            return given;
        }
        Path file = state.resolve(FILE);
        return Files.isRegularFile(file) ? read(file) : Options.DEFAULT_FEATURES;
    }

    static List<String> read(Path file) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw new IOException(file + ": " + Feature.describe(e) + "; fix it, delete it or start with --features", e);
        }
        JsonNode list = root == null ? null : root.get("features");
        if (list == null || !list.isArray() || list.isEmpty()) {
            throw new IOException(file + ": expected {\"features\": [\"core\", ...]}; fix it, delete it or start with --features");
        }
        List<String> names = new ArrayList<>();
        for (JsonNode n : list) {
            if (!n.isTextual() || !n.textValue().matches(Options.FEATURE_NAME)) {
                throw new IOException(file + ": bad feature name " + n + "; fix it, delete it or start with --features");
            }
            names.add(n.textValue());
        }
        return List.copyOf(names);
    }
}
