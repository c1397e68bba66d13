/**
 * The route whiteboard: an API surface bundle (such as {@code api-v1}) registers an
 * {@link io.vivarium.api.http.ApiSurface} service; the http bundle serves it under its prefix,
 * after authentication, body limits and JSON binding, and renders every error as
 * {@code {"error": "..."}}.
 */
@Export
@Version("1.10.0")
package io.vivarium.api.http;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
