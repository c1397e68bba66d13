/**
 * The static guest agent binary ({@code vivarium-agent}, built from guest-agent/) that this bundle
 * carries, and {@link io.vivarium.kit.agent.AgentBinary#install} to put it where an instance can
 * run it.
 */
@Export
@Version("1.0.0")
package io.vivarium.kit.agent;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
