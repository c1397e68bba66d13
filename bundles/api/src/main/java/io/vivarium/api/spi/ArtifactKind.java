package io.vivarium.api.spi;

/** What a stored artifact holds, so a {@link StorageStrategy} can say which it handles. Since 1.3. */
public enum ArtifactKind {
    /** A VM disk image (raw or qcow2). */
    DISK,
    /** A VM's guest RAM (a memory-backend file or a migration stream). */
    MEMORY,
    /** A process sandbox's workspace or template directory. */
    WORKSPACE
}
