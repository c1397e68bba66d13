package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.kit.guest.ExecSpec;

/**
 * The root a template's VM runs on (docs/templates.md): its image as a read-only ext4 disk
 * ({@link RootDisks}), which the guest's {@code /init} finds by its serial and switches to, and the
 * user the image names, whom its commands run as and who owns {@code /work}. Kept in the VM's record,
 * so a boot in a new QEMU or a wake from the cold tier gets the same disk.
 *
 * @param disk the image's ext4 file on the host, shared by every VM of the image, never written
 * @param uid the image's user
 * @param gid the image user's group
 */
record VmRoot(Path disk, int uid, int gid) {

    static final String SERIAL = "vivarium-root";
    /** Whom an image that runs as root runs as instead: as on the backends that share the host's kernel, root never is. */
    static final int NOBODY = 65534;
    /** Where the guest's {@code /init} puts busybox and its applets on such a root (guest-agent/image/init). */
    static final String TOOLS = "/run/vivarium/bin";
    private static final String NODE = "root";
    private static final String DATA_DISK = "root_disk";
    private static final String DATA_UID = "root_uid";
    private static final String DATA_GID = "root_gid";

    /**
     * A script the backend runs in the guest as root ({@code sh -c SCRIPT NAME ARGS...}): with the
     * guest image's shell, or on a template image's {@code root} (which may have none) with the guest's
     * own busybox in {@link #TOOLS}, first on the {@code PATH}.
     */
    static ExecSpec script(VmRoot root, String script, String name, String... args) {
        List<String> argv = new ArrayList<>(List.of(root == null ? "/bin/sh" : TOOLS + "/sh", "-c", script, name));
        argv.addAll(List.of(args));
        return ExecSpec.of(argv.toArray(String[]::new))
                .withEnv(Map.of("PATH", (root == null ? "" : TOOLS + ":") + "/usr/sbin:/usr/bin:/sbin:/bin"));
    }

    /** QEMU's options for the disk: read-only down to the file, so no guest can write what others share. */
    List<String> qemuArgs() {
        return List.of("-blockdev", "driver=raw,node-name=" + NODE + ",read-only=on,file.driver=file,file.read-only=on,"
                        + "file.filename=" + QemuCommand.option(disk),
                "-device", "virtio-blk-pci,drive=" + NODE + ",serial=" + SERIAL);
    }

    /** What the kernel command line tells {@code /init}: the disk's serial, and who gets {@code /work}. */
    String cmdline() {
        return " vivarium.root=" + SERIAL + (uid == 0 && gid == 0 ? "" : " vivarium.user=" + uid + ":" + gid);
    }

    void putData(Map<String, String> data) {
        data.put(DATA_DISK, disk.toString());
        data.put(DATA_UID, Integer.toString(uid));
        data.put(DATA_GID, Integer.toString(gid));
    }

    /** The root a record names, or null for a VM on its guest image's own root (and one recorded before roots). */
    static VmRoot fromData(Map<String, String> data) {
        String disk = data.get(DATA_DISK);
        if (disk == null) {
            return null;
        }
        try {
            return new VmRoot(Path.of(disk), Integer.parseInt(data.get(DATA_UID)), Integer.parseInt(data.get(DATA_GID)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("qemu instance state has a root disk without its uid and gid: " + data, e);
        }
    }
}
