package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * What identifies a running sandbox and how to enter it; persisted by core as
 * {@code InstanceState.data} and read back when the daemon adopts the sandbox.
 *
 * @param init the sandbox's PID-1 on the host
 * @param uid host uid its processes run as
 * @param gid host gid its processes run as
 * @param cgroup its memory cgroup, or null
 * @param pidsCgroup its pids cgroup, or null; the same directory as {@code cgroup} with cgroup v2
 * @param userNamespace whether it was made unprivileged, in its own user namespace
 * @param agentSocket the socket its guest agent listens on, inside the sandbox; null for a sandbox
 *        made by a procbox before the agent, whose keep-alive is {@code sleep} and which is entered with nsenter
 * @param freezerCgroup its cgroup v1 freezer cgroup ({@link Freezer}), or null (a v2 host freezes its
 *        limit cgroup; a sandbox made before pauses has none)
 * @param rootfs the root file system it runs on (a template's image, {@link ImageRootLayout}), or null
 *        for the host's {@code /usr} and {@code /etc}
 * @param privateMounts whether its workspace image and walk view are mounted in its own mount
 *        namespace only, reached through {@code /proc/PID/root} ({@link SandboxMounts}); false for a
 *        sandbox an earlier procbox mounted them for in the host's, and for one without either
 */
record ProcboxRecord(InitProcess init, int uid, int gid, Path cgroup, Path pidsCgroup, boolean userNamespace,
        Path agentSocket, Path freezerCgroup, Path rootfs, boolean privateMounts) {

    /** A sandbox whose mounts, if it has any, are the host's. */
    ProcboxRecord(InitProcess init, int uid, int gid, Path cgroup, Path pidsCgroup, boolean userNamespace,
            Path agentSocket, Path freezerCgroup, Path rootfs) {
        this(init, uid, gid, cgroup, pidsCgroup, userNamespace, agentSocket, freezerCgroup, rootfs, false);
    }

    /** A sandbox on the host's root. */
    ProcboxRecord(InitProcess init, int uid, int gid, Path cgroup, Path pidsCgroup, boolean userNamespace,
            Path agentSocket, Path freezerCgroup) {
        this(init, uid, gid, cgroup, pidsCgroup, userNamespace, agentSocket, freezerCgroup, null);
    }

    /** A sandbox without a freezer cgroup of its own. */
    ProcboxRecord(InitProcess init, int uid, int gid, Path cgroup, Path pidsCgroup, boolean userNamespace,
            Path agentSocket) {
        this(init, uid, gid, cgroup, pidsCgroup, userNamespace, agentSocket, null);
    }

    private static final String POOLED_FILE = "pooled-sandbox.properties";
    private static final String MOUNTS = "mounts";
    private static final String PRIVATE_MOUNTS = "sandbox";

    /** A sandbox without an agent, as procbox made them before it had one. */
    ProcboxRecord(InitProcess init, int uid, int gid, Path cgroup, Path pidsCgroup, boolean userNamespace) {
        this(init, uid, gid, cgroup, pidsCgroup, userNamespace, null);
    }

    /** The cgroups every process of the sandbox must join, each once. */
    List<Path> cgroups() {
        return cgroups(cgroup, pidsCgroup, freezerCgroup);
    }

    static List<Path> cgroups(Path cgroup, Path pidsCgroup, Path freezerCgroup) {
        return Stream.of(cgroup, pidsCgroup, freezerCgroup).filter(Objects::nonNull).distinct().toList();
    }

    Map<String, String> toData() {
        Map<String, String> data = new HashMap<>(Map.of(
                "pid", Long.toString(init.pid()),
                "starttime", init.startTime(),
                "uid", Integer.toString(uid),
                "gid", Integer.toString(gid),
                "cgroup", cgroup == null ? "" : cgroup.toString(),
                "pids_cgroup", pidsCgroup == null ? "" : pidsCgroup.toString(),
                "userns", Boolean.toString(userNamespace)));
        if (agentSocket != null) {
            data.put("agent", agentSocket.toString());
        }
        if (freezerCgroup != null) {
            data.put("freezer_cgroup", freezerCgroup.toString());
        }
        if (rootfs != null) {
            data.put("rootfs", rootfs.toString());
        }
        if (privateMounts) {
            data.put(MOUNTS, PRIVATE_MOUNTS);
        }
        return Map.copyOf(data);
    }

    /**
     * Writes this record into a pooled sandbox's directory, where a destroy finds it when core has
     * none yet (the daemon stopped between taking the sandbox and recording it). Not synced: it
     * guards against the daemon's death, not the host's, which takes the sandbox along.
     */
    void writePooled(Path dir) throws IOException {
        Properties properties = new Properties();
        properties.putAll(toData());
        Path partial = dir.resolve(POOLED_FILE + ".partial");
        try (Writer out = Files.newBufferedWriter(partial)) {
            properties.store(out, null);
        }
        Files.move(partial, dir.resolve(POOLED_FILE), StandardCopyOption.ATOMIC_MOVE);
    }

    /** The record {@link #writePooled} left in {@code dir}, if there is a readable one. */
    static Optional<ProcboxRecord> readPooled(Path dir) {
        Properties properties = new Properties();
        try (Reader in = Files.newBufferedReader(dir.resolve(POOLED_FILE))) {
            properties.load(in);
            Map<String, String> data = new HashMap<>();
            properties.stringPropertyNames().forEach(key -> data.put(key, properties.getProperty(key)));
            return Optional.of(fromData(data));
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /** Reads a record written by {@link #toData()}; throws IllegalArgumentException if it is not one. */
    static ProcboxRecord fromData(Map<String, String> data) {
        String cgroup = data.getOrDefault("cgroup", "");
        // absent from the records of sandboxes made before pids limits
        String pidsCgroup = data.getOrDefault("pids_cgroup", "");
        // absent from the records of sandboxes made before the agent (legacy: nsenter)
        String agent = data.getOrDefault("agent", "");
        // absent from the records of sandboxes made before pauses, and on a cgroup v2 host
        String freezer = data.getOrDefault("freezer_cgroup", "");
        // absent from the records of sandboxes on the host's root
        String rootfs = data.getOrDefault("rootfs", "");
        try {
            return new ProcboxRecord(
                    new InitProcess(Long.parseLong(required(data, "pid")), required(data, "starttime")),
                    Integer.parseInt(required(data, "uid")),
                    Integer.parseInt(required(data, "gid")),
                    cgroup.isEmpty() ? null : Path.of(cgroup),
                    pidsCgroup.isEmpty() ? null : Path.of(pidsCgroup),
                    Boolean.parseBoolean(data.get("userns")),
                    agent.isEmpty() ? null : Path.of(agent),
                    freezer.isEmpty() ? null : Path.of(freezer),
                    rootfs.isEmpty() ? null : Path.of(rootfs),
                    // absent from the records of sandboxes whose mounts are the host's
                    PRIVATE_MOUNTS.equals(data.get(MOUNTS)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a procbox instance state: " + data, e);
        }
    }

    private static String required(Map<String, String> data, String key) {
        String value = data.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("procbox instance state lacks " + key + ": " + data);
        }
        return value;
    }
}
