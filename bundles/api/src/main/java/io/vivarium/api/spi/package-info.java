/**
 * The seams vendors implement: sandbox backends, their guest channel, storage strategies and
 * fingerprint modes. Each is registered as an OSGi service; core discovers them dynamically.
 */
@Export
@Version("2.14.0")
package io.vivarium.api.spi;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
