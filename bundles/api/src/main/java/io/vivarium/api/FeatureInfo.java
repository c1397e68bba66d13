package io.vivarium.api;

import java.util.List;

/**
 * A feature: a named set of bundles the operator enables or disables as a whole.
 *
 * @param name feature name, e.g. {@code procbox}
 * @param description what it brings and what it needs
 * @param enabled whether its bundles are installed now
 * @param bundles Maven coordinates of its bundles
 */
public record FeatureInfo(String name, String description, boolean enabled, List<String> bundles) {
}
