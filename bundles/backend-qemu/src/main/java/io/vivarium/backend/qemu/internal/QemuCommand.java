package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The one place the launch command line is built (IMAGE-CONTRACT). The workspace disk is a
 * {@code -blockdev} with the node-name {@value #DISK_NODE}, as snapshot-save and snapshot-load
 * need. There is no network ({@code -nic none}). A guest that resets (a kernel panic with
 * {@code panic=-1}) makes QEMU shut down instead ({@code -no-reboot}); a guest that powers off
 * leaves QEMU stopped but running ({@code -no-shutdown}), so that the daemon sees it happen
 * whether or not it was watching; a panic the guest reports through pvpanic pauses it. The
 * console is appended to ({@code append=on}) so that {@link BoundedLog} can cut it while QEMU
 * writes; {@code -D} keeps QEMU's stderr after {@code -daemonize} (else /dev/null) in a file.
 */
final class QemuCommand {

    static final String DISK_NODE = "work";

    private QemuCommand() {
    }

    static List<String> launch(Path qemu, Accelerator accelerator, GuestImage image, VmFiles files, int memoryMib,
            int vcpus) {
        List<String> argv = new ArrayList<>(List.of(qemu.toString(), "-nodefaults", "-no-user-config", "-nographic",
                "-M", "q35"));
        argv.addAll(accelerator.args());
        argv.addAll(List.of(
                "-m", Integer.toString(memoryMib),
                "-smp", Integer.toString(vcpus),
                "-kernel", image.kernel().toString(),
                "-initrd", image.initramfs().toString(),
                "-append", image.cmdline(),
                "-chardev", "file,id=console,append=on,path=" + option(files.console()),
                "-serial", "chardev:console",
                "-D", files.qemuLog().toString(),
                "-device", "virtio-serial-pci",
                "-chardev", "socket,path=" + option(files.agentSocket()) + ",server=on,wait=off,id=agent",
                "-device", "virtserialport,chardev=agent,name=" + GuestImage.AGENT_PORT,
                "-blockdev", "driver=qcow2,node-name=" + DISK_NODE + ",file.driver=file,file.filename="
                        + option(files.disk()),
                "-device", "virtio-blk-pci,drive=" + DISK_NODE,
                "-qmp", "unix:" + option(files.qmpSocket()) + ",server=on,wait=off",
                "-nic", "none",
                "-device", "pvpanic",
                "-no-reboot",
                "-no-shutdown",
                "-action", "panic=pause",
                "-daemonize",
                "-pidfile", files.pidFile().toString()));
        return argv;
    }

    /** A path inside a QEMU option list, where a comma is written twice. */
    private static String option(Path path) {
        return path.toString().replace(",", ",,");
    }
}
