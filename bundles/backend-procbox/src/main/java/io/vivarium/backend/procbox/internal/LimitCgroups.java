package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/**
 * Per-sandbox cgroups under {@code vivarium/} that enforce one limit: memory or the number of
 * tasks. cgroup v2 when the unified hierarchy at the root has the controller, else the cgroup v1
 * hierarchy of that controller (hosts with hybrid cgroups have v2 mounted beside v1, often
 * without controllers). With v2, both limits live in the same cgroup.
 */
final class LimitCgroups {

    private static final String GROUP = "vivarium";

    /** The controllers procbox limits with. */
    enum Controller {
        /** The limit is in MiB; swap is held to none where the host allows. */
        MEMORY("memory", "memory.limit_in_bytes", "memory.limit_in_bytes", "memory.max"),
        /**
         * The limit is a number of processes and threads; fork fails with EAGAIN past it. A v1
         * pids root has no {@code pids.max} (only its children do), hence the other probe.
         */
        PIDS("pids", "cgroup.procs", "pids.max", "pids.max");

        private final String name;
        private final String v1Probe;
        private final String v1LimitFile;
        private final String v2LimitFile;

        Controller(String name, String v1Probe, String v1LimitFile, String v2LimitFile) {
            this.name = name;
            this.v1Probe = v1Probe;
            this.v1LimitFile = v1LimitFile;
            this.v2LimitFile = v2LimitFile;
        }
    }

    private enum Version { V1, V2 }

    private final Controller controller;
    private final Version version;
    private final Path hierarchy;
    private final String unsupportedReason;

    private LimitCgroups(Controller controller, Version version, Path hierarchy, String unsupportedReason) {
        this.controller = controller;
        this.version = version;
        this.hierarchy = hierarchy;
        this.unsupportedReason = unsupportedReason;
    }

    /** Probes the cgroup filesystems mounted at {@code root} for {@code controller}; never fails. */
    static LimitCgroups detect(Path root, Controller controller) {
        Path controllers = root.resolve("cgroup.controllers");
        String v2Problem = null;
        if (Files.isRegularFile(controllers)) {
            if (!lists(controllers, controller.name)) {
                v2Problem = "the cgroup v2 hierarchy at " + root + " has no " + controller.name + " controller";
            } else if (!Files.isWritable(root)) {
                v2Problem = "no write access to " + root;
            } else {
                return new LimitCgroups(controller, Version.V2, root, null);
            }
        }
        Path v1 = root.resolve(controller.name);
        if (Files.isRegularFile(v1.resolve(controller.v1Probe))) {
            return Files.isWritable(v1)
                    ? new LimitCgroups(controller, Version.V1, v1, null)
                    : new LimitCgroups(controller, null, null, "no write access to " + v1);
        }
        return new LimitCgroups(controller, null, null, v2Problem != null ? v2Problem
                : "no cgroup v2 " + controller.name + " controller and no cgroup v1 " + controller.name
                        + " hierarchy under " + root);
    }

    private static boolean lists(Path controllers, String name) {
        try {
            return Arrays.asList(Files.readString(controllers).trim().split("\\s+")).contains(name);
        } catch (IOException e) {
            return false;
        }
    }

    boolean supported() {
        return version != null;
    }

    /** For operators: which hierarchy enforces the limit, or why none does. */
    String describe() {
        return version == null ? "none (" + unsupportedReason + ")" : version.name().toLowerCase() + " at " + hierarchy;
    }

    /** Why the limit cannot be enforced, when {@link #supported()} is false. */
    String unsupportedReason() {
        return unsupportedReason;
    }

    /** The cgroup {@link #create} made for a sandbox, if it is there. */
    Optional<Path> existing(String sandboxId) {
        if (!supported()) {
            return Optional.empty();
        }
        Path cgroup = hierarchy.resolve(GROUP).resolve(sandboxId);
        return Files.isDirectory(cgroup) ? Optional.of(cgroup) : Optional.empty();
    }

    /** Creates the sandbox's cgroup with the limit set: MiB for memory, a count for pids. */
    Path create(String sandboxId, long limit) throws IOException {
        if (!supported()) {
            throw new IllegalStateException(unsupportedReason);
        }
        Path parent = hierarchy.resolve(GROUP);
        Files.createDirectories(parent);
        if (version == Version.V2) {
            // a v2 child only gets the controller's files if every ancestor delegates the controller
            Files.writeString(hierarchy.resolve("cgroup.subtree_control"), "+" + controller.name);
            Files.writeString(parent.resolve("cgroup.subtree_control"), "+" + controller.name);
        }
        Path cgroup = Files.createDirectories(parent.resolve(sandboxId));
        String value = controller == Controller.MEMORY ? Long.toString(limit * 1024L * 1024L) : Long.toString(limit);
        Files.writeString(cgroup.resolve(version == Version.V2 ? controller.v2LimitFile : controller.v1LimitFile), value);
        if (controller == Controller.MEMORY) {
            if (version == Version.V2) {
                writeIfPresent(cgroup.resolve("memory.swap.max"), "0");
            } else {
                // must follow memory.limit_in_bytes: the kernel requires memsw >= limit
                writeIfPresent(cgroup.resolve("memory.memsw.limit_in_bytes"), value);
            }
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
