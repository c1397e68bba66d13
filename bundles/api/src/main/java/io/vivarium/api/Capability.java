package io.vivarium.api;

import java.util.Set;
import java.util.regex.Pattern;

/**
 * The names of what a backend can do, as {@code GET /v1/backends} lists them in
 * {@link BackendInfo#capabilities()}. The set is open: a vendor backend may report names of its
 * own ({@link #NAME}); clients ignore names they do not know.
 *
 * <p>Two kinds of name, never declared twice:
 * <ul>
 * <li><b>Reported</b> by the backend itself ({@link io.vivarium.api.spi.SandboxBackend#capabilities()}),
 * because only it knows them on this host: {@link #EXEC}, {@link #EVAL}, {@link #MEMORY_LIMIT},
 * {@link #PIDS_LIMIT}, {@link #DISK_LIMIT}, {@link #IMAGE}, {@link #ROOT_IMAGE}.</li>
 * <li><b>Derived</b> by core from what the backend implements, which the backend never reports:
 * the optional seams its bundle registers under its name ({@link #SNAPSHOT}, {@link #BRANCH},
 * {@link #FORK} from images; {@link #CHECKPOINTS}; {@link #STOP_START} from power control;
 * {@link #PAUSE}; {@link #HIBERNATE} from hibernation; {@link #DRY_RUN} from scratch runs or checkpoints) and whether it runs machines
 * ({@link #VCPUS}).</li>
 * </ul>
 * A request that needs a capability the backend lacks is refused with a message naming it: a
 * create field with 400, an operation with 501. Since 2.0.
 */
public final class Capability {

    /** Runs commands, reads and writes files and answers pings in a long-lived instance (a sandbox, not a bare VM). */
    public static final String EXEC = "exec";
    /** Evaluates code in a warm interpreter the instance keeps ({@code POST /v1/sandboxes/{id}/eval}). */
    public static final String EVAL = "eval";
    /** Enforces {@code memory_limit_mib} on this host. */
    public static final String MEMORY_LIMIT = "memory_limit";
    /** Enforces {@code pids_limit} on this host. */
    public static final String PIDS_LIMIT = "pids_limit";
    /** Enforces {@code disk_limit_mib} on this host. */
    public static final String DISK_LIMIT = "disk_limit";
    /** Starts an instance from a named image or template ({@code image} at create). */
    public static final String IMAGE = "image";
    /**
     * Starts an instance on a root file system unpacked from an OCI image
     * ({@link io.vivarium.api.spi.InstanceSpec#root()}), so that templates ({@link TemplateService})
     * may name it. Since 2.10.
     */
    public static final String ROOT_IMAGE = "root_image";

    /** Gives sandboxes the {@code egress} network under an operator's policy (docs/network.md). Since 2.5. */
    public static final String NETWORK_EGRESS = "network_egress";
    /**
     * Mounts named volumes ({@code volumes} at create) given to it as host directories
     * ({@link io.vivarium.api.spi.InstanceSpec#volumes()}), read-only where asked. Since 2.7.
     */
    public static final String VOLUMES = "volumes";
    /**
     * Attaches volumes as disks of the instance ({@link io.vivarium.api.spi.AttachedVolume#image()})
     * rather than binding host directories: such an instance takes a volume alone (no other sandbox
     * mounts it meanwhile), and deleting it freezes its writable volumes' file systems in the guest
     * before it stops, so that what was written is on the volume. Reported with {@link #VOLUMES}. Since 2.8.
     */
    public static final String VOLUME_DISKS = "volume_disks";
    /** Honours {@code vcpus} at create: derived from {@link BackendInfo#machine()}. */
    public static final String VCPUS = "vcpus";
    /** Builds registry snapshots ({@code POST /v1/snapshots}): derived from the images seam. */
    public static final String SNAPSHOT = "snapshot";
    /** Branches a running sandbox into a snapshot ({@code POST .../branch}): derived from the images seam. */
    public static final String BRANCH = "branch";
    /** Forks N children of a snapshot ({@code POST /v1/sandboxes} with {@code snapshot_tag}): derived from the images seam. */
    public static final String FORK = "fork";
    /** Takes, restores, lists and deletes an instance's own checkpoints: derived from the checkpoints seam. */
    public static final String CHECKPOINTS = "checkpoints";
    /** Shuts an instance down keeping its disk and starts it again: derived from the power-control seam. */
    public static final String STOP_START = "stop_start";
    /** Freezes and thaws every process of an instance: derived from the pause seam. */
    public static final String PAUSE = "pause";
    /** Writes an idle instance's state to disk and frees its memory (the cold tier): derived from the hibernation seam. Since 2.8. */
    public static final String HIBERNATE = "hibernate";
    /** Runs a command and discards its effects: derived from the scratch-run seam or from checkpoints. */
    public static final String DRY_RUN = "dry_run";

    /** The form of every capability name, a vendor's own included. */
    public static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]{0,63}");

    /** The names a backend reports itself; any other name of this class is derived by core. */
    public static final Set<String> REPORTED = Set.of(EXEC, EVAL, MEMORY_LIMIT, PIDS_LIMIT, DISK_LIMIT, IMAGE,
            NETWORK_EGRESS, VOLUMES, VOLUME_DISKS, ROOT_IMAGE);

    /** The names core derives; a backend that reports one of them is not believed. */
    public static final Set<String> DERIVED = Set.of(VCPUS, SNAPSHOT, BRANCH, FORK, CHECKPOINTS, STOP_START, PAUSE,
            DRY_RUN, HIBERNATE);

    private Capability() {
    }
}
