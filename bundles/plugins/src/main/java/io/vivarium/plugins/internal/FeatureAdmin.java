package io.vivarium.plugins.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.FeatureInfo;
import io.vivarium.common.features.EnabledFeatures;
import io.vivarium.common.features.Feature;
import io.vivarium.common.features.Feature.FeatureBundle;

import org.osgi.framework.Bundle;

/**
 * Feature administration: lists the distribution's features, enables one (its configuration, then
 * its missing bundles, installed together) and disables one (the bundles no other enabled feature
 * names), and saves the enabled set. Also answers which feature a bundle belongs to, for
 * {@link BundleAdmin}.
 */
final class FeatureAdmin {

    /** Features that cannot be disabled at run time, and why. */
    static final Map<String, String> REQUIRED_FEATURES = Map.of(
            "core", "the daemon runs on it",
            "api-v1", "it serves the routes that would enable it again; restart the daemon with --features to run without it");

    /** Features chosen when the daemon starts, never switched while it runs, and why. */
    static final Map<String, String> START_ONLY_FEATURES = Map.of(
            "state-postgres", "the state store is chosen when the daemon starts: restart it with --features ...,state-postgres "
                    + "--state-url URL, or without the feature after `vivarium state export` (docs/state.md)");

    private final BundleChanges bundles;
    private final FeatureCatalog catalog;
    private final FeatureConfigurations configurations;
    private final EnabledFeatures enabled;
    private final PluginStore store;

    FeatureAdmin(BundleChanges bundles, FeatureCatalog catalog, FeatureConfigurations configurations,
                 EnabledFeatures enabled, PluginStore store) {
        this.bundles = bundles;
        this.catalog = catalog;
        this.configurations = configurations;
        this.enabled = enabled;
        this.store = store;
    }

    List<FeatureInfo> features() {
        return catalog.all().stream().map(this::info).toList();
    }

    FeatureInfo enable(String name) {
        return bundles.serialised(() -> {
            Feature f = feature(name);
            if (START_ONLY_FEATURES.containsKey(name)) {
                throw ApiException.conflict("the feature " + name + " cannot be enabled at run time: " + START_ONLY_FEATURES.get(name));
            }
            List<BundleChanges.NewBundle> missing = new ArrayList<>();
            for (FeatureBundle fb : f.bundles()) {
                String symbolicName = catalog.symbolicName(fb);
                if (bundles.find(symbolicName) == null) {
                    missing.add(new BundleChanges.NewBundle(catalog.location(fb), jarOf(fb, symbolicName), fb.startOrder()));
                }
            }
            configurations.apply(f); // before its bundles start, so that their components see it at once
            bundles.installAll(missing);
            save(() -> enabled.add(name));
            return info(f);
        });
    }

    FeatureInfo disable(String name) {
        return bundles.serialised(() -> {
            Feature f = feature(name);
            if (REQUIRED_FEATURES.containsKey(name)) {
                throw ApiException.conflict("the feature " + name + " cannot be disabled: " + REQUIRED_FEATURES.get(name));
            }
            if (START_ONLY_FEATURES.containsKey(name)) {
                throw ApiException.conflict("the feature " + name + " cannot be disabled at run time: " + START_ONLY_FEATURES.get(name));
            }
            List<Feature> others = enabled.names().stream().filter(n -> !n.equals(name))
                    .map(catalog::find).flatMap(Optional::stream).toList();
            List<Bundle> running = f.bundlesNotNamedBy(others).stream().map(fb -> bundles.find(catalog.symbolicName(fb)))
                    .filter(Objects::nonNull).toList();
            bundles.uninstall(running, "a bundle of " + name);
            save(() -> enabled.remove(name));
            return info(f);
        });
    }

    /** Symbolic name → the enabled feature that names it. */
    Map<String, String> featureOfEachBundle() {
        Map<String, String> out = new HashMap<>();
        for (String name : enabled.names()) {
            catalog.find(name).ifPresent(f -> f.bundles().forEach(fb -> out.putIfAbsent(catalog.symbolicName(fb), name)));
        }
        return out;
    }

    /** The feature entry of a bundle any of the distribution's features names, enabled or not. */
    Optional<FeatureBundle> featureBundle(String symbolicName) {
        return catalog.all().stream().flatMap(f -> f.bundles().stream())
                .filter(fb -> catalog.symbolicName(fb).equals(symbolicName)).findFirst();
    }

    /** A stored update of a feature bundle wins over the distribution's jar, so that it survives a disable. */
    byte[] jarOf(FeatureBundle fb, String symbolicName) {
        Optional<byte[]> stored = store.read(symbolicName);
        if (stored.isPresent()) {
            return stored.get();
        }
        try {
            return Files.readAllBytes(catalog.file(fb));
        } catch (IOException e) {
            throw ApiException.internal("cannot read " + fb.id() + " at " + catalog.file(fb) + " (" + e
                    + "); the distribution is damaged: rebuild it with mvn -B install", e);
        }
    }

    private Feature feature(String name) {
        return catalog.find(name).orElseThrow(() -> ApiException.notFound("no feature " + name
                + " in this distribution; GET /v1/features lists them"));
    }

    private FeatureInfo info(Feature f) {
        List<String> bundleIds = f.bundles().stream().map(FeatureBundle::id).toList();
        return new FeatureInfo(f.name(), f.description(), enabled.contains(f.name()), bundleIds);
    }

    /** A change of the enabled set, which saves it. */
    private interface Change {
        boolean run() throws IOException;
    }

    private void save(Change change) {
        try {
            change.run();
        } catch (IOException e) {
            throw ApiException.internal("the change is made but cannot be saved to " + enabled.file() + " ("
                    + e.getMessage() + "); it will not survive a restart", e);
        }
    }
}
