package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;

import io.vivarium.api.NetworkPolicy;
import io.vivarium.common.net.SandboxNetworks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class QemuCommandTest {

    private static final Accelerator TCG = new Accelerator("tcg", List.of("-accel", "tcg", "-cpu", "max"), "tcg");
    private static final GuestImage IMAGE = new GuestImage(Path.of("/img/default-0123"), "console=ttyS0 panic=-1",
            "vivarium");
    private static final VmFiles FILES = new VmFiles(Path.of("/state/sandboxes/a,b"), Path.of("/tmp/vq/a,b"));

    private static List<String> argv() {
        return QemuCommand.launch(Path.of("/usr/bin/qemu-system-x86_64"), TCG, IMAGE, FILES, 256, 2);
    }

    private static String after(List<String> argv, String option) {
        int at = argv.indexOf(option);
        assertTrue(at >= 0 && at + 1 < argv.size(), option + " is in " + argv);
        return argv.get(at + 1);
    }

    @Test
    void bootsTheImageWithTheContractsOptionsAndNoNetwork() {
        List<String> argv = argv();
        assertEquals("/usr/bin/qemu-system-x86_64", argv.get(0));
        assertEquals("q35,memory-backend=mem", after(argv, "-M"));
        assertEquals("tcg", after(argv, "-accel"));
        assertEquals("max", after(argv, "-cpu"));
        assertEquals("256", after(argv, "-m"));
        assertEquals("2", after(argv, "-smp"));
        assertEquals("/img/default-0123/kernel", after(argv, "-kernel"));
        assertEquals("/img/default-0123/initramfs.cpio.gz", after(argv, "-initrd"));
        assertEquals("console=ttyS0 panic=-1", after(argv, "-append"));
        assertEquals("none", after(argv, "-nic"));
        assertTrue(argv.containsAll(List.of("-nodefaults", "-no-user-config", "-daemonize", "-no-reboot")), argv.toString());
        assertEquals(1, Collections.frequency(argv, "-nic"), "no other network option: " + argv);
    }

    @Test
    void eachVolumeIsARawDiskWithItsSerialReadOnlyWhereAsked() {
        List<String> argv = QemuCommand.launch(Path.of("/q"), TCG, IMAGE, FILES, 256, 1,
                new QemuCommand.Memory(FILES.ram(), true), QemuCommand.Incoming.BOOT,
                List.of(new VmVolume("data", Path.of("/state/volumes/t~d,1.ext4"), "/data", null, false),
                        new VmVolume("ref", Path.of("/state/volumes/t~ref.ext4"), "/ref", "sub", true)), null, null);
        assertTrue(argv.contains("driver=raw,node-name=vol0,read-only=off,file.driver=file,file.read-only=off,"
                + "file.filename=/state/volumes/t~d,,1.ext4"), "a comma in the file's path is doubled: " + argv);
        assertTrue(argv.contains("virtio-blk-pci,drive=vol0,serial=vivarium-vol0"), argv.toString());
        assertTrue(argv.contains("driver=raw,node-name=vol1,read-only=on,file.driver=file,file.read-only=on,"
                + "file.filename=/state/volumes/t~ref.ext4"), argv.toString());
        assertTrue(argv.contains("virtio-blk-pci,drive=vol1,serial=vivarium-vol1"), argv.toString());
        assertTrue(argv.indexOf("virtio-blk-pci,drive=" + QemuCommand.DISK_NODE) < argv.indexOf(
                "virtio-blk-pci,drive=vol0,serial=vivarium-vol0"), "the VM's own disk stays the first, /dev/vda");
        assertFalse(argv().stream().anyMatch(a -> a.contains("vivarium-vol")), "no volume, no disk of one");
    }

    @Test
    void anImageWithThePvhLoaderBootsTheLoaderAndQemuHoldsNoKernel(@TempDir Path dir) throws Exception {
        Path image = Files.createDirectories(dir.resolve("default-4567"));
        Files.write(image.resolve(GuestImage.LOADER), new byte[] {0x7f, 'E', 'L', 'F'});
        GuestImage withLoader = new GuestImage(image, "console=ttyS0", "vivarium");
        List<String> boot = QemuCommand.launch(Path.of("/usr/bin/qemu-system-x86_64"), TCG, withLoader, FILES, 256, 1);
        List<String> child = QemuCommand.launch(Path.of("/usr/bin/qemu-system-x86_64"), TCG, withLoader, FILES, 256, 1,
                new QemuCommand.Memory(Path.of("/state/snap/memory.ram"), false), QemuCommand.Incoming.MIGRATION,
                List.of(), null, null);

        for (List<String> argv : List.of(boot, child)) {
            assertEquals(image.resolve("pvh-loader-ram").toString(), after(argv, "-kernel"));
            assertEquals(1, Collections.frequency(argv, "-kernel"), argv.toString());
            assertFalse(argv.stream().anyMatch(a -> a.contains("/kernel")), "the vmlinux reaches QEMU no other way: " + argv);
        }
    }

    @Test
    void theCheckpointsRamStateIsASecondNodeWithoutADevice() {
        VmFiles files = new VmFiles(Path.of("/state/sandboxes/a"), Path.of("/tmp/vq/a"), Path.of("/dev/shm/v/a,b.vmstate.qcow2"),
                Path.of("/dev/shm/v/a.memory.ram"));
        List<String> argv = QemuCommand.launch(Path.of("/usr/bin/qemu-system-x86_64"), TCG, IMAGE, files, 256, 2);
        int last = argv.lastIndexOf("-blockdev");
        assertEquals("driver=qcow2,node-name=vmstate,file.driver=file,file.filename=/dev/shm/v/a,,b.vmstate.qcow2",
                argv.get(last + 1));
        assertEquals(2, Collections.frequency(argv, "-blockdev"), argv.toString());
        assertEquals(1, argv.stream().filter(a -> a.startsWith("virtio-blk")).count(), "no device sees it: " + argv);
        assertEquals(1, Collections.frequency(argv(), "-blockdev"), "a VM without the file has no such node");
    }

    @Test
    void theDiskIsABlockdevWithANodeNameAndCommasInPathsAreDoubled() {
        List<String> argv = argv();
        assertEquals("driver=qcow2,node-name=work,file.driver=file,file.filename=/state/sandboxes/a,,b/disk.qcow2",
                after(argv, "-blockdev"));
        assertTrue(argv.contains("virtio-blk-pci,drive=work"), argv.toString());
        assertTrue(argv.contains("socket,path=/tmp/vq/a,,b/agent.sock,server=on,wait=off,id=agent"), argv.toString());
        assertEquals("unix:/tmp/vq/a,,b/qmp.sock,server=on,wait=off", after(argv, "-qmp"));
        assertTrue(argv.contains("virtserialport,chardev=agent,name=org.qemu.guest_agent.0"), argv.toString());
    }

    @Test
    void theConsoleIsAppendedToAndQemusOwnOutputIsKept() {
        List<String> argv = argv();
        // append=on: BoundedLog cuts the file while QEMU writes to it
        assertTrue(argv.contains("file,id=console,append=on,path=/state/sandboxes/a,,b/console.log"), argv.toString());
        assertEquals("chardev:console", after(argv, "-serial"));
        assertEquals("/state/sandboxes/a,b/qemu.log", after(argv, "-D"));
    }

    @Test
    void guestRamIsAFileInTheVmsDirectoryWrittenByTheVm() {
        List<String> argv = argv();
        assertEquals("memory-backend-file,id=mem,size=256M,mem-path=/state/sandboxes/a,,b/memory.ram,share=on",
                after(argv, "-object"));
        assertTrue(!argv.contains("-incoming"), argv.toString());
    }

    @Test
    void aTemplatesRootIsAReadOnlyDiskAfterTheVolumesThatTheCommandLineNames() {
        VmRoot root = new VmRoot(Path.of("/state/images/oci/sha256-ab/derived/qemu-root.ext4"), 1000, 1001);
        List<String> argv = QemuCommand.launch(Path.of("/q"), TCG, IMAGE, FILES, 256, 1,
                new QemuCommand.Memory(FILES.ram(), true), QemuCommand.Incoming.BOOT,
                List.of(new VmVolume("data", Path.of("/state/volumes/t~d.ext4"), "/data", null, false)), root, null);
        int disk = argv.indexOf("driver=raw,node-name=root,read-only=on,file.driver=file,file.read-only=on,"
                + "file.filename=/state/images/oci/sha256-ab/derived/qemu-root.ext4");
        assertTrue(disk > argv.indexOf("virtio-blk-pci,drive=vol0,serial=vivarium-vol0"), "after the workspace and volumes, "
                + "so /dev/vda stays the workspace: " + argv);
        assertEquals("virtio-blk-pci,drive=root,serial=vivarium-root", argv.get(disk + 2));
        assertEquals(IMAGE.cmdline() + " vivarium.root=vivarium-root vivarium.user=1000:1001", after(argv, "-append"));
        assertEquals(IMAGE.cmdline() + " vivarium.root=vivarium-root", after(QemuCommand.launch(Path.of("/q"), TCG, IMAGE,
                FILES, 256, 1, new QemuCommand.Memory(FILES.ram(), true), QemuCommand.Incoming.BOOT, List.of(),
                new VmRoot(root.disk(), 0, 0), null), "-append"), "an image whose user is root leaves /work as it is");
    }

    @Test
    void aChildMapsItsSnapshotsRamPrivatelyAndWaitsForItsDeviceState() {
        List<String> migration = QemuCommand.launch(Path.of("/q"), TCG, IMAGE, FILES, 256, 1,
                new QemuCommand.Memory(Path.of("/snap/memory.ram"), false), QemuCommand.Incoming.MIGRATION, List.of(), null, null);
        assertEquals("memory-backend-file,id=mem,size=256M,mem-path=/snap/memory.ram,share=off",
                after(migration, "-object"));
        assertEquals("defer", after(migration, "-incoming"));
        assertTrue(!migration.contains("migration.send-configuration=off"), migration.toString());
        List<String> devices = QemuCommand.launch(Path.of("/q"), TCG, IMAGE, FILES, 256, 1,
                new QemuCommand.Memory(Path.of("/snap/memory.ram"), false), QemuCommand.Incoming.DEVICES, List.of(), null, null);
        assertEquals("migration.send-configuration=off", after(devices, "-global"));
        assertEquals("defer", after(devices, "-incoming"));
    }

    @Test
    void anEgressVmHasAVirtioNicOnItsTapAndNoOther() {
        VmNetwork network = new VmNetwork("sb-1", new NetworkPolicy(NetworkPolicy.EGRESS, List.of("198.51.100.0/24"),
                List.of()), "192.0.2.53");
        List<String> argv = QemuCommand.launch(Path.of("/q"), TCG, IMAGE, FILES, 256, 1,
                new QemuCommand.Memory(FILES.ram(), true), QemuCommand.Incoming.BOOT, List.of(), null, network);
        assertEquals("tap,id=net0,ifname=" + SandboxNetworks.interfaceOf("sb-1") + ",script=no,downscript=no,vhost=off",
                after(argv, "-netdev"), "the tap the host made, never a script of QEMU's");
        assertTrue(argv.contains("virtio-net-pci,netdev=net0,mac=" + VmNetwork.MAC), argv.toString());
        assertTrue(!argv.contains("-nic"), "no -nic none beside it: " + argv);
    }
}
