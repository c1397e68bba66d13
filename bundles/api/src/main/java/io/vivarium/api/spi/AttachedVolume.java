package io.vivarium.api.spi;

import java.nio.file.Path;

/**
 * A volume core has made ready for an instance ({@link InstanceSpec#volumes()}). A backend that
 * reports {@link io.vivarium.api.Capability#VOLUMES} alone binds {@code hostDir}, a directory core
 * owns (a mount of the volume's file system, already read-only for a read-only attachment, with the
 * sub-path applied) and removes after {@link SandboxBackend#destroy}. A backend that also reports
 * {@link io.vivarium.api.Capability#VOLUME_DISKS} is given the volume's file system itself instead
 * ({@code image}, an ext4 file): it attaches it as a disk of its own, mounts {@code subPath} of it at
 * {@code mountPath}, and is the only user of the file while the instance lives (core never mounts it
 * meanwhile, so {@code hostDir} is never made). Since 2.9.
 *
 * @param name the volume's name, for messages
 * @param hostDir the directory to bind
 * @param mountPath the absolute path in the instance
 * @param readOnly whether the instance may only read it
 * @param image the volume's ext4 file system, for a backend that attaches volumes as disks; since 2.10
 * @param subPath the directory of the volume to mount, relative, or null for its root; already
 *        applied in {@code hostDir}; since 2.10
 */
public record AttachedVolume(String name, Path hostDir, String mountPath, boolean readOnly, Path image, String subPath) {

    /** The volume of SPI 2.9 (a host directory only). */
    public AttachedVolume(String name, Path hostDir, String mountPath, boolean readOnly) {
        this(name, hostDir, mountPath, readOnly, null, null);
    }
}
