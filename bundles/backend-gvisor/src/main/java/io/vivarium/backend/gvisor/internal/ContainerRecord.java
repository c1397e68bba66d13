package io.vivarium.backend.gvisor.internal;

import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.process.ProcessStarts;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * What identifies a running container and how to reach it; persisted by core as
 * {@code InstanceState.data} and read back when a daemon or a new bundle revision adopts it.
 *
 * @param containerId runsc's id of the container (the sandbox id and a nonce, so that a cgroup
 *        named after it never meets another daemon's)
 * @param sandboxPid the host pid of the container's sandbox (runsc's sentry)
 * @param startTime that process's start time, so that a pid taken by another process is not it
 * @param files the container's files and the link its agent is reached through
 * @param uid uid of the sandboxed processes
 * @param gid gid of the sandboxed processes
 * @param cold for a container saved for the cold tier ({@link GvisorHibernation}): the checkpoint it is
 *        started again from, the container itself ended; null for one that is not cold
 */
record ContainerRecord(String containerId, long sandboxPid, String startTime, ContainerFiles files, int uid, int gid,
        Path cold) {

    /** A container that is not cold. */
    ContainerRecord(String containerId, long sandboxPid, String startTime, ContainerFiles files, int uid, int gid) {
        this(containerId, sandboxPid, startTime, files, uid, gid, null);
    }

    /** This container saved cold to the checkpoint {@code image}. */
    ContainerRecord coldIn(Path image) {
        return new ContainerRecord(containerId, sandboxPid, startTime, files, uid, gid, image);
    }

    /** Whether the container's sandbox process is still the one recorded. Cheap: no runsc call. */
    boolean running() {
        return ProcessStarts.liveStartTime(sandboxPid).map(startTime::equals).orElse(false);
    }

    /**
     * This container as restored from a checkpoint (another runsc container, another sandbox process), recorded in
     * {@link ContainerFiles#sandboxProcess()} before it is returned, so that adoption finds it again
     * even when the daemon dies before core has persisted the restored instance's new state.
     */
    ContainerRecord restoredAs(ContainerRecord restored) throws IOException {
        AtomicFiles.write(files.sandboxProcess(), (restored.containerId() + " " + restored.sandboxPid() + " "
                + restored.startTime()).getBytes(StandardCharsets.UTF_8));
        return new ContainerRecord(restored.containerId(), restored.sandboxPid(), restored.startTime(), files, uid, gid);
    }

    /** This record with the container and sandbox process a restore recorded since it was written, if any. */
    ContainerRecord current() throws IOException {
        String recorded;
        try {
            recorded = Files.readString(files.sandboxProcess(), StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            return this;
        }
        String[] parts = recorded.split(" ", 3);
        try {
            return new ContainerRecord(parts[0], Long.parseLong(parts[1]), parts[2], files, uid, gid);
        } catch (RuntimeException e) {
            throw new IOException("unreadable " + files.sandboxProcess() + ": " + recorded, e);
        }
    }

    Map<String, String> toData() {
        Map<String, String> data = new HashMap<>(Map.of(
                "container_id", containerId,
                "pid", Long.toString(sandboxPid),
                "starttime", startTime,
                "dir", files.dir().toString(),
                "link", files.link().toString(),
                "agent_socket", files.agentSocket().toString(),
                "uid", Integer.toString(uid),
                "gid", Integer.toString(gid)));
        if (cold != null) {
            data.put("cold", cold.toString());
        }
        return data;
    }

    /** Reads a record written by {@link #toData()}; throws IllegalArgumentException if it is not one. */
    static ContainerRecord fromData(Map<String, String> data) {
        try {
            return new ContainerRecord(required(data, "container_id"), Long.parseLong(required(data, "pid")),
                    required(data, "starttime"),
                    new ContainerFiles(Path.of(required(data, "dir")), Path.of(required(data, "link"))),
                    Integer.parseInt(required(data, "uid")), Integer.parseInt(required(data, "gid")),
                    data.containsKey("cold") ? Path.of(required(data, "cold")) : null);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a gvisor instance state: " + data, e);
        }
    }

    private static String required(Map<String, String> data, String key) {
        String value = data.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("gvisor instance state lacks " + key + ": " + data);
        }
        return value;
    }
}
