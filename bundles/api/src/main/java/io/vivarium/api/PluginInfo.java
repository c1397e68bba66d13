package io.vivarium.api;

import java.util.List;

/**
 * One bundle of the running daemon, as {@code GET /v1/plugins} lists it.
 *
 * @param id OSGi bundle id
 * @param symbolicName bundle symbolic name
 * @param version bundle version
 * @param state {@code active}, {@code resolved}, {@code installed}, {@code starting}, {@code stopping}
 * @param location where it was installed from
 * @param provides the Vivarium seams it provides right now, e.g. {@code backend:procbox},
 *        {@code fingerprint:sha256}, {@code api:/v1}
 * @param feature the feature that brought it, or null for a bundle installed on its own
 */
public record PluginInfo(long id, String symbolicName, String version, String state, String location,
        List<String> provides, String feature) {
}
