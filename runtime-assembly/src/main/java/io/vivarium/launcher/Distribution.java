package io.vivarium.launcher;

import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import io.vivarium.common.features.Feature;

/**
 * The distribution the launcher runs from: its folder ({@code features/}, {@code system/},
 * {@code etc/}, {@code deploy/}) and the bundles of the features chosen to run.
 */
record Distribution(Path home) {

    /** The distribution folder: -Dvivarium.home, else the parent of the folder holding this jar. */
    static Distribution locate() {
        String prop = System.getProperty("vivarium.home");
        if (prop != null && !prop.isBlank()) {
            return new Distribution(Path.of(prop).toAbsolutePath().normalize());
        }
        try {
            URL where = Main.class.getProtectionDomain().getCodeSource().getLocation();
            Path jar = Path.of(where.toURI());
            if (Files.isRegularFile(jar) && jar.getParent() != null && jar.getParent().getParent() != null) {
                return new Distribution(jar.getParent().getParent().toAbsolutePath().normalize());
            }
        } catch (URISyntaxException | RuntimeException e) {
            // fall through
        }
        throw new IllegalStateException("cannot tell where the distribution is; run lib/vivarium-launcher.jar or set -Dvivarium.home");
    }

    Path featuresDir() {
        return home.resolve("features");
    }

    Path systemDir() {
        return home.resolve("system");
    }

    /** A feature name that has no file in {@code features/}. */
    static final class UnknownFeature extends Exception {
        private static final long serialVersionUID = 1L;

        UnknownFeature(String name) {
            super(name);
        }
    }

    /** The named features, read from {@code features/}. */
    List<Feature> features(List<String> names) throws UnknownFeature, IOException {
        List<Feature> features = new ArrayList<>();
        for (String name : names) {
            Path file = featuresDir().resolve(name + ".json");
            if (!Files.isRegularFile(file)) {
                throw new UnknownFeature(name);
            }
            features.add(Feature.read(file));
        }
        return features;
    }

    /** One entry per bundle id; the lowest start order wins if two features name it. */
    static Map<String, Feature.FeatureBundle> bundles(List<Feature> features) {
        Map<String, Feature.FeatureBundle> bundles = new LinkedHashMap<>();
        for (Feature f : features) {
            for (Feature.FeatureBundle b : f.bundles()) {
                bundles.merge(b.id(), b, (x, y) -> x.startOrder() <= y.startOrder() ? x : y);
            }
        }
        return bundles;
    }

    /** The names of the features there are, for a message. */
    String available() {
        TreeSet<String> names = new TreeSet<>();
        try (var s = Files.list(featuresDir())) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json"))
                    .forEach(n -> names.add(n.substring(0, n.length() - 5)));
        } catch (IOException e) {
            return "none: " + featuresDir() + " is not readable";
        }
        return names.isEmpty() ? "none" : String.join(", ", names);
    }
}
