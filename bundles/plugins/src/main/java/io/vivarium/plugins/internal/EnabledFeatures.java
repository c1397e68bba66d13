package io.vivarium.plugins.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.vivarium.api.ApiException;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The features that run, starting from the ones the launcher started with. Every change is
 * saved to {@code <state>/features.json} as {@code {"features": ["core", ...]}}, which the launcher
 * reads when it is started without {@code --features}.
 */
final class EnabledFeatures {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private final Set<String> names;

    EnabledFeatures(Path file, Collection<String> initial) {
        this.file = file;
        this.names = new LinkedHashSet<>(initial);
    }

    synchronized boolean contains(String name) {
        return names.contains(name);
    }

    synchronized List<String> names() {
        return List.copyOf(names);
    }

    synchronized void add(String name) {
        if (names.add(name)) {
            save();
        }
    }

    synchronized void remove(String name) {
        if (names.remove(name)) {
            save();
        }
    }

    private void save() {
        try {
            AtomicFiles.write(file, JSON.writeValueAsBytes(Map.of("features", names)));
        } catch (IOException e) {
            throw ApiException.internal("the change is made but cannot be saved to " + file + " (" + e.getMessage()
                    + "); it will not survive a restart", e);
        }
    }
}
