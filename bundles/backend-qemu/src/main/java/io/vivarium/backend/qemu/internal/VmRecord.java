package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.Map;

/**
 * What identifies a running VM and how to reach it; persisted by core (atomically) as
 * {@code InstanceState.data} and read back when a daemon or a new bundle revision adopts it. The
 * sockets, disk and console are written out for operators and tools; they are derived from
 * {@code dir} and {@code link}.
 *
 * @param process the daemonized QEMU
 * @param files the VM's directory and the link its sockets are reached through
 * @param image the image directory it booted (its disk's backing file is there)
 * @param agent the image's agent, {@code vivarium} or {@code qemu-ga}
 */
record VmRecord(QemuProcess process, VmFiles files, Path image, String agent) {

    Map<String, String> toData() {
        return Map.of(
                "pid", Long.toString(process.pid()),
                "starttime", process.startTime(),
                "dir", files.dir().toString(),
                "link", files.link().toString(),
                "qmp", files.qmpSocket().toString(),
                "agent_socket", files.agentSocket().toString(),
                "disk", files.disk().toString(),
                "console", files.console().toString(),
                "image", image.toString(),
                "agent", agent);
    }

    /** Reads a record written by {@link #toData()}; throws IllegalArgumentException if it is not one. */
    static VmRecord fromData(Map<String, String> data) {
        try {
            return new VmRecord(new QemuProcess(Long.parseLong(required(data, "pid")), required(data, "starttime")),
                    new VmFiles(Path.of(required(data, "dir")), Path.of(required(data, "link"))),
                    Path.of(required(data, "image")), required(data, "agent"));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a qemu instance state: " + data, e);
        }
    }

    private static String required(Map<String, String> data, String key) {
        String value = data.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("qemu instance state lacks " + key + ": " + data);
        }
        return value;
    }
}
