package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.vivarium.api.NetworkPolicy;

import org.junit.jupiter.api.Test;

class VmRecordTest {

    private static final VmRecord RECORD = new VmRecord(new QemuProcess(4242, "987654"),
            new VmFiles(Path.of("/state/sandboxes/x"), Path.of("/tmp/vivarium-qemu/x"),
                    Path.of("/dev/shm/vivarium-qemu-root/x.vmstate.qcow2"), Path.of("/dev/shm/vivarium-qemu-root/x.memory.ram")),
            Path.of("/img/default-01"),
            "vivarium", new VmRecord.Memory(256, 1, null, null));
    private static final VmRecord CHILD = new VmRecord(new QemuProcess(4243, "987655"),
            new VmFiles(Path.of("/state/sandboxes/y"), Path.of("/tmp/vivarium-qemu/y")), Path.of("/img/default-01"),
            "vivarium", new VmRecord.Memory(256, 2, Path.of("/state/snapshots/t/s/image/memory.ram"),
                    Path.of("/state/snapshots/t/s/image")));
    private static final VmRecord BEFORE_RAM_FILES = new VmRecord(new QemuProcess(4244, "987656"),
            new VmFiles(Path.of("/state/sandboxes/z"), Path.of("/tmp/vivarium-qemu/z")), Path.of("/img/default-01"),
            "vivarium", null);

    private static final VmRecord WITH_VOLUMES = new VmRecord(new QemuProcess(4245, "987657"),
            new VmFiles(Path.of("/state/sandboxes/v"), Path.of("/tmp/vivarium-qemu/v")), Path.of("/img/default-01"),
            "vivarium", new VmRecord.Memory(256, 1, null, null),
            List.of(new VmVolume("data", Path.of("/state/volumes/t~data.ext4"), "/data", "a/b", false),
                    new VmVolume("ref", Path.of("/state/volumes/t~ref.ext4"), "/work/ref", null, true)), null, null);
    private static final VmRecord ON_AN_IMAGE_ROOT = new VmRecord(new QemuProcess(4246, "987658"),
            new VmFiles(Path.of("/state/sandboxes/r"), Path.of("/tmp/vivarium-qemu/r")), Path.of("/img/default-01"),
            "vivarium", new VmRecord.Memory(256, 1, null, null), List.of(),
            new VmRoot(Path.of("/state/images/oci/sha256-ab/derived/qemu-root.ext4"), 1000, 1001), null);
    private static final VmRecord WITH_A_NETWORK = new VmRecord(new QemuProcess(4247, "987659"),
            new VmFiles(Path.of("/state/sandboxes/n"), Path.of("/tmp/vivarium-qemu/n")), Path.of("/img/default-01"),
            "vivarium", new VmRecord.Memory(256, 1, null, null), List.of(), null,
            new VmNetwork("n", new NetworkPolicy(NetworkPolicy.EGRESS, List.of("198.51.100.0/24", "203.0.113.7/32:443"),
                    List.of("198.51.100.9/32")), "192.0.2.53"));

    @Test
    void roundTripsThroughTheInstanceState() {
        assertEquals(WITH_VOLUMES, VmRecord.fromData(WITH_VOLUMES.toData()));
        assertEquals(WITH_A_NETWORK, VmRecord.fromData(WITH_A_NETWORK.toData()));
        assertEquals(WITH_A_NETWORK.network(), VmRecord.fromData(WITH_A_NETWORK.coldIn(Path.of("/s")).toData()).network(),
                "a cold VM keeps its policy, to make its tap again after a reboot of the host");
        assertNull(RECORD.network(), "a VM of mode none, or recorded before VMs had networks");
        assertEquals(ON_AN_IMAGE_ROOT, VmRecord.fromData(ON_AN_IMAGE_ROOT.toData()));
        assertNull(RECORD.root(), "a VM on its guest image's root, or recorded before template roots");
        assertEquals(ON_AN_IMAGE_ROOT.root(), VmRecord.fromData(ON_AN_IMAGE_ROOT.coldIn(Path.of("/s")).toData()).root(),
                "a cold VM wakes on the same root");
        assertEquals(List.of(), RECORD.volumes(), "a VM without volumes, or recorded before them");
        assertEquals(RECORD, VmRecord.fromData(RECORD.toData()));
        assertEquals(CHILD, VmRecord.fromData(CHILD.toData()));
        assertEquals(BEFORE_RAM_FILES, VmRecord.fromData(BEFORE_RAM_FILES.toData()));
    }

    @Test
    void aBootedVmWritesItsOwnRamFileAndAChildMapsItsSnapshots() {
        assertEquals("/dev/shm/vivarium-qemu-root/x.memory.ram", RECORD.toData().get("ram"), "in memory, beside vmstate");
        assertEquals("/dev/shm/vivarium-qemu-root/x.memory.ram", RECORD.toData().get("memory_ram"));
        assertEquals("/state/sandboxes/z/memory.ram", new VmFiles(Path.of("/state/sandboxes/z"),
                Path.of("/tmp/vivarium-qemu/z")).ram().toString(), "a VM started before that has it in its directory");
        assertEquals("/state/snapshots/t/s/image/memory.ram", CHILD.toData().get("ram"));
        assertEquals("/state/snapshots/t/s/image", CHILD.toData().get("snapshot"));
    }

    @Test
    void namesWhatAdoptionAndOperatorsNeed() {
        Map<String, String> data = RECORD.toData();
        assertEquals("4242", data.get("pid"));
        assertEquals("987654", data.get("starttime"));
        assertEquals("/tmp/vivarium-qemu/x/qmp.sock", data.get("qmp"));
        assertEquals("/tmp/vivarium-qemu/x/agent.sock", data.get("agent_socket"));
        assertEquals("/state/sandboxes/x/disk.qcow2", data.get("disk"));
        assertEquals("/state/sandboxes/x/console.log", data.get("console"));
        assertEquals("/img/default-01", data.get("image"));
        assertEquals("/dev/shm/vivarium-qemu-root/x.vmstate.qcow2", data.get("vmstate"));
        assertNull(CHILD.toData().get("vmstate"), "a VM started without the RAM-state file has none");
    }

    @Test
    void aStateWithoutAPidIsNotARecord() {
        Map<String, String> data = new HashMap<>(RECORD.toData());
        data.remove("pid");
        assertThrows(IllegalArgumentException.class, () -> VmRecord.fromData(data));
        data.put("pid", "x");
        assertThrows(IllegalArgumentException.class, () -> VmRecord.fromData(data));
    }
}
