package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
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
 * @param memory its RAM's size and file, or null for a VM started before guest RAM was a file
 * @param volumes the volumes that are disks of it ({@link VmVolumes}), in the order of their serials
 * @param root the template image's root it runs on ({@link VmRoot}), or null for its guest image's own
 * @param network its {@code egress} network ({@link VmNetwork}), or null for none
 * @param cold for a VM in the cold tier ({@link QemuHibernation}): the migration stream its whole
 *        state was saved to, from which it is started again; {@code process} is then the QEMU it
 *        was saved from, which no longer runs; null for a VM that is not cold
 */
record VmRecord(QemuProcess process, VmFiles files, Path image, String agent, Memory memory, List<VmVolume> volumes,
        VmRoot root, VmNetwork network, Path cold) {

    VmRecord {
        volumes = volumes == null ? List.of() : List.copyOf(volumes);
    }

    /** A VM that is not cold. */
    VmRecord(QemuProcess process, VmFiles files, Path image, String agent, Memory memory, List<VmVolume> volumes,
            VmRoot root, VmNetwork network) {
        this(process, files, image, agent, memory, volumes, root, network, null);
    }

    /** A VM on its guest image's root without volumes. */
    VmRecord(QemuProcess process, VmFiles files, Path image, String agent, Memory memory) {
        this(process, files, image, agent, memory, null, null, null, null);
    }

    /** This VM saved cold to {@code stream}. */
    VmRecord coldIn(Path stream) {
        return new VmRecord(process, files, image, agent, memory, volumes, root, network, stream);
    }

    /**
     * @param mib guest RAM
     * @param vcpus virtual CPUs
     * @param base for a child forked from a snapshot: the file its RAM maps {@code share=off}; null
     *        when the VM writes its own {@link VmFiles#ram()} ({@code share=on})
     * @param snapshot for a child: the image directory it was forked from, else null
     */
    record Memory(int mib, int vcpus, Path base, Path snapshot) {

        boolean shared() {
            return base == null;
        }
    }

    Map<String, String> toData() {
        Map<String, String> data = new LinkedHashMap<>(Map.of(
                "pid", Long.toString(process.pid()),
                "starttime", process.startTime(),
                "dir", files.dir().toString(),
                "link", files.link().toString(),
                "qmp", files.qmpSocket().toString(),
                "agent_socket", files.agentSocket().toString(),
                "disk", files.disk().toString(),
                "console", files.console().toString(),
                "image", image.toString(),
                "agent", agent));
        if (files.vmstate() != null) {
            data.put("vmstate", files.vmstate().toString());
        }
        if (files.ramInMemory()) {
            data.put("memory_ram", files.ram().toString());
        }
        if (memory != null) {
            data.put("memory_mib", Integer.toString(memory.mib()));
            data.put("vcpus", Integer.toString(memory.vcpus()));
            data.put("ram", memory.shared() ? files.ram().toString() : memory.base().toString());
            if (!memory.shared()) {
                data.put("ram_base", memory.base().toString());
                data.put("snapshot", memory.snapshot().toString());
            }
        }
        VmVolume.putData(volumes, data);
        if (root != null) {
            root.putData(data);
        }
        if (network != null) {
            network.putData(data);
        }
        if (cold != null) {
            data.put("cold", cold.toString());
        }
        return data;
    }

    /** Reads a record written by {@link #toData()}; throws IllegalArgumentException if it is not one. */
    static VmRecord fromData(Map<String, String> data) {
        try {
            Memory memory = null;
            if (data.containsKey("memory_mib")) {
                String base = data.get("ram_base");
                memory = new Memory(Integer.parseInt(required(data, "memory_mib")), Integer.parseInt(required(data, "vcpus")),
                        base == null ? null : Path.of(base), base == null ? null : Path.of(required(data, "snapshot")));
            }
            return new VmRecord(new QemuProcess(Long.parseLong(required(data, "pid")), required(data, "starttime")),
                    new VmFiles(Path.of(required(data, "dir")), Path.of(required(data, "link")),
                            data.containsKey("vmstate") ? Path.of(required(data, "vmstate")) : null,
                            data.containsKey("memory_ram") ? Path.of(required(data, "memory_ram")) : null),
                    Path.of(required(data, "image")), required(data, "agent"), memory, VmVolume.fromData(data),
                    VmRoot.fromData(data), VmNetwork.fromData(data), data.containsKey("cold") ? Path.of(required(data, "cold")) : null);
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
