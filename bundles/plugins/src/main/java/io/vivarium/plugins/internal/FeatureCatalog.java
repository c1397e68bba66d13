package io.vivarium.plugins.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.plugins.internal.FeatureDescriptor.FeatureBundle;

/**
 * The distribution's {@code features/*.json} and the bundle jars they name in {@code system/}.
 * Feature files are read on every call (an operator may add one); the symbolic names of the jars,
 * which never change in a distribution, are read once.
 */
final class FeatureCatalog {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");
    private static final String SUFFIX = ".json";

    private final Path featuresDir;
    private final Path systemDir;
    private final Map<Path, String> symbolicNames = new ConcurrentHashMap<>();

    /** Either folder may be null (a framework not started by the launcher): then there are no features. */
    FeatureCatalog(Path featuresDir, Path systemDir) {
        this.featuresDir = featuresDir;
        this.systemDir = systemDir;
    }

    List<FeatureDescriptor> all() {
        if (featuresDir == null || systemDir == null || !Files.isDirectory(featuresDir)) {
            return List.of();
        }
        List<FeatureDescriptor> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(featuresDir)) {
            for (Path f : files.sorted(Comparator.comparing(Path::toString)).toList()) {
                String file = f.getFileName().toString();
                if (file.endsWith(SUFFIX)) {
                    out.add(read(file.substring(0, file.length() - SUFFIX.length()), f));
                }
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot list the feature files in " + featuresDir + ": " + e.getMessage(), e);
        }
        return out;
    }

    Optional<FeatureDescriptor> find(String name) {
        if (featuresDir == null || systemDir == null || !NAME.matcher(name).matches()) {
            return Optional.empty();
        }
        Path file = featuresDir.resolve(name + SUFFIX);
        return Files.isRegularFile(file) ? Optional.of(read(name, file)) : Optional.empty();
    }

    Path file(FeatureBundle bundle) {
        return systemDir.resolve(bundle.repositoryPath());
    }

    /** The location the launcher installs a feature bundle from, so that both install it the same way. */
    String location(FeatureBundle bundle) {
        return file(bundle).toUri().toString();
    }

    String symbolicName(FeatureBundle bundle) {
        return symbolicNames.computeIfAbsent(file(bundle), jar -> {
            try {
                return BundleIdentity.of(jar).symbolicName();
            } catch (IOException e) {
                throw ApiException.internal("cannot read " + bundle.id() + " at " + jar + " (" + e
                        + "); the distribution is damaged: rebuild it with mvn -B install", e);
            }
        });
    }

    private static FeatureDescriptor read(String name, Path file) {
        try {
            return FeatureDescriptor.parse(name, Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException | IllegalArgumentException e) {
            throw ApiException.internal("the feature file " + file + " is not a valid feature descriptor ("
                    + e.getMessage() + "); fix or remove it", e);
        }
    }
}
