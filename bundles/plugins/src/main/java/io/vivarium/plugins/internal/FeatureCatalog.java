package io.vivarium.plugins.internal;

import java.io.IOException;
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
import io.vivarium.common.features.EnabledFeatures;
import io.vivarium.common.features.Feature;
import io.vivarium.common.features.Feature.FeatureBundle;

import org.osgi.framework.BundleContext;

/**
 * The distribution's {@code features/*.json} and the bundle jars they name in {@code system/}.
 * Feature files are read on every call (an operator may add one); the symbolic names of the jars,
 * which never change in a distribution, are read once.
 */
final class FeatureCatalog {

    private static final Pattern NAME = Pattern.compile(EnabledFeatures.NAME);
    private static final String SUFFIX = ".json";

    private final Path featuresDir;
    private final Path systemDir;
    private final Map<Path, String> symbolicNames = new ConcurrentHashMap<>();

    /** The distribution's, from the framework properties the launcher sets. */
    static FeatureCatalog of(BundleContext context) {
        return new FeatureCatalog(path(context, "vivarium.features.dir"), path(context, "vivarium.system.dir"));
    }

    private static Path path(BundleContext context, String property) {
        String value = context.getProperty(property);
        return value == null || value.isBlank() ? null : Path.of(value);
    }

    /** Either folder may be null (a framework not started by the launcher): then there are no features. */
    FeatureCatalog(Path featuresDir, Path systemDir) {
        this.featuresDir = featuresDir;
        this.systemDir = systemDir;
    }

    List<Feature> all() {
        if (featuresDir == null || systemDir == null || !Files.isDirectory(featuresDir)) {
            return List.of();
        }
        List<Feature> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(featuresDir)) {
            for (Path f : files.sorted(Comparator.comparing(Path::toString)).toList()) {
                String file = f.getFileName().toString();
                if (file.endsWith(SUFFIX)) {
                    out.add(read(f));
                }
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot list the feature files in " + featuresDir + ": " + e.getMessage(), e);
        }
        return out;
    }

    Optional<Feature> find(String name) {
        if (featuresDir == null || systemDir == null || !NAME.matcher(name).matches()) {
            return Optional.empty();
        }
        Path file = featuresDir.resolve(name + SUFFIX);
        return Files.isRegularFile(file) ? Optional.of(read(file)) : Optional.empty();
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

    private static Feature read(Path file) {
        try {
            return Feature.read(file);
        } catch (IOException e) {
            throw ApiException.internal(e.getMessage() + "; fix or remove it", e);
        }
    }
}
