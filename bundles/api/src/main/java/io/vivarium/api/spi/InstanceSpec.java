package io.vivarium.api.spi;

import java.nio.file.Path;

/**
 * What core asks a backend to create.
 *
 * @param id the sandbox id core chose (lower-case letters, digits and dashes)
 * @param dir a private directory for this instance's files (workspace, sockets, logs); it lives
 *        beside core's record and is removed by core after {@link SandboxBackend#destroy}
 * @param memoryLimitMib memory limit, or null for none
 */
public record InstanceSpec(String id, Path dir, Integer memoryLimitMib) {
}
