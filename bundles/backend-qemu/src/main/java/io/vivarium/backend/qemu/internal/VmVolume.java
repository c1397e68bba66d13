package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.api.spi.AttachedVolume;

/**
 * A volume that is a disk of a VM ({@link VmVolumes}): core's ext4 file, which the VM alone uses
 * while it lives. Its place in the VM's list numbers its disk's serial and where the guest mounts it.
 *
 * @param name the volume's name, for messages
 * @param image the volume's ext4 file on the host
 * @param mountPath where the guest sees it
 * @param subPath the directory of the volume seen there, relative, or null for its root
 * @param readOnly whether the guest may only read it (the disk is read-only too)
 */
record VmVolume(String name, Path image, String mountPath, String subPath, boolean readOnly) {

    private static final String PREFIX = "volume.";

    static List<VmVolume> of(List<AttachedVolume> attached) {
        return attached.stream().map(v -> {
            if (v.image() == null) {
                throw new IllegalArgumentException("volume " + v.name() + " came without its file: core attaches "
                        + "volumes as disks only for a backend that reports volume_disks");
            }
            return new VmVolume(v.name(), v.image(), v.mountPath(), v.subPath(), v.readOnly());
        }).toList();
    }

    /** The serial of the {@code index}th volume's disk, by which the guest finds it (at most 20 bytes). */
    static String serial(int index) {
        return "vivarium-vol" + index;
    }

    /** Where the guest mounts the {@code index}th volume's file system whole, before it binds {@link #mountPath}. */
    static String guestRoot(int index) {
        return "/run/vivarium/volumes/" + index;
    }

    /** Writes {@code volumes} into a VM's record ({@link VmRecord#toData()}). */
    static void putData(List<VmVolume> volumes, Map<String, String> data) {
        for (int i = 0; i < volumes.size(); i++) {
            VmVolume v = volumes.get(i);
            data.put(PREFIX + i + ".name", v.name());
            data.put(PREFIX + i + ".image", v.image().toString());
            data.put(PREFIX + i + ".mount_path", v.mountPath());
            if (v.subPath() != null) {
                data.put(PREFIX + i + ".sub_path", v.subPath());
            }
            data.put(PREFIX + i + ".read_only", Boolean.toString(v.readOnly()));
        }
    }

    /** Reads what {@link #putData} wrote (none in a record written before volumes). */
    static List<VmVolume> fromData(Map<String, String> data) {
        List<VmVolume> volumes = new ArrayList<>();
        for (int i = 0; data.containsKey(PREFIX + i + ".image"); i++) {
            String name = data.get(PREFIX + i + ".name");
            String mountPath = data.get(PREFIX + i + ".mount_path");
            if (name == null || mountPath == null) {
                throw new IllegalArgumentException("qemu instance state has volume " + i + " without its name or mount path");
            }
            volumes.add(new VmVolume(name, Path.of(data.get(PREFIX + i + ".image")), mountPath,
                    data.get(PREFIX + i + ".sub_path"), Boolean.parseBoolean(data.get(PREFIX + i + ".read_only"))));
        }
        return List.copyOf(volumes);
    }
}
