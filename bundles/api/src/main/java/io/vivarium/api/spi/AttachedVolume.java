package io.vivarium.api.spi;

import java.nio.file.Path;

/**
 * A volume core has made ready for an instance ({@link InstanceSpec#volumes()}): a directory on
 * the host that the backend mounts at {@code mountPath} in the instance, read-only where asked.
 * Core owns the directory (a mount of the volume's file system, already read-only for a read-only
 * attachment) and removes it after {@link SandboxBackend#destroy}. Since 2.9.
 *
 * @param name the volume's name, for messages
 * @param hostDir the directory to bind
 * @param mountPath the absolute path in the instance
 * @param readOnly whether the instance may only read it
 */
public record AttachedVolume(String name, Path hostDir, String mountPath, boolean readOnly) {
}
