package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The one place the launch command line is built (IMAGE-CONTRACT). The workspace disk is a
 * {@code -blockdev} with the node-name {@value #DISK_NODE}, as snapshot-save and snapshot-load
 * need; a VM may have a second qcow2 node, {@value #VMSTATE_NODE}, which only its checkpoints use
 * ({@link VmCheckpoints}). A VM has a NIC on its tap only with an {@code egress} network
 * ({@link VmNetwork}), else none ({@code -nic none}). A guest that resets (a kernel panic with
 * {@code panic=-1}) makes QEMU shut down instead ({@code -no-reboot}); a guest that powers off
 * leaves QEMU stopped but running ({@code -no-shutdown}), so that the daemon sees it happen
 * whether or not it was watching; a panic the guest reports through pvpanic pauses it. The
 * console is appended to ({@code append=on}) so that {@link BoundedLog} can cut it while QEMU
 * writes; {@code -D} keeps QEMU's stderr after {@code -daemonize} (else /dev/null) in a file.
 *
 * <p>Guest RAM is a file ({@code memory-backend-file}): a booted VM's own {@link VmFiles#ram()},
 * mapped {@code share=on} so that a snapshot is a copy-on-write clone of the file; a child forked
 * from a snapshot maps the snapshot's file {@code share=off} (its writes are private pages, the
 * file and its page cache are shared by every child). A restored VM waits for its device state
 * ({@code -incoming defer}); a stream that holds device state only ({@link Incoming#DEVICES})
 * carries no configuration section, which the destination then must not expect.
 */
final class QemuCommand {

    static final String DISK_NODE = "work";
    /** The qcow2 that holds the RAM state of the checkpoints ({@link VmFiles#vmstate()}); no device sees it. */
    static final String VMSTATE_NODE = "vmstate";

    private QemuCommand() {
    }

    static final String MEMORY_ID = "mem";

    /** How a launched VM gets its state: booted, or restored from a stream of one of two kinds. */
    enum Incoming {
        /** Booted from the kernel. */
        BOOT,
        /** A migration stream (device state and the RAM blocks not in the memory file). */
        MIGRATION,
        /** Device state only ({@code xen-save-devices-state}): no RAM block, no configuration section. */
        DEVICES
    }

    /**
     * @param ram the guest's memory file
     * @param shared whether the VM's writes go to the file ({@code share=on}) or to private pages
     */
    record Memory(Path ram, boolean shared) {
    }

    static List<String> launch(Path qemu, Accelerator accelerator, GuestImage image, VmFiles files, int memoryMib,
            int vcpus) {
        return launch(qemu, accelerator, image, files, memoryMib, vcpus, new Memory(files.ram(), true), Incoming.BOOT,
                List.of(), null, null);
    }

    /**
     * @param volumes the VM's volumes, each a disk after its own ({@link VmVolumes#qemuArgs})
     * @param root the template image's root it runs on, a disk after the volumes, or null
     * @param network its network, or null for none
     */
    static List<String> launch(Path qemu, Accelerator accelerator, GuestImage image, VmFiles files, int memoryMib,
            int vcpus, Memory memory, Incoming incoming, List<VmVolume> volumes, VmRoot root, VmNetwork network) {
        List<String> argv = new ArrayList<>(List.of(qemu.toString(), "-nodefaults", "-no-user-config", "-nographic",
                "-M", "q35,memory-backend=" + MEMORY_ID,
                "-object", "memory-backend-file,id=" + MEMORY_ID + ",size=" + memoryMib + "M,mem-path="
                        + option(memory.ram()) + ",share=" + (memory.shared() ? "on" : "off")));
        argv.addAll(accelerator.args());
        argv.add("-kernel");
        argv.add(image.loader().orElse(image.kernel()).toString());
        argv.addAll(List.of(
                "-m", Integer.toString(memoryMib),
                "-smp", Integer.toString(vcpus),
                "-initrd", image.initramfs().toString(),
                "-append", root == null ? image.cmdline() : image.cmdline() + root.cmdline(),
                "-chardev", "file,id=console,append=on,path=" + option(files.console()),
                "-serial", "chardev:console",
                "-D", files.qemuLog().toString(),
                "-device", "virtio-serial-pci",
                "-chardev", "socket,path=" + option(files.agentSocket()) + ",server=on,wait=off,id=agent",
                "-device", "virtserialport,chardev=agent,name=" + GuestImage.AGENT_PORT,
                "-blockdev", "driver=qcow2,node-name=" + DISK_NODE + ",file.driver=file,file.filename="
                        + option(files.disk()),
                "-device", "virtio-blk-pci,drive=" + DISK_NODE));
        argv.addAll(VmVolumes.qemuArgs(volumes));
        if (root != null) {
            argv.addAll(root.qemuArgs());
        }
        argv.addAll(network == null ? List.of("-nic", "none") : network.qemuArgs());
        argv.addAll(List.of(
                "-qmp", "unix:" + option(files.qmpSocket()) + ",server=on,wait=off",
                "-device", "pvpanic",
                "-no-reboot",
                "-no-shutdown",
                "-action", "panic=pause",
                "-daemonize",
                "-pidfile", files.pidFile().toString()));
        if (files.vmstate() != null) {
            argv.addAll(List.of("-blockdev", "driver=qcow2,node-name=" + VMSTATE_NODE + ",file.driver=file,file.filename="
                    + option(files.vmstate())));
        }
        if (incoming == Incoming.DEVICES) {
            argv.addAll(List.of("-global", "migration.send-configuration=off"));
        }
        if (incoming != Incoming.BOOT) {
            argv.addAll(List.of("-incoming", "defer"));
        }
        return argv;
    }

    /** A path inside a QEMU option list, where a comma is written twice. */
    static String option(Path path) {
        return path.toString().replace(",", ",,");
    }
}
