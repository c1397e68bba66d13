/**
 * Vivarium's domain model and the service core provides: sandbox records, exec requests and
 * results, callers, and the one exception type every layer uses to say what went wrong.
 */
@Export
@Version("2.13.0")
package io.vivarium.api;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
