package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * Pausing a sandbox with the cgroup freezer: every process of the sandbox, its agent too, stops
 * where it is and keeps its memory; the kernel keeps it so across daemons. On cgroup v2 the
 * sandbox's limit cgroup freezes ({@code cgroup.freeze}); on v1 each sandbox gets a cgroup of the
 * {@code freezer} hierarchy, which its processes join at launch ({@code freezer.state}).
 */
final class Freezer {
    private static final String GROUP = "vivarium";
    private static final String V2_FILE = "cgroup.freeze";
    private static final String V1_FILE = "freezer.state";
    /**
     * How long a freeze or thaw may take: a task in uninterruptible sleep (writeback under a loaded
     * host's I/O) stops only once it wakes, which took over 10 s once in CI.
     */
    private static final Duration SETTLE = Duration.ofSeconds(30);
    /** How often a v1 freeze still FREEZING is asked again, which signals the tasks not yet stopped once more. */
    private static final long NUDGE_NANOS = Duration.ofMillis(500).toNanos();

    /** The v1 freezer hierarchy, or null where the host has none (a v2 host freezes its limit cgroups). */
    private final Path v1Hierarchy;

    private Freezer(Path v1Hierarchy) {
        this.v1Hierarchy = v1Hierarchy;
    }

    /** Looks at the cgroup filesystems mounted at {@code root}; never fails. */
    static Freezer detect(Path root) {
        Path v1 = root.resolve("freezer");
        boolean usable = !Files.isRegularFile(root.resolve("cgroup.controllers"))
                && Files.isRegularFile(v1.resolve("cgroup.procs")) && Files.isWritable(v1);
        return new Freezer(usable ? v1 : null);
    }

    /** A v1 freezer cgroup for a sandbox about to launch, or empty where its limit cgroup freezes (v2) or nothing does. */
    Optional<Path> create(String sandboxId) throws IOException {
        if (v1Hierarchy == null) {
            return Optional.empty();
        }
        return Optional.of(Files.createDirectories(v1Hierarchy.resolve(GROUP).resolve(sandboxId)));
    }

    /** The freezer cgroup {@link #create} made for a sandbox, if it is there. */
    Optional<Path> existing(String sandboxId) {
        return Optional.ofNullable(v1Hierarchy).map(h -> h.resolve(GROUP).resolve(sandboxId)).filter(Files::isDirectory);
    }

    /** The cgroup that freezes {@code sandbox}: its v1 freezer cgroup, else a v2 cgroup of its own. */
    static Optional<Path> of(ProcboxRecord sandbox) {
        return sandbox.cgroups().stream()
                .filter(c -> Files.exists(c.resolve(V1_FILE)) || Files.exists(c.resolve(V2_FILE))).findFirst();
    }

    static boolean frozen(Path cgroup) {
        try {
            return Files.exists(cgroup.resolve(V2_FILE)) ? Files.readString(cgroup.resolve(V2_FILE)).strip().equals("1")
                    : !Files.readString(cgroup.resolve(V1_FILE)).strip().equals("THAWED");
        } catch (IOException e) {
            return false;
        }
    }

    /** Freezes or thaws every process of {@code cgroup}, and waits until the kernel says it is done. */
    static void set(Path cgroup, boolean frozen) throws IOException {
        boolean v2 = Files.exists(cgroup.resolve(V2_FILE));
        if (v2) {
            Files.writeString(cgroup.resolve(V2_FILE), frozen ? "1" : "0");
        } else {
            Files.writeString(cgroup.resolve(V1_FILE), frozen ? "FROZEN" : "THAWED");
        }
        long deadline = System.nanoTime() + SETTLE.toNanos();
        long nudge = System.nanoTime() + NUDGE_NANOS;
        while (!settled(cgroup, v2, frozen)) {
            if (!v2 && frozen && System.nanoTime() > nudge) {
                Files.writeString(cgroup.resolve(V1_FILE), "FROZEN");
                nudge = System.nanoTime() + NUDGE_NANOS;
            }
            if (System.nanoTime() > deadline || !Sleep.briefly(2)) {
                if (frozen) {
                    // a freeze that does not settle is undone, so the sandbox is not left half frozen
                    Files.writeString(cgroup.resolve(v2 ? V2_FILE : V1_FILE), v2 ? "0" : "THAWED");
                }
                throw new IOException("the cgroup " + cgroup + " did not " + (frozen ? "freeze" : "thaw") + " within "
                        + SETTLE.toSeconds() + " s");
            }
        }
    }

    private static boolean settled(Path cgroup, boolean v2, boolean frozen) throws IOException {
        if (v2) {
            return Files.readString(cgroup.resolve("cgroup.events")).contains("frozen " + (frozen ? 1 : 0));
        }
        // v1 says FREEZING until every task has stopped
        return Files.readString(cgroup.resolve(V1_FILE)).strip().equals(frozen ? "FROZEN" : "THAWED");
    }
}
