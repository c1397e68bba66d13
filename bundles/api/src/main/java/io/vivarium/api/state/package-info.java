/**
 * The state store seam: typed, revisioned records of one node, written in transactions, and the
 * providers that open them (the embedded file store, PostgreSQL). Core is the consumer; a store
 * bundle is the provider.
 */
@Export
@Version("1.1.1")
package io.vivarium.api.state;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
