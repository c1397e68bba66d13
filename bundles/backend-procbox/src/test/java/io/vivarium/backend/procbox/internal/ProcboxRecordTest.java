package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;

class ProcboxRecordTest {

    @Test
    void roundTripsThroughInstanceData() {
        ProcboxRecord withCgroup = new ProcboxRecord(new InitProcess(12, "345"), 65534, 65533,
                Path.of("/sys/fs/cgroup/memory/vivarium/x"), Path.of("/sys/fs/cgroup/pids/vivarium/x"), false);
        ProcboxRecord without = new ProcboxRecord(new InitProcess(12, "345"), 1000, 1000, null, null, true);

        assertEquals(withCgroup, ProcboxRecord.fromData(withCgroup.toData()));
        assertEquals(without, ProcboxRecord.fromData(without.toData()));
        assertEquals("", without.toData().get("cgroup"));
    }

    @Test
    void readsRecordsMadeBeforePidsLimits() {
        Map<String, String> old = new java.util.HashMap<>(new ProcboxRecord(new InitProcess(12, "345"), 1000, 1000,
                Path.of("/sys/fs/cgroup/memory/vivarium/x"), null, false).toData());
        old.remove("pids_cgroup");

        ProcboxRecord read = ProcboxRecord.fromData(old);
        assertEquals(null, read.pidsCgroup());
        assertEquals(java.util.List.of(Path.of("/sys/fs/cgroup/memory/vivarium/x")), read.cgroups());
    }

    @Test
    void recordsTheAgentsSocketAndReadsRecordsWithoutOneAsLegacy() {
        ProcboxRecord agent = new ProcboxRecord(new InitProcess(12, "345"), 65534, 65534, null, null, false,
                SandboxCommands.AGENT_SOCKET);
        assertEquals("/run/vivarium/agent.sock", agent.toData().get("agent"));
        assertEquals(agent, ProcboxRecord.fromData(agent.toData()));

        Map<String, String> legacy = new java.util.HashMap<>(agent.toData());
        legacy.remove("agent");
        assertEquals(null, ProcboxRecord.fromData(legacy).agentSocket(), "a sandbox made before the agent");
        assertFalse(new ProcboxRecord(new InitProcess(12, "345"), 1, 1, null, null, false).toData().containsKey("agent"));
    }

    @Test
    void rejectsForeignData() {
        assertThrows(IllegalArgumentException.class, () -> ProcboxRecord.fromData(Map.of("pid", "12")));
        assertThrows(IllegalArgumentException.class, () -> ProcboxRecord.fromData(
                Map.of("pid", "x", "starttime", "1", "uid", "1", "gid", "1")));
    }
}
