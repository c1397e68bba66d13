package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/**
 * Per-sandbox memory cgroups under {@code vivarium/}: cgroup v2's {@code memory.max} when the
 * unified hierarchy at the root has the memory controller, else cgroup v1's
 * {@code memory.limit_in_bytes} (hosts with hybrid cgroups have v2 mounted beside v1, without
 * the memory controller).
 */
final class MemoryCgroups {

    private static final String GROUP = "vivarium";

    private enum Version { V1, V2 }

    private final Version version;
    private final Path hierarchy;
    private final String unsupportedReason;

    private MemoryCgroups(Version version, Path hierarchy, String unsupportedReason) {
        this.version = version;
        this.hierarchy = hierarchy;
        this.unsupportedReason = unsupportedReason;
    }

    /** Probes the cgroup filesystems mounted at {@code root}; never fails. */
    static MemoryCgroups detect(Path root) {
        Path controllers = root.resolve("cgroup.controllers");
        String v2Problem = null;
        if (Files.isRegularFile(controllers)) {
            if (!listsMemory(controllers)) {
                v2Problem = "the cgroup v2 hierarchy at " + root + " has no memory controller";
            } else if (!Files.isWritable(root)) {
                v2Problem = "no write access to " + root;
            } else {
                return new MemoryCgroups(Version.V2, root, null);
            }
        }
        Path v1 = root.resolve("memory");
        if (Files.isRegularFile(v1.resolve("memory.limit_in_bytes"))) {
            return Files.isWritable(v1)
                    ? new MemoryCgroups(Version.V1, v1, null)
                    : unsupported("no write access to " + v1);
        }
        return unsupported(v2Problem != null ? v2Problem
                : "no cgroup v2 memory controller and no cgroup v1 memory hierarchy under " + root);
    }

    private static MemoryCgroups unsupported(String reason) {
        return new MemoryCgroups(null, null, reason);
    }

    private static boolean listsMemory(Path controllers) {
        try {
            return Arrays.asList(Files.readString(controllers).trim().split("\\s+")).contains("memory");
        } catch (IOException e) {
            return false;
        }
    }

    /** For operators: which hierarchy limits memory, or why none does. */
    String describe() {
        return version == null ? "none (" + unsupportedReason + ")" : version.name().toLowerCase() + " at " + hierarchy;
    }

    boolean supported() {
        return version != null;
    }

    /** Why memory limits cannot be enforced, when {@link #supported()} is false. */
    String unsupportedReason() {
        return unsupportedReason;
    }

    /** The cgroup {@link #create} made for a sandbox, if it is there. */
    Optional<Path> existing(String sandboxId) {
        if (!supported()) {
            return Optional.empty();
        }
        Path cgroup = hierarchy.resolve(GROUP).resolve(sandboxId);
        return Files.isDirectory(cgroup) ? java.util.Optional.of(cgroup) : java.util.Optional.empty();
    }

    /** Creates the sandbox's cgroup with the limit (swap included where the host allows) set. */
    Path create(String sandboxId, int limitMib) throws IOException {
        if (!supported()) {
            throw new IllegalStateException(unsupportedReason);
        }
        String bytes = Long.toString(limitMib * 1024L * 1024L);
        Path parent = hierarchy.resolve(GROUP);
        Files.createDirectories(parent);
        if (version == Version.V2) {
            // a v2 child only gets memory.* files if every ancestor delegates the controller
            Files.writeString(hierarchy.resolve("cgroup.subtree_control"), "+memory");
            Files.writeString(parent.resolve("cgroup.subtree_control"), "+memory");
        }
        Path cgroup = Files.createDirectories(parent.resolve(sandboxId));
        if (version == Version.V2) {
            Files.writeString(cgroup.resolve("memory.max"), bytes);
            writeIfPresent(cgroup.resolve("memory.swap.max"), "0");
        } else {
            Files.writeString(cgroup.resolve("memory.limit_in_bytes"), bytes);
            // must follow memory.limit_in_bytes: the kernel requires memsw >= limit
            writeIfPresent(cgroup.resolve("memory.memsw.limit_in_bytes"), bytes);
        }
        return cgroup;
    }

    /** Swap accounting is often disabled; then the plain memory limit is all there is. */
    private static void writeIfPresent(Path file, String value) {
        if (Files.exists(file)) {
            try {
                Files.writeString(file, value);
            } catch (IOException e) {
                // the limit without swap still holds
            }
        }
    }

    static Path procsFile(Path cgroup) {
        return cgroup.resolve("cgroup.procs");
    }

    /**
     * Removes a sandbox's cgroup once its processes are gone; a cgroup with exiting members
     * refuses rmdir for a moment, hence the retries. Returns false if it is still there.
     */
    static boolean remove(Path cgroup, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            try {
                Files.deleteIfExists(cgroup);
                return true;
            } catch (IOException e) {
                if (System.nanoTime() >= deadline || !Sleep.briefly(10)) {
                    return false;
                }
            }
        }
    }
}
