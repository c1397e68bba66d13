package io.vivarium.api.http;

import java.util.List;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A versioned set of routes, such as {@code /v1}. Register it as an OSGi service; the http bundle
 * serves every registered surface under its {@link #prefix()} and stops serving it the moment the
 * service goes away. Two surfaces (say {@code /v1} and {@code /v2}) are served side by side.
 */
@ConsumerType
public interface ApiSurface {

    /** Path prefix of every route, e.g. {@code /v1}: a slash and a plain segment. */
    String prefix();

    /** The routes, with templates relative to {@link #prefix()}. */
    List<Route> routes();
}
