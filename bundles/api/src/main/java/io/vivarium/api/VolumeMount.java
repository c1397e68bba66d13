package io.vivarium.api;

/**
 * A named volume in a sandbox ({@code volumes} at create, and in {@link SandboxInfo}): the
 * volume's directory {@code subPath} (the whole volume when null) appears at {@code mountPath}.
 * A volume has one writer at a time and any number of read-only mounts (docs/volumes.md). Since 2.7.
 *
 * @param name the tenant's volume ({@link VolumeService})
 * @param mountPath an absolute path in the sandbox, not {@code /} nor in a system directory
 * @param subPath a relative directory inside the volume, made when missing; null for its root
 * @param readOnly whether the sandbox may only read it (null in a request: false)
 */
public record VolumeMount(String name, String mountPath, String subPath, Boolean readOnly) {
    public VolumeMount {
        readOnly = Boolean.TRUE.equals(readOnly);
    }
}
