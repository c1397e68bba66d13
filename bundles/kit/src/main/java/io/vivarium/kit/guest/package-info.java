/**
 * The host's one client of the guest agent protocol (the QEMU Guest Agent's commands plus
 * Vivarium's extensions, guest-agent/PROTOCOL.md), for every backend whose instances run the agent:
 * {@link io.vivarium.kit.guest.GuestAgentClient} over a Unix socket or a stream
 * ({@link io.vivarium.kit.guest.GuestTransport}), and the {@link io.vivarium.api.spi.GuestChannel}s
 * built on it ({@link io.vivarium.kit.guest.ClientGuestChannel}, {@link io.vivarium.kit.guest.AgentGuestChannel}).
 * It speaks to Debian's stock {@code qemu-ga} too and emulates what that one lacks. What an agent
 * says is untrusted input.
 */
@Export
@Version("1.5.0")
package io.vivarium.kit.guest;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
