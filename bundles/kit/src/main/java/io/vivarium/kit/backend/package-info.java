/**
 * What every backend keeps the same way: the table of the instances a revision created or adopted
 * ({@link io.vivarium.kit.backend.InstanceTable}), and the check that an instance a seam is handed
 * is of its own type ({@link io.vivarium.kit.backend.InstanceTable#own}; core hands a seam only
 * instances its revision created or adopted).
 */
@Export
@Version("1.0.0")
package io.vivarium.kit.backend;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
